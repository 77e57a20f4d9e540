//! `pflow-host run` of the three-node shell example as a whole process, with a warm
//! compiled-component cache. Prints the median wall time (the target: <= 30 ms).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 50;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let plugins = root.join("target/plugins");
    assert!(
        plugins.join("shell.wasm").exists(),
        "run `just plugins` before this benchmark"
    );
    let home = tempfile::tempdir().expect("temp dir");
    let example = root.join("examples/word-count.json");
    let run = || {
        let status = Command::new(env!("CARGO_BIN_EXE_pflow-host"))
            .arg("run")
            .arg(&example)
            .env("PFLOW_HOME", home.path())
            .env("PFLOW_BUILTIN_PLUGINS", &plugins)
            .env_remove("PFLOW_PLUGIN_PATH")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("pflow-host starts");
        assert!(status.success(), "the example workflow failed");
    };
    // The first run compiles the shell component into the cache.
    run();
    let mut samples: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .collect();
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "run_example: pflow-host run examples/word-count.json (3 shell nodes, warm cache): \
         median {:.1} ms (min {:.1} ms, max {:.1} ms, n = {RUNS}); target <= 30 ms",
        ms(samples[RUNS / 2]),
        ms(samples[0]),
        ms(samples[RUNS - 1]),
    );
}
