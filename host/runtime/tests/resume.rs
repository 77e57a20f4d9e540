//! Resuming a run from its state: completed nodes whose hash (type, component, resolved
//! params) is unchanged are taken from the earlier run; anything else runs again. Real shell
//! components in wasmtime, real processes.

use pflow_runtime::executor::RunState;
use pflow_runtime::{Host, PflowHome, RunReport, Status};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

fn host(home: &Path) -> Host {
    let builtin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/plugins");
    assert!(
        builtin.join("shell.wasm").exists(),
        "run `just plugins` first"
    );
    Host::open(PflowHome::at(home), builtin).unwrap()
}

/// `first` appends a mark to `file` (so its runs can be counted) and prints `word`; `second`
/// runs `command` on that output.
fn workflow() -> pflow_ir::Workflow {
    serde_json::from_value(json!({
        "ir_version": "0.1.0",
        "inputs": {
            "file": {"type": "string"}, "word": {"type": "string"}, "command": {"type": "string"}
        },
        "nodes": [
            {"id": "first", "type": "shell",
             "params": {"command": "printf x >> \"${file}\"; echo ${word}"}},
            {"id": "second", "type": "shell",
             "params": {"command": "${command}", "stdin": "${first.stdout}"}}
        ],
        "edges": [{"from": "first", "to": "second"}],
        "outputs": {"out": {"source": "${second.stdout}"}}
    }))
    .unwrap()
}

fn inputs(file: &Path, word: &str, command: &str) -> Map<String, Value> {
    let mut inputs = Map::new();
    inputs.insert("file".into(), json!(file.to_str().unwrap()));
    inputs.insert("word".into(), json!(word));
    inputs.insert("command".into(), json!(command));
    inputs
}

/// Runs from the start (resuming `earlier` when given) and returns the report and the last state.
fn run(
    host: &Host,
    inputs: Map<String, Value>,
    earlier: Option<&RunState>,
) -> (RunReport, RunState) {
    let executor = host.executor(&Default::default());
    let workflow = workflow();
    let state = executor.start(&workflow, inputs).unwrap();
    let mut last = state.clone();
    let report = executor
        .run_from(&workflow, state, earlier, &mut |_| {}, &mut |s, _| {
            last = s.clone()
        })
        .unwrap();
    (report, last)
}

fn marks(file: &PathBuf) -> String {
    std::fs::read_to_string(file).unwrap_or_default()
}

#[test]
fn a_completed_node_is_taken_from_the_earlier_run_and_a_failed_one_runs_again() {
    let home = tempfile::tempdir().unwrap();
    let host = host(home.path());
    let file = home.path().join("marks");

    let (failed, state) = run(&host, inputs(&file, "hello", "exit 3"), None);
    assert_eq!(failed.status, Status::Failed);
    assert_eq!(state.execution.completed_nodes, ["first"]);
    assert_eq!(state.execution.failed_node.as_deref(), Some("second"));
    assert!(!state.execution.node_hashes.contains_key("second"));

    let (resumed, state) = run(&host, inputs(&file, "hello", "tr a-z A-Z"), Some(&state));
    assert_eq!(resumed.status, Status::Succeeded, "{:?}", resumed.error);
    assert_eq!(
        resumed.outputs["out"].as_str().map(str::trim),
        Some("HELLO")
    );
    assert!(resumed.nodes[0].cached, "first is cached");
    assert!(!resumed.nodes[1].cached);
    assert_eq!(marks(&file), "x", "first ran once across both runs");
    assert_eq!(state.execution.completed_nodes, ["first", "second"]);
    assert_eq!(state.execution.failed_node, None);
}

#[test]
fn a_node_whose_templated_param_changed_runs_again() {
    let home = tempfile::tempdir().unwrap();
    let host = host(home.path());
    let file = home.path().join("marks");
    let (_, state) = run(&host, inputs(&file, "hello", "exit 3"), None);
    // Only the value behind ${word} differs: pflow would have skipped `first` as cached.
    let (resumed, _) = run(&host, inputs(&file, "bye", "cat"), Some(&state));
    assert_eq!(resumed.outputs["out"].as_str().map(str::trim), Some("bye"));
    assert!(!resumed.nodes[0].cached);
    assert_eq!(marks(&file), "xx");
}

#[test]
fn a_cancelled_run_does_not_cancel_the_next_one_on_the_same_host() {
    let home = tempfile::tempdir().unwrap();
    let host = host(home.path());
    let file = home.path().join("marks");
    let cancelled = pflow_runtime::CancelToken::new();
    cancelled.cancel();
    let report = host
        .executor(&cancelled)
        .run(&workflow(), inputs(&file, "a", "cat"), &mut |_| {})
        .unwrap();
    assert_eq!(report.status, Status::Cancelled);
    assert_eq!(marks(&file), "", "nothing ran");
    let report = host
        .executor(&pflow_runtime::CancelToken::new())
        .run(&workflow(), inputs(&file, "a", "cat"), &mut |_| {})
        .unwrap();
    assert_eq!(report.status, Status::Succeeded);
}
