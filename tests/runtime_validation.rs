//! `pflow-host validate --runtime`: one run (dry by default), its issues in the one error shape,
//! and the planner's routing, against a real HTTP server, real processes and real plugins.

mod common;

#[path = "common/http_server.rs"]
mod http_server;

use common::TestHome;
use http_server::TestServer;
use serde_json::{json, Value};

fn runtime(home: &TestHome, workflow: &Value, args: &[&str]) -> Value {
    let path = home.workflow("candidate.json", workflow);
    let mut all = vec![
        "validate",
        "--runtime",
        path.to_str().unwrap(),
        "--output-format",
        "json",
    ];
    all.extend_from_slice(args);
    let run = home.run_args(&all);
    let report = run.report();
    let expected_code = if report["route"] == "default" { 0 } else { 1 };
    assert_eq!(run.code, expected_code, "{}", run.stdout);
    report
}

fn fetch(url: String, extract: Value) -> Value {
    json!({"ir_version": "0.1.0", "nodes": [{"id": "fetch", "type": "http", "params": {"url": url, "extract": extract}}]})
}

#[test]
fn a_clean_http_workflow_routes_default_after_one_execution() {
    let server = TestServer::start();
    let report = runtime(
        &TestHome::new(),
        &fetch(server.url("/json"), json!({"name": "$.user.name"})),
        &[],
    );
    assert_eq!(report["route"], "default");
    assert_eq!(report["runtime_attempts"], 0);
    assert_eq!(report["runtime_errors"], json!([]));
    assert_eq!(report["executed"], json!(["fetch"]));
    assert_eq!(server.requests(), ["GET /json"]);
}

#[test]
fn an_extract_miss_routes_runtime_fix_with_the_error_shape_and_counts_the_attempt() {
    let server = TestServer::start();
    let report = runtime(
        &TestHome::new(),
        &fetch(server.url("/json"), json!({"email": "$.user.email"})),
        &[],
    );
    assert_eq!(report["route"], "runtime_fix");
    assert_eq!(report["runtime_attempts"], 1);
    let error = &report["runtime_errors"][0];
    let mut keys: Vec<&str> = error
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "attempted",
            "available",
            "category",
            "fixable",
            "message",
            "node_id",
            "node_type",
            "sample",
            "source"
        ]
    );
    assert_eq!(error["category"], "extraction_error");
    assert_eq!(error["node_id"], "fetch");
    assert_eq!(error["node_type"], "http");
    assert_eq!(error["fixable"], true);
    assert_eq!(error["available"], json!(["items", "total", "user"]));
}

#[test]
fn a_template_path_a_node_did_not_write_routes_runtime_fix() {
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "make", "type": "echo", "params": {"name": "Ada"}}],
        "outputs": {"missing": {"source": "${make.email}"}}
    });
    let report = runtime(&TestHome::new(), &workflow, &[]);
    assert_eq!(report["route"], "runtime_fix");
    let error = report["runtime_errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["source"] == "missing_template")
        .cloned()
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(error["node_id"], "make");
    assert_eq!(error["attempted"], json!(["${make.email}"]));
    assert_eq!(error["available"], json!(["name"]));
}

#[test]
fn auth_errors_and_used_up_attempts_route_failed_runtime() {
    let server = TestServer::start();
    let home = TestHome::new();
    let report = runtime(&home, &fetch(server.url("/status/401"), json!({})), &[]);
    assert_eq!(report["route"], "failed_runtime");
    assert_eq!(report["runtime_errors"][0]["category"], "auth");

    let report = runtime(
        &home,
        &fetch(server.url("/json"), json!({"email": "$.user.email"})),
        &["--attempts", "3"],
    );
    assert_eq!(report["route"], "failed_runtime");
    assert_eq!(report["runtime_attempts"], 3);
}

#[test]
fn fixable_and_fatal_together_with_attempts_left_route_runtime_fix() {
    let server = TestServer::start();
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "fetch", "type": "http", "params": {"url": server.url("/json"), "extract": {"e": "$.nope"}}},
            {"id": "down", "type": "http", "params": {"url": server.url("/status/503"), "retries": 0}}
        ],
        "edges": [{"from": "fetch", "to": "down", "action": "error"}]
    });
    let report = runtime(&TestHome::new(), &workflow, &["--attempts", "2"]);
    let categories: Vec<&str> = report["runtime_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["category"].as_str().unwrap())
        .collect();
    assert_eq!(categories, ["extraction_error", "server_error"]);
    assert_eq!(report["route"], "runtime_fix");
    assert_eq!(report["runtime_attempts"], 3);
}

#[test]
fn extract_from_a_non_json_body_routes_failed_runtime() {
    let server = TestServer::start();
    let report = runtime(
        &TestHome::new(),
        &fetch(server.url("/text"), json!({"a": "$.a"})),
        &[],
    );
    assert_eq!(report["route"], "failed_runtime");
    assert_eq!(report["runtime_errors"][0]["category"], "non_json");
}

