//! Repair through the real binary: a failed run goes to the LLM stand-in, the repaired workflow
//! is validated, runs from the checkpoint (completed nodes are not redone) and is written beside
//! the original. Early stops: no repair asked for, errors no repair can fix, the same error
//! again, repairs used up.

mod common;
#[path = "common/http_server.rs"]
mod http_server;

use common::{Run, TestHome};
use pflow_llm_standin::{Reply, Scripted, StandIn};
use serde_json::{json, Value};
use std::path::Path;

/// `data` appends a line to `file` (its runs can be counted) and prints a user as JSON; `greet`
/// reads `${data.stdout.<field>}`.
fn greeting(field: &str) -> Value {
    json!({
        "ir_version": "0.1.0",
        "inputs": {"file": {"type": "string"}},
        "nodes": [
            {"id": "data", "type": "shell",
             "params": {"command": "echo line >> \"${file}\"; echo '{\"name\": \"Ada\"}'"}},
            {"id": "greet", "type": "shell",
             "params": {"command": format!("echo Hello ${{data.stdout.{field}}}")}}
        ],
        "edges": [{"from": "data", "to": "greet"}],
        "outputs": {"greeting": {"source": "${greet.stdout}"}}
    })
}

fn answer(workflow: Value) -> Scripted {
    Reply::Tool {
        input: json!({"workflow": workflow, "name": "greet", "description": "Greets.", "params": {}}),
    }
    .into()
}

