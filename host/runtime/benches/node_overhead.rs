//! Per-node sandbox overhead: a fresh Store, instantiation from the prepared component, `run`
//! and drop, for the trivial `echo` plugin. Prints the median (the target: <= 50 µs).
//!
//! A plain timing loop rather than criterion: the figure wanted is a median over many single
//! executions, which this reports directly, along with the spread.

mod support;

use pflow_runtime::capabilities::Grants;
use pflow_runtime::registry::Origin;
use pflow_runtime::sandbox::Execution;
use pflow_runtime::Limits;
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

const WARMUP: usize = 500;
const ITERATIONS: usize = 10_000;

fn main() {
    let support::Loaded {
        sandbox,
        registry,
        cache: _cache,
    } = support::load_plugins("test-plugins", "echo.wasm", Origin::User);
    let plugin = registry.get("echo").expect("the echo test plugin");
    let (pre, _) = plugin.prepared(&sandbox).expect("echo loads");
    let exec = Execution {
        node_id: "bench",
        node_type: "echo",
        limits: Limits::default(),
        grants: Grants::default(),
        capabilities: Default::default(),
        dry: None,
        cancel: Default::default(),
    };
    let params: Map<String, Value> = json!({"message": "hello", "n": 42})
        .as_object()
        .cloned()
        .unwrap_or_default();

    for _ in 0..WARMUP {
        sandbox.run(pre, &exec, &params).expect("echo runs");
    }
    let mut samples = Vec::with_capacity(ITERATIONS);
    for _ in 0..ITERATIONS {
        let started = Instant::now();
        let outcome = sandbox.run(pre, &exec, &params).expect("echo runs");
        samples.push(started.elapsed());
        assert_eq!(outcome.outputs.len(), 2);
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "node_overhead: new Store + instantiate + run + drop (echo plugin): median {:.1} µs \
         (p10 {:.1} µs, p90 {:.1} µs, n = {ITERATIONS}); target <= 50 µs",
        micros(at(0.5)),
        micros(at(0.1)),
        micros(at(0.9)),
    );
}
