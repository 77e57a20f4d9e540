//! Every bad input gets one clear paragraph and a non-zero exit; none makes the host panic
//! (`common::Run` fails any test whose run printed a panic).

mod common;

use common::TestHome;
use serde_json::json;

fn write(home: &TestHome, name: &str, text: &str) -> String {
    let path = home.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn unreadable_file() {
    let home = TestHome::new();
    let run = home.run_args(&["run", "/nonexistent/flow.json"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("Cannot read workflow file '/nonexistent/flow.json'")
            && run.stderr.contains("No such file or directory"),
        "{}",
        run.stderr
    );
}

#[test]
fn invalid_json_names_line_and_column() {
    let home = TestHome::new();
    let path = write(&home, "broken.json", "{\n  \"ir_version\": \"0.1.0\",\n  \"nodes\": [\n    {\"id\": \"a\" \"type\": \"shell\"}\n  ]\n}\n");
    let run = home.run_args(&["run", &path]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("invalid JSON at line 4, column 16: expected `,` or `}`"),
        "{}",
        run.stderr
    );
}

#[test]
fn wrong_shape_names_the_json_path_and_the_fix() {
    let home = TestHome::new();
    let flow = json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "a", "type": "echo"}, {"id": "b", "type": "echo"}],
        "edges": [{"from_node": "a", "to_node": "b"}]
    });
    let path = write(
        &home,
        "shape.json",
        &serde_json::to_string_pretty(&flow).unwrap(),
    );
    let run = home.run_args(&["run", &path]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("invalid workflow at edges[0]"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("unknown field `from_node`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("(edges use `from` and `to`)"),
        "{}",
        run.stderr
    );
}

#[test]
fn structural_problems_are_all_listed() {
    let home = TestHome::new();
    let flow = json!({
        "ir_version": "1",
        "nodes": [{"id": "a", "type": "echo"}, {"id": "a", "type": "echo"}],
        "edges": [{"from": "a", "to": "ghost"}]
    });
    let run = home.run_json(&flow, &[]);
    assert_eq!(run.code, 2);
    let message = run.report()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    for expected in [
        "ir_version '1' must look like MAJOR.MINOR.PATCH",
        "nodes[1].id 'a' is used twice",
        "edges[0].to names unknown node 'ghost'",
    ] {
        assert!(message.contains(expected), "{expected} not in {message}");
    }
}

#[test]
fn unknown_node_type_suggests_the_closest_known_types() {
    let home = TestHome::new();
    let flow =
        json!({"ir_version": "0.1.0", "nodes": [{"id": "run", "type": "shel", "params": {}}]});
    let run = home.run_json(&flow, &[]);
    assert_eq!(run.code, 2);
    let error = &run.report()["error"];
    assert_eq!(error["category"], "unknown_node_type");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Validation error at nodes[0].type: Unknown node type: 'shel'\nDid you mean: shell?"
        ),
        "{message}"
    );
    assert!(
        message.contains("Known types: ")
            && message.contains("shell, ")
            && message.contains("workflow"),
        "{message}"
    );
}

