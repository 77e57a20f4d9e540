//! What the benchmarks share. Each bench uses part of it.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Medians of `iterations` timings of `direct` and `node`, run alternately (after `warmup`
/// rounds) so that both see the same machine.
pub fn interleaved_medians(
    warmup: usize,
    iterations: usize,
    mut direct: impl FnMut(),
    mut node: impl FnMut(),
) -> (Duration, Duration) {
    for _ in 0..warmup {
        direct();
        node();
    }
    let mut direct_samples = Vec::with_capacity(iterations);
    let mut node_samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let started = Instant::now();
        direct();
        direct_samples.push(started.elapsed());
        let started = Instant::now();
        node();
        node_samples.push(started.elapsed());
    }
    (median(direct_samples), median(node_samples))
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The repository root.
pub fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A sandbox and the components in `target/<dir>` (which must hold `needed`), compiled into a
/// cache that lives as long as this value.
pub struct Loaded {
    pub sandbox: pflow_runtime::Sandbox,
    pub registry: pflow_runtime::Registry,
    /// Bound by the caller, so the compiled-component cache outlives the benchmark.
    pub cache: tempfile::TempDir,
}

pub fn load_plugins(dir: &str, needed: &str, origin: pflow_runtime::Origin) -> Loaded {
    let path = repo_root().join("target").join(dir);
    assert!(
        path.join(needed).exists(),
        "run `just plugins` before this benchmark"
    );
    let cache = tempfile::tempdir().expect("temp dir");
    let sandbox = pflow_runtime::Sandbox::new().expect("engine");
    let dirs = [pflow_runtime::PluginDir { path, origin }];
    let registry = pflow_runtime::Registry::load(
        &sandbox,
        &dirs,
        cache.path(),
        &pflow_runtime::home::PluginSettings::default(),
    );
    Loaded {
        sandbox,
        registry,
        cache,
    }
}

/// An executor over `sandbox` and `registry` with the host's default limits and policies, any
/// MCP server allowed, live (not dry), and a fresh cancellation token.
pub fn executor<'a>(
    sandbox: &'a pflow_runtime::Sandbox,
    registry: &'a pflow_runtime::Registry,
) -> pflow_runtime::Executor<'a> {
    pflow_runtime::Executor {
        sandbox,
        registry,
        limits: pflow_runtime::Limits::default(),
        http_policy: Default::default(),
        mcp_servers: Default::default(),
        mcp_allowed: vec!["*".to_string()],
        dry: None,
        cancel: Default::default(),
        max_node_visits: pflow_runtime::executor::MAX_NODE_VISITS,
        file_policy: Default::default(),
        llm: None,
        nesting: Default::default(),
    }
}
