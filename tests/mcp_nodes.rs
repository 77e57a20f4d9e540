//! MCP tools as workflow nodes, against real servers: server-everything and server-filesystem
//! from npm (stdio), a Streamable HTTP server and a misbehaving stdio server written with the
//! Python SDK. `just test-peers` installs them.

mod common;

use common::{alive, processes_marked, TestHome};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn peers() -> PathBuf {
    common::repo_root().join("tests/mcp")
}

fn npm_server(package: &str) -> String {
    let entry = peers().join(format!(
        "node_modules/@modelcontextprotocol/{package}/dist/index.js"
    ));
    assert!(
        entry.exists(),
        "{} is missing: run `just test-peers`",
        entry.display()
    );
    entry.to_string_lossy().into_owned()
}

/// A home with `servers` configured and synced.
fn home_with(servers: Value) -> TestHome {
    let home = TestHome::new();
    std::fs::write(
        home.path().join("mcp-servers.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    let sync = home.run_args(&["mcp", "sync"]);
    assert_eq!(
        sync.code, 0,
        "mcp sync failed: {}{}",
        sync.stdout, sync.stderr
    );
    home
}

fn everything() -> Value {
    everything_marked("none")
}

/// server-everything with `marker` in its environment, to find its processes later.
fn everything_marked(marker: &str) -> Value {
    json!({
        "command": "node",
        "args": [npm_server("server-everything"), "stdio"],
        "env": {"PFLOW_TEST_MARKER": marker}
    })
}

fn misbehaving(pid_file: &std::path::Path) -> Value {
    json!({
        "command": "python3",
        "args": [peers().join("misbehaving_server.py")],
        "env": {"PFLOW_TEST_PID_FILE": pid_file}
    })
}

#[test]
fn sync_lists_every_tool_as_a_node_type() {
    let home = home_with(json!({"everything": everything()}));
    let run = home.run_args(&["mcp", "tools", "--output-format", "json"]);
    assert_eq!(run.code, 0);
    let types: Vec<String> = run
        .report()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["type"].as_str().unwrap().to_string())
        .collect();
    for expected in [
        "mcp-everything-echo",
        "mcp-everything-get-sum",
        "mcp-everything-get-structured-content",
    ] {
        assert!(
            types.contains(&expected.to_string()),
            "{expected} not in {types:?}"
        );
    }
    let described = home.run_args(&["registry", "describe", "mcp-everything-get-sum"]);
    assert_eq!(described.code, 0, "{}", described.stderr);
    assert!(
        described.stdout.contains("a (float, required)"),
        "{}",
        described.stdout
    );
    // `registry list` shows the tools beside the components, and filters by words.
    let listed = home.run_args(&["registry", "list", "--filter", "everything sum"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let names: Vec<&str> = listed
        .stdout
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(names, ["mcp-everything-get-sum"], "{}", listed.stdout);
    let all = home
        .run_args(&["registry", "list", "--output-format", "json"])
        .report();
    let types: Vec<&str> = all["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["type"].as_str())
        .collect();
    assert!(
        types.contains(&"shell") && types.contains(&"mcp-everything-echo"),
        "{types:?}"
    );
}

#[test]
fn echo_and_get_sum_run_in_a_workflow() {
    let home = home_with(json!({"everything": everything()}));
    let workflow = json!({
        "ir_version": "0.1.0",
        "inputs": {"text": {"type": "string"}},
        "nodes": [
            {"id": "say", "type": "mcp-everything-echo", "params": {"message": "${text}"}},
            {"id": "add", "type": "mcp-everything-get-sum", "params": {"a": 2, "b": 3.5}}
        ],
        "edges": [{"from": "say", "to": "add"}],
        "outputs": {"echo": {"source": "${say.result}"}, "sum": {"source": "${add.result}"}}
    });
    let path = home.workflow("flow.json", &workflow);
    assert_eq!(home.run_args(&["validate", path.to_str().unwrap()]).code, 0);
    let run = home.run_json(&workflow, &["text=hello"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let outputs = &run.report()["outputs"];
    assert_eq!(outputs["echo"], "Echo: hello");
    assert!(
        outputs["sum"].as_str().unwrap().contains("5.5"),
        "{}",
        outputs["sum"]
    );
}

#[test]
fn a_wrong_argument_name_is_a_fixable_argument_error() {
    let home = home_with(json!({"everything": everything()}));
    let workflow = json!({"ir_version": "0.1.0", "nodes": [{"id": "say", "type": "mcp-everything-echo", "params": {"mesage": "hi"}}]});
    // At run time (here a dry one, which `run` would not reach: it validates first).
    let path = home.workflow("wrong.json", &workflow);
    let dry = home.run_args(&[
        "validate",
        path.to_str().unwrap(),
        "--runtime",
        "--output-format",
        "json",
    ]);
    let error = &dry.report()["runtime_errors"][0];
    assert_eq!(error["category"], "argument_error", "{}", dry.stdout);
    assert_eq!(error["fixable"], true);
    assert_eq!(error["attempted"], json!(["mesage"]));
    assert_eq!(error["available"], json!(["message"]));
    assert_eq!(home.run_json(&workflow, &[]).code, 2);
    // The validator sees it coming, from the tool's input schema.
    let validated = home.run_args(&["validate", path.to_str().unwrap()]);
    assert_eq!(validated.code, 1);
    assert!(
        validated
            .stdout
            .contains("is missing required parameter 'message'"),
        "{}",
        validated.stdout
    );
    assert!(
        validated.stdout.contains("Did you mean 'message'?"),
        "{}",
        validated.stdout
    );
}

#[test]
fn a_tool_error_routes_along_the_error_edge() {
    let home = TestHome::new();
    let pids = home.path().join("pids");
    let home = {
        std::fs::write(
            home.path().join("mcp-servers.json"),
            json!({"mcpServers": {"bad": misbehaving(&pids)}}).to_string(),
        )
        .unwrap();
        assert_eq!(home.run_args(&["mcp", "sync"]).code, 0);
        home
    };
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "try", "type": "mcp-bad-fail", "params": {"reason": "disk full"}},
            {"id": "fallback", "type": "echo", "params": {"why": "${try.error}"}}
        ],
        "edges": [{"from": "try", "to": "fallback", "action": "error"}],
        "outputs": {"why": {"source": "${fallback.why}"}}
    });
    let run = home.run_json(&workflow, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let node = run.node("try");
    assert_eq!(node["action"], "error");
    assert_eq!(node["error"]["category"], "tool_error");
    assert_eq!(node["error"]["fixable"], false);
    assert!(run.report()["outputs"]["why"]
        .as_str()
        .unwrap()
        .starts_with("The tool failed"));
}

#[test]
fn the_filesystem_server_reads_what_a_node_wrote_and_refuses_paths_outside_its_root() {
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    let home = home_with(
        json!({"fs": {"command": "node", "args": [npm_server("server-filesystem"), root_path]}}),
    );
    let workflow = json!({
        "ir_version": "0.1.0",
        "inputs": {"file": {"type": "string"}},
        "nodes": [
            {"id": "write", "type": "shell", "params": {"command": "printf 'written by a node' > \"$F\"", "env": {"F": "${file}"}}},
            {"id": "read", "type": "mcp-fs-read_text_file", "params": {"path": "${file}"}}
        ],
        "edges": [{"from": "write", "to": "read"}],
        "outputs": {"text": {"source": "${read.content}"}}
    });
    let inside = root_path.join("note.txt");
    let run = home.run_json(&workflow, &[&format!("file={}", inside.display())]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.report()["outputs"]["text"], "written by a node");

    let outside = home.path().join("outside.txt");
    let run = home.run_json(&workflow, &[&format!("file={}", outside.display())]);
    assert_eq!(run.code, 1);
    let error = &run.report()["error"];
    assert_eq!(error["node_id"], "read");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("outside allowed directories"),
        "{error}"
    );
}

struct HttpServer(Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_streamable_http_server_with_structured_results() {
    let port = free_port();
    let _server = HttpServer(
        Command::new("python3")
            .arg(peers().join("weather_http_server.py"))
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the weather server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let home = home_with(
        json!({"weather": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}),
    );
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "f", "type": "mcp-weather-forecast", "params": {"city": "Oslo", "days": 3}},
            {"id": "loud", "type": "mcp-weather-shout", "params": {"text": "${f.days[1]}"}}
        ],
        "edges": [{"from": "f", "to": "loud"}],
        "outputs": {"temperature": {"source": "${f.temperature}"}, "city": {"source": "${f.result.city}"}, "loud": {"source": "${loud.result}"}}
    });
    let run = home.run_json(&workflow, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        run.report()["outputs"],
        json!({"temperature": 21.5, "city": "Oslo", "loud": "RAIN"})
    );
    let tools = home
        .run_args(&["mcp", "tools", "weather", "--output-format", "json"])
        .report();
    let shout = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "shout")
        .unwrap()
        .clone();
    assert_eq!(shout["read_only"], true, "annotations are kept");
}

