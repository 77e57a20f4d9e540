//! Hostile plugins are contained, each with its own category, and the run goes on; limits,
//! grants, Ctrl-C and the compiled-component cache behave as documented.

mod common;

use common::TestHome;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Runs the hostile plugin with `attack` under tight limits; an error edge leads to a node
/// that proves the run went on.
fn attack(home: &TestHome, attack: &str, sandbox: Value) -> Value {
    let workflow = json!({
        "ir_version": "0.1.0",
        "sandbox": sandbox,
        "nodes": [
            {"id": "attack", "type": "hostile", "params": {"attack": attack, "size_mb": 8}},
            {"id": "after", "type": "echo", "params": {"went_on": true}}
        ],
        "edges": [{"from": "attack", "to": "after", "action": "error"}],
        "outputs": {"went_on": {"source": "${after.went_on}"}}
    });
    let run = home.run_json(&workflow, &[]);
    assert_eq!(
        run.code, 0,
        "the run must go on after the attack: {}",
        run.stdout
    );
    assert_eq!(run.report()["outputs"]["went_on"], true);
    let node = run.node("attack");
    assert_eq!(node["status"], "failed");
    node["error"].clone()
}

fn tight() -> Value {
    json!({"fuel": 500_000_000u64, "memory_mb": 64, "timeout_seconds": 10, "output_mb": 1})
}

#[test]
fn an_infinite_loop_runs_out_of_fuel() {
    let error = attack(&TestHome::new(), "loop", tight());
    assert_eq!(error["category"], "fuel_exhausted");
    assert_eq!(error["source"], "sandbox");
    assert_eq!(error["fixable"], false);
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("500000000 units"));
}

#[test]
fn an_infinite_loop_with_fuel_to_spare_hits_the_wall_time_limit() {
    let started = Instant::now();
    let error = attack(
        &TestHome::new(),
        "loop",
        json!({"fuel": u64::MAX, "timeout_seconds": 0.3}),
    );
    assert_eq!(error["category"], "timeout");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("0.3 s wall-time limit"));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_memory_bomb_hits_the_memory_cap() {
    let error = attack(&TestHome::new(), "memory", tight());
    assert_eq!(error["category"], "memory_limit");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("64.0 MiB limit"));
}

#[test]
fn deep_recursion_traps() {
    let error = attack(&TestHome::new(), "recursion", tight());
    assert_eq!(error["category"], "trap");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("stack overflow"),
        "{error}"
    );
}

#[test]
fn a_panic_traps_with_the_plugins_message() {
    let error = attack(&TestHome::new(), "panic", tight());
    assert_eq!(error["category"], "trap");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("panicked at 'hostile plugin panicked on purpose'"),
        "{error}"
    );
}

#[test]
fn oversized_output_hits_the_output_cap() {
    let error = attack(&TestHome::new(), "huge_output", tight());
    assert_eq!(error["category"], "output_limit");
    // The report names the node, as for every other failure.
    assert_eq!(error["node_id"], "attack");
    assert_eq!(error["node_type"], "hostile");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("over the 1.0 MiB limit"),
        "{error}"
    );
}

#[test]
fn malformed_output_is_bad_output() {
    let error = attack(&TestHome::new(), "bad_json", tight());
    assert_eq!(error["category"], "bad_output");
    assert_eq!(error["node_id"], "attack");
    assert_eq!(error["sample"], "{not json");
}

#[test]
fn a_capability_that_was_not_granted_is_refused() {
    let error = attack(&TestHome::new(), "spawn", tight());
    assert_eq!(error["category"], "policy_denied");
    assert_eq!(error["attempted"], json!(["process"]));
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("plugins.grants.hostile"));
}

#[test]
fn a_capability_granted_in_the_settings_is_allowed() {
    let home = TestHome::new();
    home.write_settings(&json!({"plugins": {"grants": {"hostile": ["process"]}}}));
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "attack", "type": "hostile", "params": {"attack": "spawn"}}],
        "outputs": {"exit": {"source": "${attack.result}"}}
    });
    let run = home.run_json(&workflow, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.report()["outputs"]["exit"], 0);
}

#[test]
fn node_limits_override_workflow_limits() {
    let home = TestHome::new();
    let workflow = json!({
        "ir_version": "0.1.0",
        "sandbox": {"fuel": 1000},
        "nodes": [{"id": "attack", "type": "hostile", "params": {"attack": "loop"},
                   "sandbox": {"fuel": 50_000_000}}]
    });
    let run = home.run_json(&workflow, &[]);
    assert_eq!(run.report()["error"]["category"], "fuel_exhausted");
    assert!(run.report()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("50000000 units"));
}

