//! pflow-host against pflow 0.16 (from PyPI, installed by `just test-peers`), whole processes
//! end to end on the same `.pflow.md` files:
//! - the 8-item parallel batch of `sleep 0.2` (target: at least 4x faster);
//! - the differential corpus (`tests/differential/`), every case once, run whole.

#[path = "../../../tests/common/httpbin.rs"]
mod httpbin;

use httpbin::Httpbin;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BATCH_RUNS: usize = 7;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let pflow = std::env::var_os("PFLOW_REFERENCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/pflow-venv/bin/pflow"));
    assert!(
        pflow.exists(),
        "run `just test-peers` to install pflow 0.16"
    );
    let plugins = root.join("target/plugins");
    assert!(
        plugins.join("shell.wasm").exists(),
        "run `just plugins` first"
    );
    let home = tempfile::tempdir().unwrap();
    let ours = |workflow: &Path, args: &[String]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pflow-host"));
        command
            .arg("run")
            .arg(workflow)
            .args(args)
            .arg("--no-repair")
            .env("PFLOW_HOME", home.path())
            .env("PFLOW_BUILTIN_PLUGINS", &plugins)
            .env_remove("PFLOW_PLUGIN_PATH");
        command
    };
    let theirs = |workflow: &Path, args: &[String]| {
        let mut command = Command::new(&pflow);
        command.arg(workflow).args(args).env("HOME", home.path());
        command
    };
    let time = |mut command: Command| {
        let started = Instant::now();
        command
            .current_dir(home.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .stdin(Stdio::null())
            .status()
            .expect("the tool starts");
        started.elapsed()
    };

    let batch = root.join("host/cli/benches/workflows/parallel-batch.pflow.md");
    // Warm: our compiled-component cache, pflow's bytecode.
    time(ours(&batch, &[]));
    time(theirs(&batch, &[]));
    let mut our_samples = Vec::new();
    let mut their_samples = Vec::new();
    for _ in 0..BATCH_RUNS {
        our_samples.push(time(ours(&batch, &[])));
        their_samples.push(time(theirs(&batch, &[])));
    }
    let (our_ms, their_ms) = (median_ms(our_samples), median_ms(their_samples));
    println!(
        "vs_pflow: 8-item parallel batch of `sleep 0.2`, end to end: pflow-host {our_ms:.0} ms, \
         pflow 0.16 {their_ms:.0} ms: {:.1}x faster (median of {BATCH_RUNS}); target >= 4x",
        their_ms / our_ms
    );

    let httpbin = Httpbin::start();
    let corpus = root.join("tests/differential");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".pflow.md"))
        .collect();
    cases.sort();
    let args_of = |case: &Path| -> Vec<String> {
        let args = case.to_string_lossy().replace(".pflow.md", ".args");
        std::fs::read_to_string(args)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.replace("{base}", &httpbin.base))
            .collect()
    };
    let (mut our_total, mut their_total) = (Duration::ZERO, Duration::ZERO);
    for case in &cases {
        let args = args_of(case);
        our_total += time(ours(case, &args));
        their_total += time(theirs(case, &args));
    }
    println!(
        "vs_pflow: the differential corpus ({} workflows, each once, end to end): pflow-host \
         {:.2} s, pflow 0.16 {:.2} s: {:.1}x faster",
        cases.len(),
        our_total.as_secs_f64(),
        their_total.as_secs_f64(),
        their_total.as_secs_f64() / our_total.as_secs_f64()
    );
}

fn median_ms(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e3
}