/// `pflow-host run` of `workflow` (written into the home) with the stand-in as the LLM.
fn run_with_llm(home: &TestHome, llm: &StandIn, workflow: &Value, extra: &[&str]) -> Run {
    let path = home.workflow("greet.json", workflow);
    let file = format!("file={}", home.path().join("lines").display());
    let output = home
        .command()
        .env("ANTHROPIC_BASE_URL", llm.anthropic_url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("PFLOW_MODEL", "claude-sonnet-4-5")
        .args([
            "run",
            path.to_str().unwrap(),
            &file,
            "--output-format",
            "json",
        ])
        .args(extra)
        .output()
        .unwrap();
    Run::from(output)
}

fn lines(home: &TestHome) -> usize {
    std::fs::read_to_string(home.path().join("lines"))
        .unwrap_or_default()
        .lines()
        .count()
}

fn prompt(llm: &StandIn, index: usize) -> String {
    llm.requests()[index].prompt()
}

#[test]
fn a_template_error_is_repaired_and_the_completed_node_is_cached() {
    let home = TestHome::new();
    let llm = StandIn::start(0, vec![answer(greeting("name"))]).unwrap();
    let run = run_with_llm(&home, &llm, &greeting("username"), &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let report = run.report();
    assert_eq!(
        report["outputs"]["greeting"].as_str().map(str::trim),
        Some("Hello Ada")
    );
    assert_eq!(run.node("data")["cached"], true, "data did not run again");
    assert_eq!(
        lines(&home),
        1,
        "the appending node ran once across failure and repair"
    );
    assert_eq!(report["repair"]["status"], "repaired");
    assert_eq!(report["repair"]["llm_calls"], 1);
    let asked = prompt(&llm, 0);
    assert!(asked.contains("${data.stdout.username}"), "{asked}");
    assert!(asked.contains("These nodes completed"), "{asked}");
    assert!(
        asked.contains("### shell"),
        "the interfaces of the nodes involved"
    );
    let id = report["run_id"].as_str().unwrap();
    let trace =
        std::fs::read_to_string(home.path().join("runs").join(id).join("trace.jsonl")).unwrap();
    for event in [
        "node_failed",
        "repair_started",
        "validation_complete",
        "node_cached",
        "repair_complete",
    ] {
        assert!(
            trace.contains(&format!("\"event\":\"{event}\"")),
            "no {event} in {trace}"
        );
    }
    let repaired = home.path().join("greet.repaired.json");
    let repaired: Value =
        serde_json::from_str(&std::fs::read_to_string(repaired).unwrap()).unwrap();
    assert_eq!(repaired, greeting("name"));
}

#[test]
fn edges_in_the_wrong_format_are_repaired_before_anything_runs() {
    let home = TestHome::new();
    let mut broken = greeting("name");
    broken["edges"] = json!([{"from_node": "data", "to_node": "greet"}]);
    let llm = StandIn::start(0, vec![answer(greeting("name"))]).unwrap();
    let run = run_with_llm(&home, &llm, &broken, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.report()["outputs"]["greeting"].as_str().map(str::trim),
        Some("Hello Ada")
    );
    assert!(
        prompt(&llm, 0).contains("edge_format"),
        "{}",
        prompt(&llm, 0)
    );
}

#[test]
fn no_repair_means_no_llm_call() {
    let home = TestHome::new();
    let llm = StandIn::start(0, vec![answer(greeting("name"))]).unwrap();
    let run = run_with_llm(&home, &llm, &greeting("username"), &["--no-repair"]);
    assert_eq!(run.code, 1);
    assert!(llm.requests().is_empty());
}

#[test]
fn an_auth_error_is_not_sent_to_the_llm() {
    let home = TestHome::new();
    let server = http_server::TestServer::start();
    let workflow = json!({
        "ir_version": "0.1.0",
        "inputs": {"file": {"type": "string", "required": false}},
        "nodes": [{"id": "fetch", "type": "http",
                   "params": {"url": format!("http://127.0.0.1:{}/status/401", server.port),
                              "headers": {"X-File": "${file}"}}}]
    });
    let llm = StandIn::start(0, vec![answer(greeting("name"))]).unwrap();
    let run = run_with_llm(&home, &llm, &workflow, &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(llm.requests().is_empty());
    assert_eq!(run.report()["repair"]["repairs"], 0);
    assert!(run.report()["repair"]["reason"]
        .as_str()
        .unwrap()
        .contains("[auth]"));
}

#[test]
fn the_same_error_again_stops_the_repair() {
    let home = TestHome::new();
    // The "repair" changes nothing that matters: `greet` fails the same way.
    let mut same = greeting("username");
    same["nodes"][1]["purpose"] = json!("Greet");
    let llm = StandIn::start(0, vec![answer(same), answer(greeting("name"))]).unwrap();
    let run = run_with_llm(&home, &llm, &greeting("username"), &[]);
    assert_eq!(run.code, 1);
    assert_eq!(llm.requests().len(), 1);
    assert!(
        run.report()["repair"]["reason"]
            .as_str()
            .unwrap()
            .contains("same error came back"),
        "{}",
        run.stdout
    );
}

#[test]
fn three_repairs_that_fail_end_with_the_original_error() {
    let home = TestHome::new();
    let script = ["user_name", "login", "handle"].map(|field| answer(greeting(field)));
    let llm = StandIn::start(0, script.to_vec()).unwrap();
    let run = run_with_llm(&home, &llm, &greeting("username"), &[]);
    assert_eq!(run.code, 1);
    assert_eq!(llm.requests().len(), 3);
    let report = run.report();
    assert_eq!(report["repair"]["repairs"], 3);
    assert!(
        report["error"]["message"]
            .as_str()
            .unwrap()
            .contains("username"),
        "the original error"
    );
    assert_eq!(lines(&home), 1, "data never ran again");
}

#[test]
fn a_repair_that_changes_a_completed_nodes_params_runs_it_again() {
    let home = TestHome::new();
    // The repair makes `data` print the field `greet` asks for: `data` must run again.
    let mut repaired = greeting("username");
    repaired["nodes"][0]["params"]["command"] =
        json!("echo line >> \"${file}\"; echo '{\"username\": \"Ada\"}'");
    let llm = StandIn::start(0, vec![answer(repaired)]).unwrap();
    let run = run_with_llm(&home, &llm, &greeting("username"), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.node("data")["cached"], Value::Null);
    assert_eq!(lines(&home), 2);
}

#[test]
fn without_an_llm_a_failed_run_fails_as_before() {
    let home = TestHome::new();
    let path = home.workflow("greet.json", &greeting("username"));
    let file = format!("file={}", home.path().join("lines").display());
    let run = home.run_args(&["run", path.to_str().unwrap(), &file]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("error: workflow failed at node 'greet'"),
        "{}",
        run.stderr
    );
    assert!(!Path::new(&home.path().join("greet.repaired.json")).exists());
}

#[test]
fn an_unknown_node_type_is_repaired_with_its_category() {
    let home = TestHome::new();
    let mut broken = greeting("name");
    broken["nodes"][1]["type"] = json!("shel");
    let llm = StandIn::start(0, vec![answer(greeting("name"))]).unwrap();
    let run = run_with_llm(&home, &llm, &broken, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let asked = prompt(&llm, 0);
    assert!(
        asked.contains("\"category\": \"invalid_node_type\""),
        "{asked}"
    );
    assert!(asked.contains("Did you mean: shell?"), "{asked}");
}

#[test]
fn save_repair_writes_over_a_saved_workflow_and_keeps_a_backup() {
    let home = TestHome::new();
    let saved = json!({
        "name": "greet", "description": "Greets.", "ir": greeting("username"),
        "created_at": 1, "updated_at": 1, "request": "greet the user"
    });
    let llm = StandIn::start(0, vec![answer(greeting("name"))]).unwrap();
    let run = run_with_llm(&home, &llm, &saved, &["--save-repair"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(prompt(&llm, 0).contains("It was made for this request: greet the user"));
    let path = home.path().join("greet.json");
    let repaired: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        repaired["ir"],
        greeting("name"),
        "still a saved workflow, with the new IR"
    );
    assert_eq!(repaired["request"], "greet the user");
    let backup: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("greet.json.bak")).unwrap())
            .unwrap();
    assert_eq!(backup, saved);
}
