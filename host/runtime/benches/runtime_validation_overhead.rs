//! Runtime validation of a five-node workflow of pure nodes (the echo plugin): the time it
//! takes beyond the nodes' own executions. Prints the median (the target: <= 5 ms).

mod support;

use pflow_runtime::registry::Origin;
use pflow_runtime::runtime_validation::{validate_runtime, RuntimeRoute};
use serde_json::{json, Map};
use std::time::{Duration, Instant};

const ITERATIONS: usize = 500;

fn main() {
    let support::Loaded {
        sandbox,
        registry,
        cache: _cache,
    } = support::load_plugins("test-plugins", "echo.wasm", Origin::User);
    let workflow: pflow_ir::Workflow = serde_json::from_value(json!({
        "ir_version": "0.1.0",
        "inputs": {"seed": {"type": "string", "default": "x"}},
        "nodes": [
            {"id": "n1", "type": "echo", "params": {"v": "${seed}"}},
            {"id": "n2", "type": "echo", "params": {"v": "${n1.v}-2"}},
            {"id": "n3", "type": "echo", "params": {"v": "${n2.v}-3", "list": [1, 2, 3]}},
            {"id": "n4", "type": "echo", "params": {"v": "${n3.v}-4", "first": "${n3.list[0]}"}},
            {"id": "n5", "type": "echo", "params": {"v": "${n4.v}-5"}}
        ],
        "edges": [
            {"from": "n1", "to": "n2"}, {"from": "n2", "to": "n3"},
            {"from": "n3", "to": "n4"}, {"from": "n4", "to": "n5"}
        ],
        "outputs": {"v": {"source": "${n5.v}"}}
    }))
    .unwrap();
    let executor = || support::executor(&sandbox, &registry);
    let once = || {
        let started = Instant::now();
        let validation = validate_runtime(executor(), &workflow, Map::new(), false, 0);
        let total = started.elapsed();
        assert_eq!(validation.route, RuntimeRoute::Default);
        let nodes: f64 = validation.nodes.iter().map(|n| n.duration_ms).sum();
        total.saturating_sub(Duration::from_secs_f64(nodes / 1e3))
    };
    for _ in 0..50 {
        once();
    }
    let mut overheads: Vec<Duration> = (0..ITERATIONS).map(|_| once()).collect();
    overheads.sort();
    println!(
        "runtime_validation_overhead: 5 pure nodes, dry run, time beyond the nodes' own executions: \
         median {:.3} ms (p90 {:.3} ms, n = {ITERATIONS}); target <= 5 ms",
        overheads[ITERATIONS / 2].as_secs_f64() * 1e3,
        overheads[ITERATIONS * 9 / 10].as_secs_f64() * 1e3,
    );
}
