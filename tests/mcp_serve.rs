//! `pflow-host mcp serve` driven by real MCP clients: the MCP Python SDK's `ClientSession`
//! over stdio and Streamable HTTP (an agent's whole session, `tests/agents/session.py`), the
//! MCP Inspector's CLI, and raw JSON-RPC for what a client does badly: cancelling, going away
//! mid-run, sending garbage.

mod common;
#[path = "common/http_server.rs"]
mod http_server;

use common::{processes_marked, repo_root, TestHome};
use http_server::TestServer;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// `python3` with the home's environment, and the binary to serve with.
fn python_with(home: &TestHome) -> Command {
    let mut python = Command::new("python3");
    for (key, value) in home.command().get_envs() {
        match value {
            Some(value) => python.env(key, value),
            None => python.env_remove(key),
        };
    }
    python.env("PFLOW_HOST_BIN", env!("CARGO_BIN_EXE_pflow-host"));
    python
}

/// Runs `command` and gives its stdout; a failure shows both outputs.
fn stdout_of_success(command: &mut Command) -> String {
    let output = command.output().expect("the command starts");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Runs the agent session script with `transport`, against a real HTTP server.
fn python_session(transport: &str) {
    let home = TestHome::new();
    let server = TestServer::start();
    let scratch = tempfile::tempdir().unwrap();
    let stdout = stdout_of_success(
        python_with(&home)
            .arg(repo_root().join("tests/agents/session.py"))
            .arg(transport)
            .env("JSON_URL", server.url("/json"))
            .env("SCRATCH", scratch.path())
            .current_dir(scratch.path()),
    );
    assert!(
        stdout.contains("ok: 8. workflow_find finds it first"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_dir(scratch.path()).unwrap().count(),
        0,
        "the dry probe wrote into the directory"
    );
}

#[test]
fn an_agent_session_over_stdio_with_the_python_sdk() {
    python_session("stdio");
}

#[test]
fn an_agent_session_over_streamable_http_with_the_python_sdk() {
    python_session("http");
}

#[test]
fn an_http_client_that_closes_its_session_mid_run_leaves_no_process() {
    let home = TestHome::new();
    let marker = format!("mcp-http-close-{}", std::process::id());
    let stdout = stdout_of_success(
        python_with(&home)
            .arg(repo_root().join("tests/agents/http_session_close.py"))
            .arg(&marker),
    );
    assert!(
        stdout.contains("ok: closing the session killed"),
        "{stdout}"
    );
    assert_none_marked(&marker);
}

#[test]
fn the_inspector_cli_calls_a_tool() {
    let inspector = repo_root().join("tests/mcp/node_modules/.bin/mcp-inspector");
    assert!(
        inspector.exists(),
        "run `just test-peers` for the MCP Inspector"
    );
    let home = TestHome::new();
    let workflow = home.workflow(
        "hello.json",
        &json!({"nodes": [{"id": "a", "type": "shel", "params": {"command": "echo hi"}}]}),
    );
    let mut command = Command::new(inspector);
    command.arg("--cli");
    for (key, value) in home.command().get_envs() {
        if let Some(value) = value {
            command.arg("-e").arg(format!(
                "{}={}",
                key.to_string_lossy(),
                value.to_string_lossy()
            ));
        }
    }
    let stdout = stdout_of_success(
        command
            .args([env!("CARGO_BIN_EXE_pflow-host"), "mcp", "serve"])
            .args(["--method", "tools/call", "--tool-name", "workflow_validate"])
            .arg("--tool-arg")
            .arg(format!("workflow={}", workflow.display())),
    );
    let result: Value = serde_json::from_str(&stdout).unwrap();
    let report = &result["structuredContent"];
    assert_eq!(report["valid"], false, "{stdout}");
    assert!(
        report["errors"][0]["suggestion"]
            .as_str()
            .unwrap()
            .contains("Did you mean: shell?"),
        "the error suggests the right type: {stdout}"
    );
}

/// A server on stdio spoken to in raw JSON-RPC, one message per line.
struct RawClient {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: Receiver<Value>,
    next_id: u64,
}

impl RawClient {
    fn start(home: &TestHome) -> Self {
        let mut child = home
            .command()
            .args(["mcp", "serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, messages) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(message) = serde_json::from_str(&line) {
                    let _ = sender.send(message);
                }
            }
        });
        let mut server = RawClient {
            stdin: child.stdin.take(),
            child,
            messages,
            next_id: 0,
        };
        server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}),
        );
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn response(&self, id: u64) -> Value {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let message = self
                .messages
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no response to request {id}"));
            if message["id"] == id {
                return message;
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id)
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        response["result"].clone()
    }

    /// Closes stdin, as a client that goes away does, and waits for the server to exit.
    fn disconnect(mut self) -> std::process::ExitStatus {
        self.stdin = None;
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < until, "the server outlived its client");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn sleeper(marker: &str) -> Value {
    json!({"nodes": [{"id": "wait", "type": "shell", "params": {
        "command": "sleep 300", "env": {"PFLOW_TEST_MARKER": marker}
    }}]})
}

