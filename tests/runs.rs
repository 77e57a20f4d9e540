//! Checkpoints and resume, through the real binary: every run writes
//! `~/.pflow/runs/<run-id>/checkpoint.json` after each node, and `run --resume` goes on without
//! redoing what completed, after a failure, a Ctrl-C or a SIGKILL of the host.

mod common;

use common::{Run, TestHome};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// `append` adds a line to `file` (its runs can be counted), then `then` runs `command`.
fn workflow() -> Value {
    json!({
        "ir_version": "0.1.0",
        "inputs": {"file": {"type": "string"}, "command": {"type": "string"}},
        "nodes": [
            {"id": "append", "type": "shell", "params": {"command": "echo line >> \"${file}\"; echo appended"}},
            {"id": "then", "type": "shell", "params": {"command": "${command}"}}
        ],
        "edges": [{"from": "append", "to": "then"}],
        "outputs": {"out": {"source": "${then.stdout}"}}
    })
}

/// The `event` of every line of the run's trace.
fn trace_events(home: &TestHome, id: &str) -> Vec<String> {
    let path = home.path().join("runs").join(id).join("trace.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn lines(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .count()
}

fn checkpoint(home: &TestHome, id: &str) -> Value {
    let path = home.path().join("runs").join(id).join("checkpoint.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Starts the workflow with `command` as its second node and waits until `append` has written.
fn start_and_wait_for_append(home: &TestHome, file: &Path, command: &str) -> std::process::Child {
    let path = home.workflow("w.json", &workflow());
    let child = home
        .command()
        .args(["run", path.to_str().unwrap()])
        .arg(format!("file={}", file.display()))
        .arg(format!("command={command}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while lines(file) == 0 {
        assert!(Instant::now() < deadline, "append never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The checkpoint is written right after the node: give it the moment it takes.
    std::thread::sleep(Duration::from_millis(300));
    child
}

#[test]
fn a_failed_run_resumes_without_redoing_its_finished_nodes() {
    let home = TestHome::new();
    let file = home.path().join("lines");
    let path = home.workflow("w.json", &workflow());
    let file_input = format!("file={}", file.display());
    let failed = home.run_args(&["run", path.to_str().unwrap(), &file_input, "command=exit 3"]);
    assert_eq!(failed.code, 1);
    let id = failed
        .stderr
        .split("pflow-host run --resume ")
        .nth(1)
        .expect("the resume command is printed")
        .trim()
        .to_string();
    let saved = checkpoint(&home, &id);
    assert_eq!(saved["status"], "failed");
    assert_eq!(saved["__execution__"]["completed_nodes"], json!(["append"]));
    assert_eq!(saved["__execution__"]["failed_node"], "then");
    assert_eq!(
        saved["store"]["append"]["stdout"].as_str().map(str::trim),
        Some("appended")
    );

    let resumed = Run::from(
        home.command()
            .args([
                "run",
                "--resume",
                &id,
                "command=echo fixed",
                "--output-format",
                "json",
            ])
            .output()
            .unwrap(),
    );
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(resumed.node("append")["cached"], true);
    assert_eq!(
        resumed.report()["outputs"]["out"].as_str().map(str::trim),
        Some("fixed")
    );
    assert_eq!(resumed.report()["run_id"], id.as_str());
    assert_eq!(
        lines(&file),
        1,
        "append ran once across the failure and the resume"
    );
    assert_eq!(checkpoint(&home, &id)["status"], "succeeded");
    assert_eq!(
        trace_events(&home, &id),
        [
            "run_started",
            "node_started",
            "node_completed",
            "node_started",
            "node_failed",
            "run_finished",
            "run_started",
            "node_started",
            "node_cached",
            "node_started",
            "node_completed",
            "run_finished"
        ]
    );

    let list = home.run_args(&["runs", "list"]);
    assert!(
        list.stdout.contains(&id) && list.stdout.contains("succeeded"),
        "{}",
        list.stdout
    );
    let show = home.run_args(&["runs", "show", "last"]);
    assert!(
        show.stdout.contains("↻ append (shell) cached"),
        "{}",
        show.stdout
    );
    let missing = home.run_args(&["runs", "show", "nope"]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains(&format!("the latest: {id}")),
        "{}",
        missing.stderr
    );
}

#[test]
fn ctrl_c_mid_run_keeps_a_checkpoint_that_resumes() {
    let home = TestHome::new();
    let file = home.path().join("lines");
    let child = start_and_wait_for_append(&home, &file, "sleep 30");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    let id = Run::from(output).stderr;
    let id = id.split("--resume ").nth(1).unwrap().trim().to_string();
    let saved = checkpoint(&home, &id);
    assert_eq!(saved["status"], "cancelled");
    assert!(trace_events(&home, &id).contains(&"cancelled".to_string()));
    assert_eq!(saved["__execution__"]["completed_nodes"], json!(["append"]));

    let resumed = home.run_args(&["run", "--resume", "last", "command=echo done"]);
    assert_eq!(
        (resumed.code, resumed.stdout.trim()),
        (0, "done"),
        "{}",
        resumed.stderr
    );
    assert_eq!(lines(&file), 1);
}

#[test]
fn a_killed_host_leaves_an_intact_checkpoint_that_resumes() {
    let home = TestHome::new();
    let file = home.path().join("lines");
    let mut child = start_and_wait_for_append(&home, &file, "sleep 30");
    child.kill().unwrap();
    child.wait().unwrap();
    let list = home.run_args(&["runs", "list", "--output-format", "json"]);
    let runs: Value = serde_json::from_str(&list.stdout).unwrap();
    let run = &runs["runs"][0];
    assert_eq!(
        run["status"], "running",
        "killed mid-run: the last checkpoint says so"
    );
    assert_eq!(run["completed_nodes"], 1);

    let resumed = home.run_args(&["run", "--resume", "last", "command=echo after the crash"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(resumed.stdout.trim(), "after the crash");
    assert_eq!(lines(&file), 1);
    // No temporary file is left next to the checkpoint.
    let id = run["run_id"].as_str().unwrap();
    let mut entries: Vec<_> = std::fs::read_dir(home.path().join("runs").join(id))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    entries.sort();
    assert_eq!(entries, ["checkpoint.json", "trace.jsonl"]);
}

#[test]
fn a_bad_run_id_or_a_broken_checkpoint_is_a_clear_error() {
    let home = TestHome::new();
    for id in ["../../etc", "nope", "last"] {
        let run = home.run_args(&["run", "--resume", id]);
        assert_eq!(run.code, 2, "{id}: {}", run.stderr);
        assert!(
            run.stderr.starts_with(&format!("error: no run '{id}'")),
            "{id}: {}",
            run.stderr
        );
    }
    let dir = home.path().join("runs/1-1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("checkpoint.json"),
        "{\"run_id\": \"1-1\", \"status\": ",
    )
    .unwrap();
    let run = home.run_args(&["run", "--resume", "1-1"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("cannot read the checkpoint"),
        "{}",
        run.stderr
    );
    let list = home.run_args(&["runs", "list"]);
    assert_eq!(list.code, 0, "a broken checkpoint does not hide the others");
}
