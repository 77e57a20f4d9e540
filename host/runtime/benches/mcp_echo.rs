//! 100 sequential `echo` calls to one stdio MCP server (server-everything), through the mcp
//! node (a fresh sandboxed instance per call, as a workflow runs it) and directly through the
//! host's MCP client, in the same run against the same server. Prints the median per call and
//! what the node adds (the target: at most 1 ms).

use pflow_runtime::capabilities::{Capability, Grants};
use pflow_runtime::mcp::{McpSessions, ServerConfig};
use pflow_runtime::registry::Origin;
use pflow_runtime::sandbox::Execution;
use pflow_runtime::Limits;
mod support;

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CALLS: usize = 100;

fn main() {
    let root = support::repo_root();
    let server =
        root.join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        server.exists(),
        "run `just test-peers` before this benchmark"
    );

    let config = ServerConfig {
        command: Some("node".to_string()),
        args: vec![server.to_string_lossy().into_owned(), "stdio".to_string()],
        ..ServerConfig::default()
    };
    let sessions = Arc::new(
        McpSessions::new(
            BTreeMap::from([("everything".to_string(), config)]),
            vec!["*".to_string()],
            Default::default(),
        )
        .expect("MCP runtime"),
    );
    let never = AtomicBool::new(false);
    let arguments: Map<String, Value> = json!({"message": "hello"}).as_object().cloned().unwrap();
    let direct_call = || {
        let deadline = Instant::now() + Duration::from_secs(30);
        let result = sessions
            .call("everything", "echo", arguments.clone(), deadline, &never)
            .expect("echo");
        assert!(!result.is_error);
    };
    direct_call(); // starts the server

    let support::Loaded {
        sandbox,
        registry,
        cache: _cache,
    } = support::load_plugins("plugins", "mcp.wasm", Origin::Builtin);
    let (pre, _) = registry
        .get("mcp")
        .expect("mcp plugin")
        .prepared(&sandbox)
        .unwrap();
    let exec = Execution {
        node_id: "say",
        node_type: "mcp-everything-echo",
        limits: Limits::default(),
        grants: Grants::of([Capability::Mcp]),
        capabilities: pflow_runtime::capabilities::CapabilityContexts {
            mcp: Some(sessions.clone()),
            ..Default::default()
        },
        dry: None,
        cancel: Default::default(),
    };
    let params: Map<String, Value> = json!({
        "message": "hello",
        "__mcp_server": "everything",
        "__mcp_tool": "echo",
        "__mcp_arguments": ["message"]
    })
    .as_object()
    .cloned()
    .unwrap();
    let node_call = || {
        let outcome = sandbox.run(pre, &exec, &params).expect("the mcp node runs");
        assert_eq!(outcome.outputs["result"], "Echo: hello");
    };
    let (direct, node) = support::interleaved_medians(10, CALLS, direct_call, node_call);
    println!(
        "mcp_echo: {CALLS} sequential echo calls to server-everything (stdio), median per call: \
         direct client {:.3} ms, mcp node {:.3} ms, the node adds {:.3} ms; target <= 1 ms",
        support::ms(direct),
        support::ms(node),
        support::ms(node.saturating_sub(direct)),
    );
    sessions.shutdown();
}
