//! Workflows end to end: data between nodes, inputs, outputs, templates, edges and batches.

mod common;

use common::TestHome;
use serde_json::json;

#[test]
fn three_shell_nodes_pipe_data_with_inputs_and_declared_outputs() {
    let home = TestHome::new();
    let example = common::repo_root().join("examples/word-count.json");
    let run = home
        .command()
        .args([
            "run",
            example.to_str().unwrap(),
            "text=b a B c a b",
            "top=2",
        ])
        .args(["--output-format", "json"])
        .output()
        .unwrap();
    let run = common::Run::from(run);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "succeeded");
    assert_eq!(report["outputs"]["top_words"], "b: 3\na: 2");
    let ids: Vec<&str> = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["split", "count", "report"]);
    for node in report["nodes"].as_array().unwrap() {
        assert_eq!(node["status"], "succeeded");
        assert!(node["duration_ms"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn text_output_prints_a_single_output_plainly_and_uses_input_defaults() {
    let home = TestHome::new();
    let example = common::repo_root().join("examples/word-count.json");
    let run = home.run_args(&["run", example.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "the: 3\nbrown: 1\ndog: 1\n");
}

#[test]
fn a_whole_string_template_keeps_its_json_type_and_mixed_text_becomes_a_string() {
    let home = TestHome::new();
    let workflow = json!({
        "ir_version": "0.1.0",
        "inputs": {"count": {"type": "integer"}, "flags": {"type": "object"}},
        "nodes": [
            {"id": "source", "type": "shell", "params": {"command": "echo '{\"items\": [{\"id\": 41}, {\"id\": 42}]}'"}},
            {"id": "echo", "type": "echo", "params": {
                "count": "${count}",
                "flags": "${flags}",
                "second_id": "${source.stdout.items[1].id}",
                "nested": {"list": ["${count}", "n=${count} f=${flags}"]},
                "escaped": "$${count}",
                "shell_form": "${#arr[@]} ${v:-x}"
            }}
        ],
        "edges": [{"from": "source", "to": "echo"}],
        "outputs": {"echoed": {"source": "${echo}"}}
    });
    let run = home.run_json(&workflow, &["count=3", r#"flags={"a":true}"#]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let echoed = &run.report()["outputs"]["echoed"];
    assert_eq!(echoed["count"], json!(3));
    assert_eq!(echoed["flags"], json!({"a": true}));
    assert_eq!(echoed["second_id"], json!(42));
    assert_eq!(
        echoed["nested"],
        json!({"list": [3, "n=3 f={\"a\": true}"]})
    );
    assert_eq!(echoed["escaped"], "${count}");
    assert_eq!(echoed["shell_form"], "${#arr[@]} ${v:-x}");
}

#[test]
fn edges_route_on_the_action_a_node_returns() {
    let home = TestHome::new();
    let workflow = json!({
        "ir_version": "0.1.0",
        "inputs": {"route": {"type": "string"}},
        "nodes": [
            {"id": "decide", "type": "echo", "params": {"action": "${route}"}},
            {"id": "left", "type": "echo", "params": {"side": "left"}},
            {"id": "right", "type": "echo", "params": {"side": "right"}}
        ],
        "edges": [
            {"from": "decide", "to": "left", "action": "go_left"},
            {"from": "decide", "to": "right", "action": "go_right"}
        ]
    });
    for (route, ran) in [("go_left", "left"), ("go_right", "right")] {
        let run = home.run_json(&workflow, &[&format!("route={route}")]);
        assert_eq!(run.code, 0, "{}", run.stdout);
        let nodes = run.report()["nodes"].clone();
        assert_eq!(nodes.as_array().unwrap().len(), 2);
        assert_eq!(nodes[0]["action"], route);
        assert_eq!(nodes[1]["id"], ran);
    }
}

#[test]
fn a_failing_node_follows_its_error_edge_and_writes_error_in_its_namespace() {
    let home = TestHome::new();
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "fail", "type": "shell", "params": {"command": "echo oops >&2; exit 3"}},
            {"id": "handle", "type": "echo", "params": {"saw": "${fail.error}"}}
        ],
        "edges": [{"from": "fail", "to": "handle", "action": "error"}],
        "outputs": {"saw": {"source": "${handle.saw}"}}
    });
    let run = home.run_json(&workflow, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let report = run.report();
    assert_eq!(report["nodes"][0]["status"], "failed");
    assert_eq!(report["nodes"][0]["error"]["category"], "command_failed");
    assert_eq!(
        report["outputs"]["saw"],
        "Command failed with exit code 3: oops"
    );
}

#[test]
fn an_unhandled_node_error_fails_the_run_with_that_error() {
    let home = TestHome::new();
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "fail", "type": "shell", "params": {"command": "exit 7"}},
            {"id": "never", "type": "echo", "params": {}}
        ],
        "edges": [{"from": "fail", "to": "never"}]
    });
    let run = home.run_json(&workflow, &[]);
    assert_eq!(run.code, 1);
    let report = run.report();
    assert_eq!(report["status"], "failed");
    assert_eq!(report["nodes"].as_array().unwrap().len(), 1);
    assert_eq!(report["error"]["node_id"], "fail");
    assert_eq!(report["error"]["category"], "command_failed");
    assert_eq!(report["error"]["fixable"], true);
}

