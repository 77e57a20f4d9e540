//! The cost per item of pflow's `batch`: a 1,000-item batch of the trivial `echo` node (each
//! item a fresh sandbox instance), sequential and parallel, against the same node run once
//! without a batch. Target: <= 50 µs per item.

mod support;

use pflow_ir::Workflow;
use pflow_runtime::registry::Origin;
use serde_json::{json, Map};
use std::time::Instant;

const ITEMS: usize = 1000;
const ITERATIONS: usize = 15;

fn main() {
    let support::Loaded {
        sandbox,
        registry,
        cache: _cache,
    } = support::load_plugins("test-plugins", "echo.wasm", Origin::User);
    let executor = support::executor(&sandbox, &registry);
    let items: Vec<usize> = (0..ITEMS).collect();
    let batch = |parallel: bool| {
        Workflow::from_json(
            &json!({
                "nodes": [{"id": "each", "type": "echo",
                    "batch": {"items": items, "parallel": parallel, "max_concurrent": 2},
                    "params": {"value": "${item}", "at": "${__index__}"}}],
                "outputs": {"count": {"source": "${each.success_count}"}}
            })
            .to_string(),
        )
        .unwrap()
    };
    let once = Workflow::from_json(
        &json!({"nodes": [{"id": "one", "type": "echo", "params": {"value": 1, "at": 0}}]})
            .to_string(),
    )
    .unwrap();
    let run = |workflow: &Workflow| {
        let report = executor.run(workflow, Map::new(), &mut |_| {}).unwrap();
        assert_eq!(report.status, pflow_runtime::Status::Succeeded);
    };
    let time = |workflow: &Workflow, iterations: usize| {
        run(workflow);
        let mut samples: Vec<f64> = (0..iterations)
            .map(|_| {
                let started = Instant::now();
                run(workflow);
                started.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        samples[iterations / 2]
    };
    let single_us = time(&once, 200);
    for (label, parallel) in [("sequential", false), ("parallel, 2 workers", true)] {
        let total_us = time(&batch(parallel), ITERATIONS);
        println!(
            "batch_overhead: {ITEMS} items of the echo node, {label}: {:.1} ms in all, {:.1} µs per \
             item (the node alone, unbatched: {single_us:.1} µs per run; median of {ITERATIONS}); \
             target <= 50 µs per item",
            total_us / 1e3,
            total_us / ITEMS as f64,
        );
    }
}