#[test]
fn the_wall_time_limit_bounds_host_calls_and_kills_the_command() {
    let home = TestHome::new();
    let marker = home.path().join("survived");
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "slow", "type": "shell",
                   "params": {"command": format!("sleep 5; touch {}", marker.display())},
                   "sandbox": {"timeout_seconds": 0.5}}]
    });
    let started = Instant::now();
    let run = home.run_json(&workflow, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    let error = &run.report()["error"];
    assert_eq!(error["category"], "timeout");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("wall-time limit"));
    std::thread::sleep(Duration::from_secs(5));
    assert!(
        !marker.exists(),
        "the command's process group must be killed"
    );
}

#[test]
fn ctrl_c_stops_the_run_kills_the_command_and_exits_130() {
    let home = TestHome::new();
    let marker = home.path().join("survived");
    let started_marker = home.path().join("started");
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "slow", "type": "shell", "params": {"command": format!(
                "touch {}; sleep 3; touch {}", started_marker.display(), marker.display()
            )}},
            {"id": "never", "type": "echo", "params": {}}
        ],
        "edges": [{"from": "slow", "to": "never"}]
    });
    let path = home.workflow("slow.json", &workflow);
    let child = home
        .command()
        .args(["run", path.to_str().unwrap(), "--output-format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiting = Instant::now();
    while !started_marker.exists() {
        assert!(
            waiting.elapsed() < Duration::from_secs(30),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let run = common::Run::from(child.wait_with_output().unwrap());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(run.code, 130, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "cancelled");
    assert_eq!(report["nodes"].as_array().unwrap().len(), 1);
    assert_eq!(report["error"]["category"], "cancelled");
    std::thread::sleep(Duration::from_secs(3));
    assert!(!marker.exists(), "the command must be killed on Ctrl-C");
}

#[test]
fn the_second_run_uses_the_compiled_component_cache() {
    let home = TestHome::cold();
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "hello", "type": "shell", "params": {"command": "echo hi"}}]
    });
    let first = home.run_json(&workflow, &[]);
    assert_eq!(first.code, 0, "{}", first.stdout);
    assert_eq!(first.node("hello")["component_cache"], "compiled");

    let cache = home.path().join("cache/components");
    let engine_dirs: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert_eq!(engine_dirs.len(), 1, "one engine's cache");
    let engine_dir = engine_dirs[0].as_ref().unwrap().path();
    let compiled: Vec<_> = std::fs::read_dir(&engine_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    assert!(!compiled.is_empty());
    let written = std::fs::metadata(&compiled[0]).unwrap().modified().unwrap();

    let second = home.run_json(&workflow, &[]);
    assert_eq!(second.code, 0);
    assert_eq!(second.node("hello")["component_cache"], "hit");
    let after = std::fs::metadata(&compiled[0]).unwrap().modified().unwrap();
    assert_eq!(written, after, "the cached file was not rewritten");
}

#[test]
fn a_corrupt_cache_entry_is_recompiled() {
    let home = TestHome::cold();
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "hello", "type": "shell", "params": {"command": "echo hi"}}],
        "outputs": {"said": {"source": "${hello.stdout}"}}
    });
    assert_eq!(home.run_json(&workflow, &[]).code, 0);
    let cache = home.path().join("cache/components");
    for engine_dir in std::fs::read_dir(&cache).unwrap() {
        for file in std::fs::read_dir(engine_dir.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|x| x == "cwasm") {
                std::fs::write(&path, b"garbage").unwrap();
            }
        }
    }
    let run = home.run_json(&workflow, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.node("hello")["component_cache"], "compiled");
    assert_eq!(run.report()["outputs"]["said"], "hi");
}

#[test]
fn a_file_that_is_not_a_component_is_skipped_with_a_warning() {
    let home = TestHome::new();
    let plugins = home.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::write(plugins.join("broken.wasm"), b"\0asm not really").unwrap();
    let run = home.run_args(&["registry", "list"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("shell"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("broken.wasm: not a valid pflow component"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_node_sees_neither_the_hosts_environment_nor_its_files() {
    let home = TestHome::new();
    for (attack, nothing) in [("environment", json!([])), ("files", json!(false))] {
        let workflow = json!({
            "ir_version": "0.1.0",
            "nodes": [{"id": "look", "type": "hostile", "params": {"attack": attack}}],
            "outputs": {"found": {"source": "${look.result}"}}
        });
        let run = home.run_json(&workflow, &[]);
        assert_eq!(run.code, 0, "{}", run.stdout);
        assert_eq!(run.report()["outputs"]["found"], nothing, "{attack}");
    }
}
