//! The agent tools' speed (issue 13's targets):
//! - `tools/call workflow_validate` (static) on a 20-node workflow through the stdio MCP
//!   server: median round trip, target <= 2 ms;
//! - `find` over 1,000 saved workflows: target <= 10 ms (in the library, and as a whole
//!   `pflow-host find` process);
//! - a dry `probe` of a shell node: target <= 30 ms (through the MCP server, and as a whole
//!   `pflow-host probe` process).

use pflow_planner::library::WorkflowLibrary;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let plugins = root.join("target/plugins");
    assert!(
        plugins.join("shell.wasm").exists(),
        "run `just plugins` before this benchmark"
    );
    let home = tempfile::tempdir().expect("temp dir");
    let pflow_host = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pflow-host"));
        command
            .env("PFLOW_HOME", home.path())
            .env("PFLOW_BUILTIN_PLUGINS", &plugins)
            .env_remove("PFLOW_PLUGIN_PATH")
            .stderr(Stdio::null());
        command
    };

    let mut server = Server::start(pflow_host());
    let workflow = twenty_nodes();
    let validate = json!({"name": "workflow_validate", "arguments": {"workflow": workflow}});
    let result = server.call(&validate);
    assert_eq!(result["structuredContent"]["valid"], true, "{result}");
    let round_trips = median_of(500, || {
        server.call(&validate);
    });
    report(
        "mcp_validate",
        "tools/call workflow_validate (static), 20-node workflow, stdio server",
        &round_trips,
        "<= 2 ms",
    );

    let probe = json!({"name": "probe", "arguments": {"type": "shell", "params": {"command": "echo '{\"a\": [1, 2]}' > out.json && cat out.json"}}});
    let result = server.call(&probe);
    assert_eq!(result["structuredContent"]["mode"], "dry", "{result}");
    assert_eq!(
        result["structuredContent"]["status"], "succeeded",
        "{result}"
    );
    let probes = median_of(30, || {
        server.call(&probe);
    });
    report(
        "mcp_probe",
        "tools/call probe of a shell node (dry), stdio server",
        &probes,
        "<= 30 ms",
    );
    drop(server);
    let cli_probes = median_of(20, || {
        let status = pflow_host()
            .args(["probe", "shell", "command=echo hi > out.txt"])
            .stdout(Stdio::null())
            .status()
            .expect("pflow-host starts");
        assert!(status.success());
    });
    report(
        "cli_probe",
        "pflow-host probe shell (dry) as a whole process, warm cache",
        &cli_probes,
        "<= 30 ms",
    );

    let library = WorkflowLibrary::new(home.path().join("workflows"));
    for i in 0..1000 {
        let (name, description, ir) = saved_workflow(i);
        library
            .save(&name, &description, &ir, None)
            .expect("save a workflow");
    }
    let query = "fetch the open issues of a repository and summarise them";
    let best = library.find(query);
    assert!(!best.is_empty());
    let finds = median_of(30, || {
        library.find(query);
    });
    report(
        "find_library",
        "WorkflowLibrary::find over 1,000 saved workflows",
        &finds,
        "<= 10 ms",
    );
    let cli_finds = median_of(20, || {
        let status = pflow_host()
            .args(["find", query])
            .stdout(Stdio::null())
            .status()
            .expect("pflow-host starts");
        assert!(status.success());
    });
    report(
        "find_cli",
        "pflow-host find over 1,000 saved workflows, as a whole process",
        &cli_finds,
        "<= 10 ms",
    );
}

/// A chain of 20 shell nodes, each reading the one before.
fn twenty_nodes() -> Value {
    let nodes: Vec<Value> = (0..20)
        .map(|i| {
            let command = if i == 0 {
                "echo ${topic}".to_string()
            } else {
                format!("echo step {i}: ${{n{}.stdout}}", i - 1)
            };
            json!({"id": format!("n{i}"), "type": "shell", "purpose": format!("step {i}"), "params": {"command": command}})
        })
        .collect();
    let edges: Vec<Value> = (1..20)
        .map(|i| json!({"from": format!("n{}", i - 1), "to": format!("n{i}")}))
        .collect();
    json!({
        "inputs": {"topic": {"type": "string", "required": true, "description": "What to echo"}},
        "nodes": nodes,
        "edges": edges,
        "outputs": {"last": {"source": "${n19.stdout}"}},
    })
}

/// One of 1,000 varied saved workflows.
fn saved_workflow(i: usize) -> (String, String, Value) {
    const VERBS: [&str; 10] = [
        "fetch",
        "summarise",
        "count",
        "translate",
        "archive",
        "list",
        "compare",
        "notify",
        "convert",
        "check",
    ];
    const THINGS: [&str; 10] = [
        "issues",
        "pull requests",
        "log files",
        "invoices",
        "web pages",
        "emails",
        "releases",
        "csv rows",
        "images",
        "tickets",
    ];
    let verb = VERBS[i % 10];
    let thing = THINGS[(i / 10) % 10];
    let name = format!("{verb}-{}-{i}", thing.replace(' ', "-"));
    let description = format!("{verb} the {thing} of a project, variant {i}");
    let ir = json!({
        "inputs": {"source": {"type": "string", "description": format!("where the {thing} are")}},
        "nodes": [
            {"id": "get", "type": if i.is_multiple_of(3) { "http" } else { "shell" }, "params": {"command": "echo ${source}", "url": "${source}"}},
            {"id": "work", "type": "llm", "params": {"prompt": format!("{verb} these {thing}: ${{get.stdout}}")}},
        ],
        "edges": [{"from": "get", "to": "work"}],
        "outputs": {"result": {"source": "${work.response}"}},
    });
    (name, description, ir)
}

fn median_of(runs: usize, mut once: impl FnMut()) -> Vec<Duration> {
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            once();
            started.elapsed()
        })
        .collect();
    samples.sort();
    samples
}

fn report(name: &str, what: &str, sorted: &[Duration], target: &str) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let n = sorted.len();
    println!(
        "{name}: {what}: median {:.3} ms (min {:.3} ms, max {:.3} ms, n = {n}); target {target}",
        ms(sorted[n / 2]),
        ms(sorted[0]),
        ms(sorted[n - 1]),
    );
}

/// `pflow-host mcp serve` on stdio, spoken to in JSON-RPC lines.
struct Server {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(mut command: Command) -> Server {
        let mut child = command
            .args(["mcp", "serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("pflow-host mcp serve starts");
        let mut server = Server {
            stdin: child.stdin.take().expect("stdin"),
            stdout: BufReader::new(child.stdout.take().expect("stdout")),
            child,
            next_id: 0,
        };
        server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}),
        );
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write to the server");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let read = self.stdout.read_line(&mut line).expect("read the server");
            assert!(read > 0, "the server closed its output");
            let message: Value = serde_json::from_str(&line).expect("JSON-RPC");
            if message["id"] == id {
                return message;
            }
        }
    }

    fn call(&mut self, params: &Value) -> Value {
        self.request("tools/call", params.clone())["result"].clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