fn wait_for_marked(marker: &str) {
    let until = Instant::now() + Duration::from_secs(30);
    while processes_marked(marker).is_empty() {
        assert!(Instant::now() < until, "the marked command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_none_marked(marker: &str) {
    let until = Instant::now() + Duration::from_secs(5);
    while !processes_marked(marker).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(processes_marked(marker), Vec::<String>::new());
}

#[test]
fn a_client_that_disconnects_mid_run_leaves_no_process() {
    let home = TestHome::new();
    let mut server = RawClient::start(&home);
    let marker = format!("mcp-disconnect-{}", std::process::id());
    server.send_request(
        "tools/call",
        json!({"name": "workflow_execute", "arguments": {"workflow": sleeper(&marker), "live": true}}),
    );
    wait_for_marked(&marker);
    let status = server.disconnect();
    assert!(status.success(), "the server exits cleanly: {status}");
    assert_none_marked(&marker);
}

#[test]
fn a_cancelled_call_stops_its_run_and_the_server_goes_on() {
    let home = TestHome::new();
    let mut server = RawClient::start(&home);
    let marker = format!("mcp-cancel-{}", std::process::id());
    let id = server.send_request(
        "tools/call",
        json!({"name": "workflow_execute", "arguments": {"workflow": sleeper(&marker), "live": true}}),
    );
    wait_for_marked(&marker);
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": id, "reason": "the agent changed its mind"}}),
    );
    assert_none_marked(&marker);
    let found = server.call("registry_find", json!({"query": "shell command"}));
    assert_eq!(found["structuredContent"]["matches"][0]["type"], "shell");
    assert!(server.disconnect().success());
}

#[test]
fn bad_requests_and_a_crashing_node_are_answered_and_the_server_survives() {
    let home = TestHome::new();
    let mut server = RawClient::start(&home);
    // Not JSON at all, then an unknown tool, then arguments of the wrong shape.
    server.send(&json!("this is not a request"));
    let unknown = server.request("tools/call", json!({"name": "no_such_tool"}));
    assert!(unknown["error"]["message"]
        .as_str()
        .unwrap()
        .contains("workflow_execute"));
    let wrong = server.call("workflow_execute", json!({"workflow": 42}));
    assert_eq!(wrong["isError"], true);
    assert_eq!(wrong["structuredContent"]["category"], "bad_request");
    let crashed = server.call(
        "workflow_execute",
        json!({"workflow": {"nodes": [{"id": "boom", "type": "hostile", "params": {"attack": "panic"}}]}}),
    );
    assert_eq!(crashed["isError"], true, "{crashed}");
    assert_eq!(crashed["structuredContent"]["status"], "failed");
    assert_eq!(crashed["structuredContent"]["error"]["node_id"], "boom");
    let still = server.call("guide", json!({"topics": ["core"]}));
    assert!(still["content"][0]["text"].as_str().unwrap().contains("${"));
    assert!(server.disconnect().success());
}

#[test]
fn with_live_runs_off_every_execution_is_dry() {
    let home = TestHome::new();
    home.write_settings(&json!({"mcp_serve": {"allow_live": false}}));
    let mut server = RawClient::start(&home);
    let tools = server.request("tools/list", json!({}));
    let execute = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "workflow_execute")
        .unwrap()
        .clone();
    assert_eq!(execute["annotations"]["readOnlyHint"], true, "{execute}");

    let target = home.path().join("written-live.txt");
    let workflow = json!({"nodes": [{"id": "w", "type": "shell", "params": {
        "command": format!("echo yes > {}", target.display())
    }}]});
    let ran = server.call(
        "workflow_execute",
        json!({"workflow": workflow, "live": true}),
    );
    let run = &ran["structuredContent"];
    assert_eq!(run["mode"], "dry", "{run}");
    assert!(run["note"].as_str().unwrap().contains("allow_live"));
    assert!(!target.exists(), "a live run happened with live runs off");
    let probe = server.call(
        "probe",
        json!({"type": "shell", "params": {"command": format!("echo yes > {}", target.display())}, "live": true}),
    );
    assert_eq!(probe["structuredContent"]["mode"], "dry");
    assert!(!target.exists(), "a live probe happened with live runs off");
    assert!(server.disconnect().success());
}
