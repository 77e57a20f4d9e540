//! Checkpoints: the cost per node of writing the run's checkpoint after it (serialize + write +
//! rename, no fsync) on a 50-node workflow, and the time a resume of a 50-node run with 49
//! completed nodes takes to reach the 50th (load the checkpoint, hash and skip 49 nodes).
//! Targets: <= 0.5 ms per node, <= 20 ms to the 50th node.

mod support;

use pflow_runtime::registry::Origin;
use pflow_runtime::runs::{Recorder, RunMeta, RunStatus, Runs};
use pflow_runtime::{Event, RunState};
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

const NODES: usize = 50;
const ITERATIONS: usize = 200;

fn main() {
    let support::Loaded {
        sandbox,
        registry,
        cache: _cache,
    } = support::load_plugins("test-plugins", "echo.wasm", Origin::User);
    let workflow = chain();
    let executor = support::executor(&sandbox, &registry);
    let dir = tempfile::tempdir().unwrap();
    let runs = Runs::new(dir.path());
    let meta = |id: &str| RunMeta {
        run_id: id.to_string(),
        status: RunStatus::Running,
        workflow_path: None,
        workflow: serde_json::to_value(&workflow).unwrap(),
        inputs: Map::new(),
        started_at: 0.0,
        updated_at: 0.0,
    };

    let plain = || {
        let state = executor.start(&workflow, Map::new()).unwrap();
        executor
            .run_from(&workflow, state, None, &mut |_| {}, &mut |_, _| {})
            .unwrap();
    };
    let recorded = || {
        let state = executor.start(&workflow, Map::new()).unwrap();
        let mut recorder = Recorder::start(&runs, meta("bench"), &state);
        let report = executor
            .run_from(&workflow, state, None, &mut |_| {}, &mut |s, r| {
                recorder.step(s, r)
            })
            .unwrap();
        recorder.finish(report.status, &report.state);
    };
    let (without, with) = support::interleaved_medians(20, ITERATIONS, plain, recorded);
    let per_node = with.saturating_sub(without) / NODES as u32;
    let size = std::fs::metadata(runs.checkpoint_path("bench"))
        .unwrap()
        .len();
    println!(
        "checkpoint: {NODES}-node run {:.2} ms without checkpoints, {:.2} ms with one after every \
         node ({size} bytes at the end): {:.3} ms per node (median of {ITERATIONS}); target <= 0.5 ms",
        support::ms(without),
        support::ms(with),
        support::ms(per_node),
    );

    // A run whose last node failed: 49 completed in its checkpoint.
    let state = executor.start(&workflow, Map::new()).unwrap();
    let mut recorder = Recorder::start(&runs, meta("resume"), &state);
    let mut at_49: Option<RunState> = None;
    executor
        .run_from(&workflow, state, None, &mut |_| {}, &mut |s, r| {
            if r.id == format!("n{}", NODES - 1) {
                recorder.step(s, r);
                at_49 = Some(s.clone());
            }
        })
        .unwrap();
    let at_49 = at_49.unwrap();
    assert_eq!(at_49.execution.completed_nodes.len(), NODES - 1);
    let mut samples: Vec<Duration> = (0..ITERATIONS)
        .map(|_| {
            let started = Instant::now();
            let checkpoint = runs.load("resume").unwrap();
            let state = executor.start(&workflow, Map::new()).unwrap();
            let mut reached = None;
            let last = format!("n{NODES}");
            executor
                .run_from(
                    &workflow,
                    state,
                    Some(&checkpoint.state),
                    &mut |event| {
                        if let Event::NodeStarted { id, .. } = event {
                            if id == last && reached.is_none() {
                                reached = Some(started.elapsed());
                            }
                        }
                    },
                    &mut |_, _| {},
                )
                .unwrap();
            reached.unwrap()
        })
        .collect();
    samples.sort();
    println!(
        "checkpoint resume: load a {NODES}-node run's checkpoint with {} completed and reach node \
         {NODES}: median {:.3} ms (p90 {:.3} ms, n = {ITERATIONS}); target <= 20 ms",
        NODES - 1,
        support::ms(samples[ITERATIONS / 2]),
        support::ms(samples[ITERATIONS * 9 / 10]),
    );
}

/// n1 -> n2 -> ... -> n50, each echoing the previous one's value with a suffix.
fn chain() -> pflow_ir::Workflow {
    let mut nodes =
        vec![json!({"id": "n1", "type": "echo", "params": {"v": "start", "list": [1, 2, 3]}})];
    let mut edges = Vec::new();
    for n in 2..=NODES {
        nodes.push(json!({"id": format!("n{n}"), "type": "echo",
                          "params": {"v": format!("${{n{}.v}}-{n}", n - 1)}}));
        edges.push(json!({"from": format!("n{}", n - 1), "to": format!("n{n}")}));
    }
    let workflow: Value = json!({"ir_version": "0.1.0", "nodes": nodes, "edges": edges});
    serde_json::from_value(workflow).unwrap()
}
