//! pflow's shell node: params, outputs, and failures, through real processes.

mod common;

use common::TestHome;
use serde_json::{json, Value};

fn shell(home: &TestHome, params: Value) -> common::Run {
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "sh", "type": "shell", "params": params}],
        "outputs": {"out": {"source": "${sh}"}}
    });
    home.run_json(&workflow, &[])
}

#[test]
fn captures_stdout_stderr_and_exit_code() {
    let run = shell(
        &TestHome::new(),
        json!({"command": "echo out; echo err >&2"}),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        run.report()["outputs"]["out"],
        json!({
            "stdout": "out",
            "stdout_is_binary": false,
            "stderr": "err\n",
            "stderr_is_binary": false,
            "exit_code": 0,
            "command": "echo out; echo err >&2",
        })
    );
}

#[test]
fn structured_stdin_is_passed_as_json_and_text_as_is() {
    let home = TestHome::new();
    let run = shell(&home, json!({"command": "cat", "stdin": {"a": [1, 2]}}));
    // As pflow passes it: Python's json.dumps separators.
    assert_eq!(run.report()["outputs"]["out"]["stdout"], r#"{"a": [1, 2]}"#);
    let run = shell(&home, json!({"command": "cat", "stdin": "plain\ntext"}));
    assert_eq!(run.report()["outputs"]["out"]["stdout"], "plain\ntext");
}

#[test]
fn cwd_and_env_apply_to_the_command() {
    let home = TestHome::new();
    let dir = home.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let run = shell(
        &home,
        json!({"command": "pwd; echo \"$GREETING $COUNT\"", "cwd": dir, "env": {"GREETING": "hi", "COUNT": 2}}),
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        run.report()["outputs"]["out"]["stdout"],
        format!("{}\nhi 2", dir.display())
    );
}

#[test]
fn a_non_zero_exit_fails_with_stderr_unless_ignore_errors() {
    let home = TestHome::new();
    let run = shell(
        &home,
        json!({"command": "echo partial; echo 'no such thing' >&2; exit 4"}),
    );
    assert_eq!(run.code, 1);
    let error = &run.report()["error"];
    assert_eq!(error["category"], "command_failed");
    assert_eq!(
        error["message"],
        "Command failed with exit code 4: no such thing"
    );
    assert_eq!(error["sample"], "partial");

    let run = shell(&home, json!({"command": "exit 4", "ignore_errors": true}));
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.report()["outputs"]["out"]["exit_code"], 4);
}

#[test]
fn the_command_timeout_kills_it() {
    let run = shell(
        &TestHome::new(),
        json!({"command": "sleep 10", "timeout": 0.3}),
    );
    assert_eq!(run.code, 1);
    let error = &run.report()["error"];
    assert_eq!(error["category"], "timeout");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("the command's timeout"),
        "{error}"
    );
}

#[test]
fn missing_or_mistyped_params_are_fixable_bad_params() {
    let home = TestHome::new();
    // A missing param is refused before the run, with validate's words.
    let run = shell(&home, json!({"cmd": "ls"}));
    let error = &run.report()["error"];
    assert_eq!(error["category"], "invalid_workflow");
    assert_eq!(error["fixable"], true);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("is missing required parameter 'command'"),
        "{error}"
    );
    let run = shell(&home, json!({"command": "ls", "timeout": "soon"}));
    assert_eq!(
        run.report()["error"]["message"],
        "Parameter 'timeout' must be a non-negative number, got \"soon\"."
    );
}

#[test]
fn a_cwd_that_does_not_exist_is_reported() {
    let run = shell(
        &TestHome::new(),
        json!({"command": "true", "cwd": "/no/such/dir"}),
    );
    let error = &run.report()["error"];
    assert_eq!(error["category"], "command_failed");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("Cannot start 'sh'"),
        "{error}"
    );
}

#[test]
fn huge_output_is_capped() {
    let home = TestHome::new();
    let workflow = json!({
        "ir_version": "0.1.0",
        "sandbox": {"output_mb": 1},
        "nodes": [{"id": "sh", "type": "shell", "params": {"command": "head -c 5000000 /dev/zero | tr '\\0' x"}}]
    });
    let run = home.run_json(&workflow, &[]);
    // The host keeps 1 MiB, closes the pipe (tr gets SIGPIPE) and the node says why.
    let error = &run.report()["error"];
    assert_eq!(error["category"], "output_limit", "{error}");
    assert_eq!(error["node_id"], "sh");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("1048576 bytes kept, cut off in stdout"));
}

#[test]
fn strip_newline_false_keeps_stdout_as_written_and_binary_output_is_base64() {
    let home = TestHome::new();
    let kept = shell(
        &home,
        json!({"command": "printf 'a\\n\\n'", "strip_newline": false}),
    );
    assert_eq!(kept.report()["outputs"]["out"]["stdout"], "a\n\n");
    let binary = shell(&home, json!({"command": "printf '\\377\\000\\376'"}));
    let out = &binary.report()["outputs"]["out"];
    assert_eq!(out["stdout"], "/wD+");
    assert_eq!(out["stdout_is_binary"], true);
}