#[test]
fn a_node_that_writes_nothing_and_errs_routes_failed_runtime() {
    let workflow = json!({"ir_version": "0.1.0", "nodes": [{"id": "boom", "type": "hostile", "params": {"attack": "panic"}}]});
    let report = runtime(&TestHome::new(), &workflow, &[]);
    assert_eq!(report["route"], "failed_runtime");
    assert_eq!(report["runtime_errors"][0]["category"], "trap");
}

#[test]
fn a_dry_shell_command_changes_nothing_and_reports_what_it_would_have_created() {
    let home = TestHome::new();
    let user_dir = home.path().join("user");
    std::fs::create_dir_all(&user_dir).unwrap();
    let target = user_dir.join("touched.txt");
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "touch", "type": "shell", "params": {"command": format!("touch {} && echo done", target.display())}}],
        "outputs": {"said": {"source": "${touch.stdout}"}}
    });
    let report = runtime(&home, &workflow, &[]);
    assert_eq!(report["route"], "default", "{report}");
    assert!(
        !target.exists(),
        "a dry run must not touch the user's files"
    );
    assert_eq!(
        report["effects"],
        json!([{"node_id": "touch", "change": "created", "path": target}])
    );

    let report = runtime(&home, &workflow, &["--live"]);
    assert_eq!(report["route"], "default");
    assert!(target.exists(), "--live runs it for real");
    assert_eq!(report["effects"], json!([]));
}

#[test]
fn a_dry_post_is_not_sent_and_what_depends_on_it_is_unverified() {
    let server = TestServer::start();
    let home = TestHome::new();
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "create", "type": "http", "params": {"url": server.url("/echo"), "body": {"name": "x"}}},
            {"id": "show", "type": "echo", "params": {"id": "${create.response.body}"}}
        ],
        "edges": [{"from": "create", "to": "show"}, {"from": "create", "to": "show", "action": "error"}],
        "outputs": {"created": {"source": "${create.status_code}"}}
    });
    let report = runtime(&home, &workflow, &[]);
    assert!(
        server.requests().is_empty(),
        "the POST must not be sent: {:?}",
        server.requests()
    );
    assert_eq!(report["route"], "default", "{report}");
    let unverified: Vec<&str> = report["unverified"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["node_id"].as_str().unwrap())
        .collect();
    assert_eq!(unverified, ["create", "show"]);
    assert_eq!(report["skipped"][0]["capability"], "http");
    let templates: Vec<&str> = report["unverified_templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        templates.contains(&"${create.status_code}"),
        "{templates:?}"
    );

    let report = runtime(&home, &workflow, &["--live"]);
    assert_eq!(report["route"], "default", "{report}");
    assert_eq!(server.requests(), ["POST /echo"]);
}

#[test]
fn a_workflow_that_cannot_start_routes_failed_runtime() {
    let workflow = json!({"ir_version": "0.1.0", "nodes": [{"id": "x", "type": "no-such-type", "params": {}}]});
    let report = runtime(&TestHome::new(), &workflow, &[]);
    assert_eq!(report["route"], "failed_runtime");
    assert_eq!(report["runtime_errors"][0]["category"], "cannot_run");
}

#[test]
fn without_an_overlay_a_dry_command_falls_back_to_bubblewrap_then_to_not_running() {
    assert!(
        std::path::Path::new("/usr/bin/bwrap").exists(),
        "bubblewrap is missing: run `just test-peers`"
    );
    let home = TestHome::new();
    let user_dir = home.path().join("user");
    std::fs::create_dir_all(&user_dir).unwrap();
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "look", "type": "shell", "params": {"command": "ls && touch new.txt", "cwd": user_dir}}]
    });
    let path = home.workflow("fallback.json", &workflow);
    let run = |method: &str| {
        let output = home
            .command()
            .env("PFLOW_DRY_SHELL", method)
            .args([
                "validate",
                "--runtime",
                path.to_str().unwrap(),
                "--output-format",
                "json",
            ])
            .output()
            .unwrap();
        common::Run::from(output).report()
    };
    // Read-only root: the command runs, its write fails, and the report says why.
    let report = run("bubblewrap");
    assert_eq!(
        report["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .split(':')
            .next(),
        Some("ran under bubblewrap with a read-only root and no network")
    );
    assert!(
        report["runtime_errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("Read-only file system"),
        "{report}"
    );
    // Nothing to contain it with: not run at all.
    let report = run("none");
    assert_eq!(report["route"], "default");
    assert_eq!(report["unverified"][0]["node_id"], "look");
    assert!(report["unverified"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("the command was not run"));
    assert!(!user_dir.join("new.txt").exists());
}
