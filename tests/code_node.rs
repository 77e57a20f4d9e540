//! The `code` node: pflow's interface (typed inputs, `result`, `stdout`, `stderr`, `next`),
//! errors that name the failing line, and CPython in the sandbox: no files, no network, no
//! environment, its `timeout` enforced by the host. The cases where pflow 0.16 and this host
//! must agree run in both, in `tests/differential/3[6-9]-code-*`.

mod common;

use common::{Run, TestHome};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn run_code(code: &str, inputs: Value, extra: Value) -> Run {
    let mut params = json!({"code": code, "inputs": inputs});
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    // A workflow input for the cases whose inputs use it (an unused one is a validation error).
    let workflow_inputs = if params.to_string().contains("${items}") {
        json!({"items": {"type": "array", "required": false, "default": [5, 3, 8, 1, 9]}})
    } else {
        json!({})
    };
    TestHome::new().run_json(
        &json!({
            "inputs": workflow_inputs,
            "nodes": [{"id": "c", "type": "code", "params": params}],
            "edges": [],
            "outputs": {
                "result": {"source": "${c.result}"},
                "stdout": {"source": "${c.stdout}"},
                "stderr": {"source": "${c.stderr}"}
            }
        }),
        &[],
    )
}

fn error_of(run: &Run) -> Value {
    assert_eq!(
        run.code, 1,
        "expected a failed run:\n{}\n{}",
        run.stdout, run.stderr
    );
    run.report()["error"].clone()
}

#[test]
fn slices_a_list_with_typed_inputs_and_captures_output() {
    let run = run_code(
        "import sys\ndata: list\ncount: int\nprint('kept', count)\nprint('warn', file=sys.stderr)\nresult: list = sorted(data)[:count]",
        json!({"data": "${items}", "count": 3}),
        json!({}),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let outputs = &run.report()["outputs"];
    assert_eq!(outputs["result"], json!([1, 3, 5]));
    assert_eq!(outputs["stdout"], "kept 3\n");
    assert_eq!(outputs["stderr"], "warn\n");
}

#[test]
fn a_type_mismatch_names_the_input_and_the_fix() {
    let error = error_of(&run_code(
        "data: list\nresult: list = data[:2]",
        json!({"data": "not a list"}),
        json!({}),
    ));
    assert_eq!(error["category"], "bad_params");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("Input 'data' expects list but received str"),
        "{message}"
    );
    assert!(message.contains("data: str"), "{message}");

    let error = error_of(&run_code(
        "x: int\nresult: int = x",
        json!({"y": 1}),
        json!({}),
    ));
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("missing type annotation in code: y"),
        "{error}"
    );

    let error = error_of(&run_code("result: dict = [1]", json!({}), json!({})));
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("Result declared as dict but code returned list"),
        "{error}"
    );
}

#[test]
fn a_syntax_error_names_its_line() {
    let error = error_of(&run_code(
        "data: list\ntotal = 0\nresult: int = (total +\n",
        json!({"data": [1]}),
        json!({}),
    ));
    assert_eq!(error["category"], "code_error");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("Python syntax error in code:"),
        "{message}"
    );
    assert!(
        message.contains("Location: line 3 in code block"),
        "{message}"
    );
    assert!(
        message.contains("Source: result: int = (total +"),
        "{message}"
    );
}

#[test]
fn an_exception_names_its_line_and_keeps_what_was_printed() {
    let error = error_of(&run_code(
        "data: list\nprint('before')\nresult: int = data[5]",
        json!({"data": [1, 2]}),
        json!({}),
    ));
    assert_eq!(error["category"], "code_error");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("IndexError: list index out of range"),
        "{message}"
    );
    assert!(
        message.contains("Location: line 3 in code block"),
        "{message}"
    );
    assert!(
        message.contains("Source: result: int = data[5]"),
        "{message}"
    );
    assert_eq!(error["sample"], "before\n");
}

#[test]
fn the_timeout_param_stops_a_busy_loop_and_a_sleep() {
    for code in [
        "n = 0\nwhile True:\n    n += 1\nresult: int = n",
        "import time\ntime.sleep(3600)\nresult: int = 1",
    ] {
        let started = Instant::now();
        // Fuel enough for minutes, so that the timeout is what stops it.
        let error = error_of(&TestHome::new().run_json(
            &json!({
                "nodes": [{"id": "c", "type": "code", "params": {"code": code, "timeout": 1},
                           "sandbox": {"fuel": 1_000_000_000_000u64}}],
                "edges": []
            }),
            &[],
        ));
        assert_eq!(error["category"], "timeout", "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("1.0 s wall-time limit")
                && error["message"].as_str().unwrap().contains("timeout param"),
            "{error}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{code}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn files_network_and_environment_are_refused() {
    std::env::set_var("PFLOW_TEST_SECRET", "do-not-leak");
    let error = error_of(&run_code(
        "result: str = open('/etc/passwd').read()",
        json!({}),
        json!({}),
    ));
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("No such file or directory: '/etc/passwd'"),
        "{message}"
    );
    assert!(
        message.contains("sandbox with no files, network"),
        "{message}"
    );
    assert!(!message.contains("root:"), "{message}");

    let error = error_of(&run_code(
        "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=2)\nresult: str = 'connected'",
        json!({}),
        json!({}),
    ));
    assert!(
        error["message"].as_str().unwrap().contains("gaierror"),
        "{error}"
    );

    let run = run_code(
        "import os\nresult: dict = {'env': dict(os.environ), 'cwd': os.path.exists('.')}",
        json!({}),
        json!({}),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.report()["outputs"]["result"],
        json!({"env": {}, "cwd": false})
    );
}

#[test]
fn the_standard_library_imports() {
    let run = run_code(
        "import statistics, collections, re, datetime, json, hashlib\nwords: list\ncounts = collections.Counter(words)\nresult: dict = {'mean': statistics.mean([1, 2, 3, 4]), 'top': counts.most_common(1)[0][0], 'digits': re.findall(r'\\d', 'a1b2'), 'year': datetime.date(2024, 5, 1).year, 'sha': hashlib.sha256(b'x').hexdigest()[:8]}",
        json!({"words": ["a", "b", "a"]}),
        json!({}),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.report()["outputs"]["result"],
        json!({"mean": 2.5, "top": "a", "digits": ["1", "2"], "year": 2024, "sha": "2d711642"})
    );
}

#[test]
fn next_routes_and_json_text_inputs_are_parsed() {
    let run = TestHome::new().run_json(
        &json!({
            "nodes": [
                {"id": "emit", "type": "shell", "params": {"command": "echo '{\"n\": 12}'"}},
                {"id": "c", "type": "code", "params": {
                    "code": "doc: dict\nnext: str = 'big' if doc['n'] > 10 else 'small'\nresult: int = doc['n']",
                    "inputs": {"doc": "${emit.stdout}"}}},
                {"id": "big", "type": "shell", "params": {"command": "echo big"}},
                {"id": "small", "type": "shell", "params": {"command": "echo small"}}
            ],
            "edges": [
                {"from": "emit", "to": "c"},
                {"from": "c", "to": "big", "action": "big"},
                {"from": "c", "to": "small", "action": "small"}
            ],
            "outputs": {"n": {"source": "${c.result}"}, "said": {"source": "${big.stdout}"}}
        }),
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["outputs"], json!({"n": 12, "said": "big"}));
}
