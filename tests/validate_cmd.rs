//! `pflow-host validate` with the real registry: exit codes, text and JSON output.

mod common;

use common::TestHome;
use serde_json::json;

#[test]
fn the_examples_are_valid() {
    let home = TestHome::new();
    for example in [
        "word-count.json",
        "http-extract.json",
        "http-post.json",
        "http-fallback.json",
    ] {
        let path = common::repo_root().join("examples").join(example);
        let run = home.run_args(&["validate", path.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{example}: {}", run.stdout);
        assert_eq!(run.stdout.trim(), "Workflow is valid.", "{example}");
    }
}

#[test]
fn an_invalid_workflow_lists_every_issue_and_exits_1() {
    let home = TestHome::new();
    let flow = json!({
        "ir_version": "0.1.0",
        "inputs": {"unused": {"type": "string"}},
        "nodes": [
            {"id": "fetch", "type": "http", "params": {"url": "https://api.example.com", "extract": {"name": "$.name"}}},
            {"id": "say", "type": "shell", "params": {"command": "echo ${fetch.extracted.email} ${fetch.body}"}}
        ],
        "edges": [{"from": "fetch", "to": "say"}]
    });
    let path = home.workflow("invalid.json", &flow);
    let run = home.run_args(&["validate", path.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains(
        "Validation error at nodes[1].params.command: Template ${fetch.extracted.email}: 'fetch.extracted' only has the keys given in param 'extract' (name), not 'email'"
    ), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("Node 'fetch' (type: http) does not output 'body'"),
        "{}",
        run.stdout
    );
    assert!(run
        .stdout
        .contains("Declared input(s) never used as template variable: unused"));
    assert!(
        run.stdout
            .trim_end()
            .ends_with("Workflow is invalid: 3 error(s), 0 warning(s)."),
        "{}",
        run.stdout
    );

    let run = home.run_args(&[
        "validate",
        path.to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    assert_eq!(run.code, 1);
    let report = run.report();
    assert_eq!(report["valid"], false);
    assert_eq!(report["errors"].as_array().unwrap().len(), 3);
    assert_eq!(report["errors"][0]["kind"], "template");
    assert_eq!(report["errors"][0]["path"], "nodes[1].params.command");
}

#[test]
fn given_inputs_are_checked_against_required_ones() {
    let home = TestHome::new();
    let flow = json!({
        "ir_version": "0.1.0",
        "inputs": {"city": {"type": "string"}},
        "nodes": [{"id": "say", "type": "shell", "params": {"command": "echo ${city}"}}]
    });
    let path = home.workflow("inputs.json", &flow);
    assert_eq!(home.run_args(&["validate", path.to_str().unwrap()]).code, 0);
    let run = home.run_args(&["validate", path.to_str().unwrap(), "town=Oslo"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("Required input 'city' has no value"),
        "{}",
        run.stdout
    );
    assert_eq!(
        home.run_args(&["validate", path.to_str().unwrap(), "city=Oslo"])
            .code,
        0
    );
}

#[test]
fn an_unreadable_file_exits_2() {
    let run = TestHome::new().run_args(&["validate", "/no/such/flow.json"]);
    assert_eq!(run.code, 2);
    assert!(run
        .stderr
        .starts_with("error: Cannot read workflow file '/no/such/flow.json'"));
}