#[test]
fn batch_runs_the_node_once_per_item() {
    let home = TestHome::new();
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "list", "type": "shell", "params": {"command": "echo '[\"a\", \"b\", \"c\"]'"}},
            {"id": "shout", "type": "shell",
             "batch": {"items": "${list.stdout}", "as": "letter"},
             "params": {"command": "printf '%s%s' \"$L\" \"$I\" | tr a-z A-Z", "env": {"L": "${letter}", "I": "${__index__}"}}}
        ],
        "edges": [{"from": "list", "to": "shout"}],
        "outputs": {"results": {"source": "${shout.results}"}, "count": {"source": "${shout.count}"}}
    });
    let run = home.run_json(&workflow, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let outputs = &run.report()["outputs"];
    assert_eq!(outputs["count"], 3);
    let stdouts: Vec<&str> = outputs["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["stdout"].as_str().unwrap())
        .collect();
    assert_eq!(stdouts, ["A0", "B1", "C2"]);
}

#[test]
fn batch_continue_collects_errors_and_fail_fast_stops() {
    let home = TestHome::new();
    let workflow = |mode: &str| {
        json!({
            "ir_version": "0.1.0",
            "nodes": [{"id": "each", "type": "shell",
                "batch": {"items": [0, 1, 0], "error_handling": mode},
                "params": {"command": "exit ${item}"}}],
            "outputs": {"errors": {"source": "${each.error_count}"}}
        })
    };
    let run = home.run_json(&workflow("continue"), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.report()["outputs"]["errors"], 1);
    let run = home.run_json(&workflow("fail_fast"), &[]);
    assert_eq!(run.code, 1);
    assert!(run.report()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Batch 'each' failed at item [1]"));
}

#[test]
fn start_node_and_piped_stdin_input_are_honoured() {
    let home = TestHome::new();
    let workflow = json!({
        "ir_version": "0.1.0",
        "inputs": {"data": {"type": "string", "stdin": true}},
        "start_node": "second",
        "nodes": [
            {"id": "first", "type": "echo", "params": {}},
            {"id": "second", "type": "shell", "params": {"command": "wc -l", "stdin": "${data}"}}
        ],
        "outputs": {"lines": {"source": "${second.stdout}"}}
    });
    let path = home.workflow("stdin.json", &workflow);
    let mut child = home
        .command()
        .args(["run", path.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"1\n2\n3\n").unwrap();
    let run = common::Run::from(child.wait_with_output().unwrap());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "3");
}

/// The issue's check: 8 items of 0.2 s in parallel take well under the 1.6 s they take one
/// after another, come back in item order, and a failing item behaves per error_handling.
#[test]
fn a_parallel_batch_runs_items_at_once_and_keeps_item_order() {
    let home = TestHome::new();
    let workflow = |mode: &str| {
        json!({
            "nodes": [{"id": "each", "type": "shell",
                "batch": {"items": [1, 2, 3, 4, 5, 6, 7, 8], "parallel": true,
                          "max_concurrent": 8, "error_handling": mode},
                // Later items finish first; item 5 fails.
                "params": {"command": "sleep 0.2; sleep 0.0$((9 - ${item})); [ ${item} != 5 ] && echo ${item}"}}],
            "outputs": {"results": {"source": "${each.results}"}, "errors": {"source": "${each.errors}"}}
        })
    };
    let run = home.run_json(&workflow("continue"), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let report = run.report();
    let node_ms = report["nodes"][0]["duration_ms"].as_f64().unwrap();
    assert!(node_ms < 500.0, "8 x 0.2 s in parallel took {node_ms} ms");
    let stdouts: Vec<&str> = report["outputs"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["stdout"].as_str().unwrap())
        .collect();
    assert_eq!(stdouts, ["1", "2", "3", "4", "6", "7", "8"]);
    assert_eq!(report["outputs"]["errors"][0]["index"], 4);
    assert_eq!(
        report["warnings"][0],
        "Batch 'each': 1 error(s) out of 8 items"
    );

    let run = home.run_json(&workflow("fail_fast"), &[]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let report = run.report();
    assert!(report["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Batch 'each' failed at item [4]"));
    assert!(report["nodes"][0]["duration_ms"].as_f64().unwrap() < 500.0);
}

/// The built-in components ship inside the binary: a copy of it in an empty directory runs a
/// workflow from another directory, with no PFLOW_BUILTIN_PLUGINS and nothing beside it.
#[test]
fn a_copied_binary_runs_a_workflow_from_anywhere() {
    let home = TestHome::new();
    let bin_dir = tempfile::tempdir().unwrap();
    let binary = bin_dir.path().join("pflow-host");
    std::fs::copy(env!("CARGO_BIN_EXE_pflow-host"), &binary).unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("hello.pflow.md"),
        "# Hello\n\nSays hello.\n\n## Steps\n\n### greet\n\nGreets.\n\n- type: shell\n\n```shell command\necho hello from a copy\n```\n",
    )
    .unwrap();
    let output = std::process::Command::new(&binary)
        .args(["run", "hello.pflow.md"])
        .current_dir(work.path())
        .env("PFLOW_HOME", home.path())
        .env_remove("PFLOW_BUILTIN_PLUGINS")
        .env_remove("PFLOW_PLUGIN_PATH")
        .output()
        .unwrap();
    let run = common::Run::from(output);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "hello from a copy");
}

/// Nesting is bounded by the `workflow` node's max_depth; the child's failure is the node's,
/// naming the child.
#[test]
fn nested_workflows_stop_at_max_depth() {
    let home = TestHome::new();
    let dir = tempfile::tempdir().unwrap();
    let child = |name: &str, body: serde_json::Value| {
        std::fs::write(dir.path().join(name), body.to_string()).unwrap();
    };
    child(
        "leaf.json",
        json!({"nodes": [{"id": "say", "type": "shell", "params": {"command": "echo leaf"}}],
               "outputs": {"said": {"source": "${say.stdout}"}}}),
    );
    child(
        "middle.json",
        json!({"nodes": [{"id": "down", "type": "workflow", "params": {"workflow": "./leaf.json"}}],
               "outputs": {"said": {"source": "${down.said}"}}}),
    );
    let top = |max_depth: u64| {
        json!({"nodes": [{"id": "nest", "type": "workflow",
                          "params": {"workflow": "./middle.json", "max_depth": max_depth}}],
               "outputs": {"said": {"source": "${nest.said}"}}})
    };
    let run = |workflow: serde_json::Value| {
        let path = dir.path().join("top.json");
        std::fs::write(&path, workflow.to_string()).unwrap();
        home.run_args(&["run", path.to_str().unwrap(), "--output-format", "json"])
            .report()
    };
    assert_eq!(run(top(10))["outputs"]["said"], "leaf");
    let too_deep = run(top(1));
    assert_eq!(too_deep["error"]["category"], "max_depth", "{too_deep}");
}

/// `pflow-host NAME key=value` and `run NAME` run a saved workflow (either format), as
/// `pflow NAME` does; a request that names no workflow still goes to the planner.
#[test]
fn a_saved_workflow_runs_by_name() {
    let home = TestHome::new();
    let saved = home.path().join("workflows");
    std::fs::create_dir_all(&saved).unwrap();
    std::fs::write(
        saved.join("shout.pflow.md"),
        "# Shout\n\nUpper-cases a word.\n\n## Inputs\n\n### word\n\nThe word.\n\n- type: string\n\n## Steps\n\n### up\n\nUpper-cases it.\n\n- type: shell\n- command: echo ${word} | tr a-z A-Z\n",
    )
    .unwrap();
    let bare = home.run_args(&["shout", "word=hey"]);
    assert_eq!(bare.code, 0, "{}", bare.stderr);
    assert_eq!(bare.stdout.trim(), "HEY");
    let run = home.run_args(&["run", "shout", "word=you"]);
    assert_eq!(run.stdout.trim(), "YOU", "{}", run.stderr);
    // Not a saved workflow: planning, which needs a model here.
    let request = home.run_args(&["shout", "louder"]);
    assert_ne!(request.code, 0);
}

/// The library: save (either format), list with run counts, describe, history, delete.
#[test]
fn the_library_saves_lists_describes_and_counts_runs() {
    let home = TestHome::new();
    let examples = common::repo_root().join("examples");
    let md = examples.join("word-stats.pflow.md");
    let json = examples.join("word-count.json");
    let work = tempfile::tempdir().unwrap();
    assert_eq!(home.run_args(&["save", md.to_str().unwrap()]).code, 0);
    let saved = home.run_args(&[
        "save",
        json.to_str().unwrap(),
        "--name",
        "top-words",
        "--description",
        "Top words",
    ]);
    assert_eq!(saved.code, 0, "{}", saved.stderr);
    assert_eq!(
        home.run_args(&["save", json.to_str().unwrap(), "--name", "top-words"])
            .code,
        2
    );
    let ran = home
        .command()
        .args(["word-stats", "report_path=out.txt"])
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let list = home.run_args(&["list", "--output-format", "json"]).report();
    let runs: Vec<(String, u64)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["name"].as_str().unwrap().to_string(),
                w["run_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [("top-words".to_string(), 0), ("word-stats".to_string(), 1)]
    );
    let described = home.run_args(&["describe", "top-words"]);
    assert!(
        described.stdout.starts_with("top-words: Top words"),
        "{}",
        described.stdout
    );
    assert!(
        described.stdout.contains("run: pflow-host top-words"),
        "{}",
        described.stdout
    );
    let history = home
        .run_args(&["history", "word-stats", "--output-format", "json"])
        .report();
    assert_eq!(history[0]["status"], "succeeded", "{history}");
    assert_eq!(home.run_args(&["delete", "top-words"]).code, 0);
    assert_eq!(home.run_args(&["describe", "top-words"]).code, 2);
}

/// `probe` runs one node dry by default: a shell node that writes a file leaves no file, and
/// its output's paths and values can be read back by the execution id.
#[test]
fn a_dry_probe_leaves_no_file_and_its_fields_can_be_read() {
    let home = TestHome::new();
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("probed.txt");
    let command = format!(
        "command=echo '{{\"items\": [{{\"id\": 7}}]}}'; echo x > {}",
        target.display()
    );
    let probe = home
        .run_args(&["probe", "shell", &command, "--output-format", "json"])
        .report();
    assert_eq!(probe["mode"], "dry", "{probe}");
    assert!(!target.exists(), "a dry probe wrote {}", target.display());
    let paths: Vec<&str> = probe["paths"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["path"].as_str())
        .collect();
    assert!(paths.contains(&"probe.stdout.items[0].id"), "{paths:?}");
    let id = probe["execution_id"].as_str().unwrap();
    let read = home.run_args(&[
        "read-fields",
        id,
        "probe.stdout.items[0].id",
        "--output-format",
        "json",
    ]);
    assert_eq!(
        read.report()["probe.stdout.items[0].id"],
        7,
        "{}",
        read.stderr
    );
    let live = home.run_args(&["probe", "shell", &command, "--live"]);
    assert_eq!(live.code, 0, "{}", live.stderr);
    assert!(target.exists());
}
