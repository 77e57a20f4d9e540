//! `pflow-host registry list|describe` show what is installed and what each node may do.

mod common;

use common::TestHome;
use serde_json::json;

#[test]
fn list_shows_every_type_with_origin_and_capabilities() {
    let home = TestHome::new();
    let run = home.run_args(&["registry", "list", "--output-format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    let plugins = report["plugins"].as_array().unwrap();
    let types: Vec<&str> = plugins
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "code",
            "copy-file",
            "delete-file",
            "echo",
            "hostile",
            "http",
            "llm",
            "mcp",
            "move-file",
            "read-file",
            "shell",
            "workflow",
            "write-file"
        ]
    );
    let workflow = plugins.iter().find(|p| p["type"] == "workflow").unwrap();
    assert_eq!(workflow["origin"], "builtin");
    let write = plugins.iter().find(|p| p["type"] == "write-file").unwrap();
    assert_eq!(write["capabilities"], json!(["fs"]));
    let shell = plugins.iter().find(|p| p["type"] == "shell").unwrap();
    assert_eq!(shell["origin"], "builtin");
    assert_eq!(shell["capabilities"], json!(["process"]));
    assert_eq!(shell["denied_capabilities"], json!([]));
    let hostile = plugins.iter().find(|p| p["type"] == "hostile").unwrap();
    assert_eq!(hostile["origin"], "user");
    assert_eq!(hostile["capabilities"], json!(["process"]));
    assert_eq!(hostile["denied_capabilities"], json!(["process"]));
    let echo = plugins.iter().find(|p| p["type"] == "echo").unwrap();
    assert_eq!(echo["capabilities"], json!([]));

    let text = home.run_args(&["registry", "list"]);
    assert!(
        text.stdout.contains("[process (denied)]"),
        "{}",
        text.stdout
    );
}

#[test]
fn describe_shows_params_and_outputs() {
    let home = TestHome::new();
    let run = home.run_args(&["registry", "describe", "shell"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("shell: Run a shell command."),
        "{}",
        run.stdout
    );
    assert!(run
        .stdout
        .contains("command (string, required): Command line, run with sh -c"));
    assert!(run.stdout.contains("exit_code (int, required)"));
    assert!(
        run.stdout.contains("capabilities: process"),
        "{}",
        run.stdout
    );

    let run = home.run_args(&["registry", "describe", "shel"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr.trim(),
        "error: Unknown node type: 'shel'. Did you mean: shell?"
    );
}