#[test]
fn missing_required_inputs_are_named_with_how_to_give_them() {
    let home = TestHome::new();
    let flow = json!({
        "ir_version": "0.1.0",
        "inputs": {"city": {"description": "Where"}, "days": {"type": "integer"}, "unit": {"required": false}},
        "nodes": [{"id": "e", "type": "echo", "params": {"c": "${city}", "d": "${days}", "u": "${unit}"}}]
    });
    let run = home.run_args(&["run", home.workflow("in.json", &flow).to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains(
            "Missing required input(s): 'city' (Where), 'days'. Give them on the command line as city=... days=..."
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn unknown_and_mistyped_inputs_are_refused() {
    let home = TestHome::new();
    let flow = json!({
        "ir_version": "0.1.0",
        "inputs": {"days": {"type": "integer"}},
        "nodes": [{"id": "e", "type": "echo", "params": {"d": "${days}"}}]
    });
    let run = home.run_json(&flow, &["dayz=3"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.report()["error"]["message"],
        "Unknown input 'dayz'. Did you mean: days? Declared inputs: days."
    );
    let run = home.run_json(&flow, &["days=three"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.report()["error"]["message"],
        "Input 'days' must be an integer: 'three' is not one"
    );
    let run = home.run_json(&flow, &["days"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.report()["error"]["message"],
        "Input 'days' must be written key=value"
    );
}

#[test]
fn unresolvable_template_fails_the_node_saying_what_exists() {
    let home = TestHome::new();
    let flow = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "fetch", "type": "echo", "params": {"name": "Ada", "email_address": "a@b"}},
            {"id": "use", "type": "echo", "params": {"to": "${fetch.email}"}}
        ],
        "edges": [{"from": "fetch", "to": "use"}]
    });
    let run = home.run_json(&flow, &[]);
    assert_eq!(run.code, 1);
    let error = &run.report()["error"];
    assert_eq!(error["node_id"], "use");
    assert_eq!(error["category"], "template_error");
    assert_eq!(error["fixable"], true);
    assert_eq!(
        error["message"],
        "In param 'to': Template ${fetch.email} cannot be resolved: 'fetch' has no field 'email'; it has: email_address, name"
    );
    assert_eq!(error["available"], json!(["email_address", "name"]));
}

#[test]
fn permissive_mode_leaves_unresolved_templates_as_written() {
    let home = TestHome::new();
    let flow = json!({
        "ir_version": "0.1.0",
        "template_resolution_mode": "permissive",
        "nodes": [{"id": "use", "type": "echo", "params": {"to": "mail ${ghost.email}"}}],
        "outputs": {"to": {"source": "${use.to}"}}
    });
    let run = home.run_json(&flow, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.report()["outputs"]["to"], "mail ${ghost.email}");
}

#[test]
fn malformed_documents_never_panic() {
    let home = TestHome::new();
    let documents = [
        "",
        "null",
        "[]",
        "\"text\"",
        "{}",
        "{\"ir_version\": \"0.1.0\", \"nodes\": []}",
        "{\"ir_version\": \"0.1.0\", \"nodes\": [{}]}",
        "{\"ir_version\": 1, \"nodes\": [{\"id\": \"a\", \"type\": \"echo\"}]}",
        "{\"ir_version\": \"0.1.0\", \"nodes\": [{\"id\": \"a b\", \"type\": \"echo\"}]}",
        "{\"ir_version\": \"0.1.0\", \"nodes\": [{\"id\": \"a\", \"type\": \"echo\", \"params\": []}]}",
        "{\"ir_version\": \"0.1.0\", \"nodes\": [{\"id\": \"a\", \"type\": \"echo\"}], \"surprise\": 1}",
        "{\"ir_version\": \"0.1.0\", \"nodes\": [{\"id\": \"a\", \"type\": \"echo\"}]} trailing",
        "{\"ir_version\": \"0.1.0\", \"inputs\": {\"x\": {\"type\": \"tuple\"}}, \"nodes\": [{\"id\": \"a\", \"type\": \"echo\"}]}",
        "{\"ir_version\": \"0.1.0\", \"nodes\": [{\"id\": \"a\", \"type\": \"echo\", \"batch\": {\"items\": 5}}]}",
        "\u{feff}{",
        "{\"ir_version\": \"0.1.0\", \"nodes\": [{\"id\": \"a\", \"type\": \"echo\", \"params\": {\"x\": \"${a.self_reference}\"}}]}",
    ];
    for (i, document) in documents.iter().enumerate() {
        let path = write(&home, &format!("doc{i}.json"), document);
        let run = home.run_args(&["run", &path]);
        assert!(
            run.code == 1 || run.code == 2,
            "document {i} gave {}: {}",
            run.code,
            run.stderr
        );
        assert!(
            run.stderr.starts_with("error: "),
            "document {i}: {}",
            run.stderr
        );
        // A document that cannot be read is one line; one that reads but is invalid gets
        // `validate`'s list of issues under that line.
        assert!(
            run.stderr.trim_end().lines().count() == 1
                || run.stderr.starts_with("error: the workflow is invalid"),
            "document {i}: one paragraph: {}",
            run.stderr
        );
    }
}

/// `pflow-host ... | head`: a reader that goes away before the output is written ends the
/// command quietly, as it ends ripgrep, instead of a panic on the broken pipe.
#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    let home = TestHome::new();
    for args in [
        &["guide"][..],
        &["registry", "list"],
        &["registry", "find", "shell"],
    ] {
        let mut child = home
            .command()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
    }
}