/// Running or sleeping; a zombie (killed, not yet reaped by whoever adopted it) is dead.
#[test]
fn a_crashing_and_a_hanging_server_are_node_errors_and_leave_no_process() {
    let home = TestHome::new();
    let pids = home.path().join("pids");
    let marker = format!("leftovers-{}", std::process::id());
    std::fs::write(
        home.path().join("mcp-servers.json"),
        json!({"mcpServers": {"bad": misbehaving(&pids), "everything": everything_marked(&marker)}}).to_string(),
    )
    .unwrap();
    assert_eq!(home.run_args(&["mcp", "sync"]).code, 0);
    for (tool, category) in [("crash", "mcp_unavailable"), ("hang", "timeout")] {
        // Both servers start in earlier nodes with the default time limit, so that a slow start
        // on a busy machine cannot be mistaken for the hang.
        let workflow = json!({
            "ir_version": "0.1.0",
            "nodes": [
                {"id": "warm", "type": "mcp-everything-echo", "params": {"message": "up"}},
                {"id": "warm_bad", "type": "mcp-bad-fail", "params": {"reason": "warming up"}},
                {"id": "call", "type": format!("mcp-bad-{tool}"), "params": {}, "sandbox": {"timeout_seconds": 2}}
            ],
            "edges": [{"from": "warm", "to": "warm_bad"}, {"from": "warm_bad", "to": "call", "action": "error"}]
        });
        let started = Instant::now();
        let run = home.run_json(&workflow, &[]);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{tool} took {:?}",
            started.elapsed()
        );
        assert_eq!(run.code, 1, "{}", run.stdout);
        assert_eq!(
            run.report()["error"]["category"],
            category,
            "{tool}: {}",
            run.stdout
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    let recorded = std::fs::read_to_string(&pids).unwrap();
    for pid in recorded
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
    {
        assert!(!alive(pid), "MCP server process {pid} outlived its run");
    }
    assert_eq!(
        processes_marked(&marker),
        Vec::<String>::new(),
        "server-everything left running"
    );
}

#[test]
fn workflows_may_only_call_servers_the_settings_allow() {
    let home = home_with(json!({"everything": everything()}));
    home.write_settings(&json!({"mcp": {"allowed_servers": ["weather"]}}));
    let workflow = json!({"ir_version": "0.1.0", "nodes": [{"id": "say", "type": "mcp-everything-echo", "params": {"message": "hi"}}]});
    let run = home.run_json(&workflow, &[]);
    assert_eq!(run.code, 1);
    let error = &run.report()["error"];
    assert_eq!(error["category"], "policy_denied");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("mcp.allowed_servers"));
}

