//! Warm executions of nodes written in Python: the example node `text-stats` (built from
//! plugins/examples/python/text-stats with `pflow-host plugin build`'s path) and the built-in
//! `code` node running `result = sum(data)` over 1,000 ints. "Warm" means the compiled component
//! is cached and prepared; each execution is still a fresh instance (new Store, instantiate from
//! the pre-initialised snapshot, `run`, drop). Prints the medians (targets: <= 5 ms and
//! <= 10 ms), and the cold first compile of each component.

use pflow_runtime::capabilities::Grants;
use pflow_runtime::registry::{Origin, PluginDir, Registry};
use pflow_runtime::sandbox::Execution;
use pflow_runtime::{Limits, Sandbox};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const WARMUP: usize = 20;
const ITERATIONS: usize = 300;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scratch = tempfile::tempdir().expect("temp dir");
    let toolchains = pflow_plugin_dev::Toolchains::from_env_or(&root.join("target"));
    let built = pflow_plugin_dev::build(
        &root.join("plugins/examples/python/text-stats"),
        &toolchains,
        &|message| eprintln!("  {message}"),
    )
    .expect("the Python example builds");
    let plugins = scratch.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::write(plugins.join("text-stats.wasm"), &built.bytes).expect("write");
    let code = root.join("target/plugins/code.wasm");
    assert!(code.exists(), "run `just plugins` before this benchmark");
    std::fs::copy(&code, plugins.join("code.wasm")).expect("copy code.wasm");

    let sandbox = Sandbox::new().expect("engine");
    let cache = scratch.path().join("cache");
    let started = Instant::now();
    let registry = load(&sandbox, &plugins, &cache);
    // Both components compiled (and described) from nothing: the cold cost, paid once.
    let cold = started.elapsed();
    for name in ["text-stats", "code"] {
        let started = Instant::now();
        let plugin = registry.get(name).expect("loaded");
        plugin.prepared(&sandbox).expect("prepares");
        eprintln!("  {name}: prepared in {:.1} ms", ms(started.elapsed()));
    }
    println!(
        "language_nodes: cold compile of text-stats ({:.1} MB) and code ({:.1} MB): {:.1} s together",
        mb(&plugins.join("text-stats.wasm")),
        mb(&plugins.join("code.wasm")),
        cold.as_secs_f64()
    );
    // A second registry over the same cache: what a later `pflow-host` process pays.
    let started = Instant::now();
    let registry = load(&sandbox, &plugins, &cache);
    for name in ["text-stats", "code"] {
        registry
            .get(name)
            .unwrap()
            .prepared(&sandbox)
            .expect("prepares");
    }
    println!(
        "language_nodes: later load from the compiled cache (both): {:.1} ms",
        ms(started.elapsed())
    );

    let text = "the quick brown fox jumps over the lazy dog and the cat ".repeat(20);
    let median = warm_median(
        &sandbox,
        &registry,
        "text-stats",
        json!({"text": text, "top": 3}),
    );
    println!(
        "language_nodes: Python example node (text-stats, 240 words), warm execution: median {:.2} ms; target <= 5 ms",
        ms(median)
    );
    let data: Vec<u32> = (0..1000).collect();
    let params = json!({"code": "data: list\nresult: int = sum(data)", "inputs": {"data": data}});
    let median = warm_median(&sandbox, &registry, "code", params);
    println!(
        "language_nodes: code node, result = sum(data) over 1,000 ints, warm execution: median {:.2} ms; target <= 10 ms",
        ms(median)
    );
}

fn load(sandbox: &Sandbox, plugins: &Path, cache: &Path) -> Registry {
    let registry = Registry::load(
        sandbox,
        &[PluginDir {
            path: PathBuf::from(plugins),
            origin: Origin::User,
        }],
        cache,
        &Default::default(),
    );
    assert!(registry.problems.is_empty(), "{:?}", registry.problems);
    registry
}

fn warm_median(sandbox: &Sandbox, registry: &Registry, node_type: &str, params: Value) -> Duration {
    let plugin = registry.get(node_type).expect("loaded");
    let (pre, _) = plugin.prepared(sandbox).expect("prepares");
    let exec = Execution {
        node_id: "bench",
        node_type,
        limits: Limits::default(),
        grants: Grants::default(),
        capabilities: Default::default(),
        dry: None,
        cancel: Default::default(),
    };
    let params: Map<String, Value> = params.as_object().cloned().unwrap_or_default();
    for _ in 0..WARMUP {
        sandbox.run(pre, &exec, &params).expect("runs");
    }
    let mut samples: Vec<Duration> = (0..ITERATIONS)
        .map(|_| {
            let started = Instant::now();
            sandbox.run(pre, &exec, &params).expect("runs");
            started.elapsed()
        })
        .collect();
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mb(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(0.0, |m| m.len() as f64 / 1e6)
}