fn runtime_validation(home: &TestHome, workflow: &Value) -> Value {
    let path = home.workflow("candidate.json", workflow);
    home.run_args(&[
        "validate",
        "--runtime",
        path.to_str().unwrap(),
        "--output-format",
        "json",
    ])
    .report()
}

#[test]
fn a_dry_run_calls_read_only_tools_only() {
    let home = home_with(json!({"everything": everything()}));
    let workflow = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "say", "type": "mcp-everything-echo", "params": {"message": "hi"}},
            {"id": "toggle", "type": "mcp-everything-toggle-simulated-logging", "params": {}}
        ],
        "edges": [{"from": "say", "to": "toggle"}]
    });
    let report = runtime_validation(&home, &workflow);
    assert_eq!(report["route"], "default", "{report}");
    assert_eq!(report["executed"], json!(["say"]));
    assert_eq!(report["unverified"][0]["node_id"], "toggle");
    assert_eq!(report["skipped"][0]["capability"], "mcp");
}

#[test]
fn an_mcp_argument_error_routes_runtime_fix() {
    let home = home_with(json!({"everything": everything()}));
    let workflow = json!({"ir_version": "0.1.0", "nodes": [{"id": "add", "type": "mcp-everything-get-sum", "params": {"a": 1, "b": "two"}}]});
    let report = runtime_validation(&home, &workflow);
    assert_eq!(report["route"], "runtime_fix", "{report}");
    assert_eq!(report["runtime_errors"][0]["category"], "argument_error");
    assert_eq!(report["runtime_errors"][0]["node_id"], "add");
}

#[test]
fn mcp_add_list_and_remove_edit_the_standard_configuration_file() {
    let home = TestHome::new();
    let add = home.run_args(&[
        "mcp",
        "add",
        "files",
        "--env",
        "ROOT=${HOME:-/}",
        "--",
        "npx",
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/tmp",
    ]);
    assert_eq!(add.code, 0, "{}", add.stderr);
    let add = home.run_args(&[
        "mcp",
        "add",
        "remote",
        "--url",
        "http://127.0.0.1:1/mcp",
        "--header",
        "Authorization=Bearer ${PFLOW_TEST_TOKEN:-anonymous}",
    ]);
    assert_eq!(add.code, 0, "{}", add.stderr);
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join("mcp-servers.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        config,
        json!({"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"ROOT": "${HOME:-/}"}},
            "remote": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${PFLOW_TEST_TOKEN:-anonymous}"}}
        }})
    );
    let list = home.run_args(&["mcp", "list"]);
    assert!(
        list.stdout.contains(
            "files  stdio npx -y @modelcontextprotocol/server-filesystem /tmp  [not synced]"
        ),
        "{}",
        list.stdout
    );
    assert!(
        list.stdout
            .contains("remote  http http://127.0.0.1:1/mcp  [not synced]"),
        "{}",
        list.stdout
    );
    // A server that cannot be reached fails its sync with a clear error, and the others go on.
    let sync = home.run_args(&["mcp", "sync", "remote"]);
    assert_eq!(sync.code, 1);
    assert!(
        sync.stderr
            .starts_with("error: remote: Cannot connect to MCP server 'remote'"),
        "{}",
        sync.stderr
    );
    let add = home.run_args(&[
        "mcp",
        "add",
        "secret",
        "--url",
        "http://127.0.0.1:1/mcp",
        "--header",
        "X-Key=${PFLOW_TEST_UNSET_KEY}",
    ]);
    assert_eq!(add.code, 0);
    let sync = home.run_args(&["mcp", "sync", "secret"]);
    assert_eq!(
        sync.stderr.trim(),
        "error: secret: MCP server 'secret': environment variable PFLOW_TEST_UNSET_KEY is not set"
    );
    assert_eq!(home.run_args(&["mcp", "remove", "files"]).code, 0);
    assert!(!home.run_args(&["mcp", "list"]).stdout.contains("files"));
    assert_eq!(home.run_args(&["mcp", "remove", "files"]).code, 2);
}
