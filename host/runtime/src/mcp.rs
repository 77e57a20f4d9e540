//! MCP servers: their configuration (`mcp-servers.json`), the tools `sync` recorded
//! (`mcp-tools.json`), and the client sessions of one run. A server starts on first use, serves
//! every node of the run, and is shut down (everything it started killed, see
//! [`crate::confine`]) when the run ends; a server that dies or hangs, in its handshake or in a
//! call, becomes a node error within the node's time limit and is killed at once. Streamable
//! HTTP servers are reached under the same HTTP policy as the http node.

use crate::bindings::pflow::node::types::NodeError;
use crate::capabilities::http::{HttpClient, HttpPolicy};
use crate::confine::Confinement;
use crate::error::category;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a server may take to start and answer `initialize`, within the node's time.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// How long a server gets to exit by itself at the end of a run.
const GRACEFUL_CLOSE: Duration = Duration::from_secs(2);

/// `mcp-servers.json`: `{"mcpServers": {name: {command, args, env} | {type: "http", url, headers}}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct McpServersFile {
    #[serde(rename = "mcpServers", default)]
    pub servers: BTreeMap<String, ServerConfig>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerConfig {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl McpServersFile {
    /// The file, or no servers when there is none.
    pub fn load(path: &Path) -> Result<Self, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        crate::registry::write_atomically(path, text.as_bytes())
    }
}

/// `${VAR}` and `${VAR:-default}` from the environment.
pub fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inside = &rest[start + 2..start + end];
        let (name, default) = match inside.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inside, None),
        };
        match (std::env::var(name).ok().filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("environment variable {name} is not set")),
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// One tool as the server described it (the MCP `Tool` object: name, description,
/// inputSchema, outputSchema, annotations).
pub type ToolDescription = Value;

/// `mcp-tools.json`: the tools of each server at the last `sync`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolsFile {
    #[serde(default)]
    pub servers: BTreeMap<String, Vec<ToolDescription>>,
}

impl ToolsFile {
    pub fn load(path: &Path) -> Self {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        crate::registry::write_atomically(path, text.as_bytes())
    }
}

struct Session {
    service: RunningService<RoleClient, ()>,
    /// The server's processes, for stdio servers.
    process: Option<ServerProcess>,
}

/// A stdio server's leader and everything it starts.
struct ServerProcess {
    leader: i32,
    confinement: Confinement,
}

impl ServerProcess {
    /// Kills every process of the server and collects the leader's exit status, so that no
    /// zombie is left either.
    fn kill(&self) {
        self.confinement.kill(self.leader);
        for _ in 0..50 {
            // SAFETY: waitpid(2) on the leader, our child, without blocking.
            if unsafe { libc::waitpid(self.leader, std::ptr::null_mut(), libc::WNOHANG) } != 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The MCP sessions of one run (or one `mcp` command).
pub struct McpSessions {
    runtime: tokio::runtime::Runtime,
    servers: BTreeMap<String, ServerConfig>,
    allowed: Vec<String>,
    /// The policy Streamable HTTP servers are reached under.
    http_policy: HttpPolicy,
    live: Mutex<HashMap<String, Session>>,
}

/// What a tool call returned, in the shape of the WIT `tool-result`.
pub struct ToolResult {
    pub content: Value,
    pub structured: Option<Value>,
    pub is_error: bool,
}

impl McpSessions {
    pub fn new(
        servers: BTreeMap<String, ServerConfig>,
        allowed: Vec<String>,
        http_policy: HttpPolicy,
    ) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("pflow-mcp")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the MCP runtime: {e}"))?;
        Ok(McpSessions {
            runtime,
            servers,
            allowed,
            http_policy,
            live: Mutex::new(HashMap::new()),
        })
    }

    pub fn server_names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// Calls `tool` on `server`, starting the server if this run has not yet.
    pub fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        deadline: Instant,
        cancel: &AtomicBool,
    ) -> Result<ToolResult, NodeError> {
        self.check_policy(server)?;
        let peer = self.peer(server, deadline, cancel)?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let response = self.bounded(deadline, cancel, server, async move {
            peer.call_tool_once(params).await
        });
        let response = match response {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                let failure = service_error(server, tool, error);
                if failure.category == category::MCP_UNAVAILABLE {
                    self.forget(server);
                }
                return Err(failure);
            }
            Err(failure) => {
                // A server that hangs is not reused: the next node gets a fresh one.
                self.forget(server);
                return Err(failure);
            }
        };
        match response {
            CallToolResponse::Complete(result) => {
                let result = serde_json::to_value(&result).unwrap_or_default();
                Ok(ToolResult {
                    content: result.get("content").cloned().unwrap_or(Value::Array(Vec::new())),
                    structured: result.get("structuredContent").cloned(),
                    is_error: result.get("isError").and_then(Value::as_bool).unwrap_or(false),
                })
            }
            _ => Err(NodeError::new(
                "tool_error",
                format!("Tool '{tool}' on '{server}' asked for user input or started a task, which workflows do not support"),
                false,
            )),
        }
    }

    /// Every tool of `server`, all pages.
    pub fn list_tools(
        &self,
        server: &str,
        deadline: Instant,
        cancel: &AtomicBool,
    ) -> Result<Vec<ToolDescription>, NodeError> {
        let peer = self.peer(server, deadline, cancel)?;
        let tools = self
            .bounded(deadline, cancel, server, async move {
                peer.list_all_tools().await
            })
            .inspect_err(|_| self.forget(server))?
            .map_err(|e| service_error(server, "tools/list", e))?;
        Ok(tools
            .iter()
            .map(|tool| serde_json::to_value(tool).unwrap_or_default())
            .collect())
    }

    fn check_policy(&self, server: &str) -> Result<(), NodeError> {
        if self.allowed.iter().any(|a| a == "*" || a == server) {
            return Ok(());
        }
        Err(NodeError::new(
            category::POLICY_DENIED,
            format!(
                "MCP server '{server}' is not allowed for workflows (allowed: {}); add it to settings.json under mcp.allowed_servers",
                self.allowed.join(", ")
            ),
            false,
        ))
    }

    fn peer(
        &self,
        server: &str,
        deadline: Instant,
        cancel: &AtomicBool,
    ) -> Result<rmcp::Peer<RoleClient>, NodeError> {
        if let Some(session) = self.live.lock().expect("mcp sessions").get(server) {
            if !session.service.is_transport_closed() {
                return Ok(session.service.peer().clone());
            }
        }
        self.forget(server);
        let config = self.servers.get(server).ok_or_else(|| {
            let known: Vec<&str> = self.server_names().collect();
            NodeError::new(
                category::MCP_UNAVAILABLE,
                format!(
                    "MCP server '{server}' is not configured (configured: {}); add it with `pflow-host mcp add`",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ),
                false,
            )
        })?;
        let start_deadline = deadline.min(Instant::now() + START_TIMEOUT);
        let session = match self.connect(server, config)? {
            Transport::Http(transport, url) => {
                let service = self
                    .bounded(start_deadline, cancel, server, async move {
                        ().serve(transport).await
                    })?
                    .map_err(|e| http_start_error(server, &url, &e.to_string()))?;
                Session {
                    service,
                    process: None,
                }
            }
            Transport::Stdio(transport, process, program) => {
                let handshake = self
                    .bounded(start_deadline, cancel, server, async move {
                        ().serve(transport).await
                    })
                    .and_then(|served| {
                        served.map_err(|e| NodeError::new(
                            category::MCP_UNAVAILABLE,
                            format!("MCP server '{server}' ({program}) did not complete the MCP handshake: {e}"),
                            false,
                        ))
                    });
                match handshake {
                    Ok(service) => Session {
                        service,
                        process: Some(process),
                    },
                    // Failed, timed out or cancelled in the handshake: the server is killed
                    // now, not left to the abandoned task.
                    Err(failure) => {
                        process.kill();
                        return Err(failure);
                    }
                }
            }
        };
        let peer = session.service.peer().clone();
        self.live
            .lock()
            .expect("mcp sessions")
            .insert(server.to_string(), session);
        Ok(peer)
    }

    /// The transport to `server`: a started process for stdio, a client for HTTP after the
    /// policy has seen the URL. Nothing is sent yet.
    fn connect(&self, name: &str, config: &ServerConfig) -> Result<Transport, NodeError> {
        // Both transports start tasks or processes that need the MCP runtime around them.
        let _runtime = self.runtime.enter();
        let unavailable =
            |message: String| NodeError::new(category::MCP_UNAVAILABLE, message, false);
        let expand = |text: &str| {
            expand_env(text).map_err(|e| unavailable(format!("MCP server '{name}': {e}")))
        };
        let is_http = config.url.is_some()
            || matches!(
                config.kind.as_deref(),
                Some("http" | "streamable-http" | "streamableHttp")
            );
        if is_http {
            let url = expand(config.url.as_deref().unwrap_or_default())?;
            let parsed = url::Url::parse(&url).map_err(|e| {
                unavailable(format!("MCP server '{name}': '{url}' is not a URL: {e}"))
            })?;
            self.http_policy.check(&parsed).map_err(|mut denied| {
                denied.message = format!("MCP server '{name}': {}", denied.message);
                denied
            })?;
            let mut transport_config =
                rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    url.clone(),
                );
            for (key, value) in &config.headers {
                let value = expand(value)?;
                let (Ok(header), Ok(value)) = (
                    reqwest::header::HeaderName::from_bytes(key.as_bytes()),
                    reqwest::header::HeaderValue::from_str(&value),
                ) else {
                    return Err(unavailable(format!(
                        "MCP server '{name}': header '{key}' is not valid"
                    )));
                };
                transport_config.custom_headers.insert(header, value);
            }
            let client = HttpClient::client(self.http_policy.addresses)?;
            let transport = StreamableHttpClientTransport::with_client(client, transport_config);
            return Ok(Transport::Http(transport, url));
        }
        let program = expand(config.command.as_deref().ok_or_else(|| {
            unavailable(format!(
                "MCP server '{name}' has neither a command nor a url"
            ))
        })?)?;
        let mut command = tokio::process::Command::new(&program);
        for arg in &config.args {
            command.arg(expand(arg)?);
        }
        // The host's LLM keys go to a server only when its configuration passes them on.
        for variable in pflow_llm::CREDENTIAL_VARIABLES {
            command.env_remove(variable);
        }
        for (key, value) in &config.env {
            command.env(key, expand(value)?);
        }
        // Its own process group: the terminal's Ctrl-C reaches the host, which ends the server.
        command.process_group(0);
        let confinement = Confinement::new();
        // SAFETY: the hook only writes to a descriptor (async-signal-safe).
        unsafe {
            command.pre_exec(confinement.child_setup());
        }
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| {
                unavailable(format!("Cannot start MCP server '{name}' ({program}): {e}"))
            })?;
        let leader = transport.id().map(|id| id as i32).unwrap_or_default();
        Ok(Transport::Stdio(
            transport,
            ServerProcess {
                leader,
                confinement,
            },
            program,
        ))
    }

    /// Runs `work` on the MCP runtime until it finishes, the deadline passes or Ctrl-C.
    fn bounded<T: Send + 'static>(
        &self,
        deadline: Instant,
        cancel: &AtomicBool,
        server: &str,
        work: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Result<T, NodeError> {
        let task = self.runtime.spawn(work);
        let abort = task.abort_handle();
        let outcome = self.runtime.block_on(async {
            let wait = deadline.saturating_duration_since(Instant::now());
            let watch_cancel = async {
                while !cancel.load(Ordering::Relaxed) {
                    tokio::time::sleep(CANCEL_POLL).await;
                }
            };
            tokio::select! {
                joined = task => joined.map_err(|e| NodeError::new(category::MCP_UNAVAILABLE, format!("MCP client task failed: {e}"), false)),
                _ = tokio::time::sleep(wait) => Err(NodeError::new(
                    category::TIMEOUT,
                    format!("MCP server '{server}' did not answer within the node's time limit ({:.1} s left when it was asked)", wait.as_secs_f64()),
                    false,
                )),
                _ = watch_cancel => Err(NodeError::new(category::CANCELLED, "The run was cancelled.".to_string(), false)),
            }
        });
        if outcome.is_err() {
            abort.abort();
        }
        outcome
    }

    /// Drops a server that failed or hung, killing its processes at once.
    fn forget(&self, server: &str) {
        let session = self.live.lock().expect("mcp sessions").remove(server);
        if let Some(session) = session {
            self.end(session, false);
        }
    }

    /// Ends a session: politely (close the connection, give it a moment) when `graceful`,
    /// then in any case by killing the server's process group.
    fn end(&self, mut session: Session, graceful: bool) {
        if graceful {
            let _ = self.runtime.block_on(async {
                tokio::time::timeout(GRACEFUL_CLOSE, session.service.close()).await
            });
        }
        if let Some(process) = &session.process {
            process.kill();
        }
        // rmcp's own clean-up runs as tasks, so drop the session inside the runtime.
        self.runtime.block_on(async move { drop(session) });
    }

    /// Shuts every server of the run down.
    pub fn shutdown(&self) {
        let sessions: Vec<Session> = self
            .live
            .lock()
            .map(|mut live| live.drain().map(|(_, s)| s).collect())
            .unwrap_or_default();
        for session in sessions {
            self.end(session, true);
        }
    }
}

impl Drop for McpSessions {
    fn drop(&mut self) {
        self.shutdown();
    }
}

enum Transport {
    Http(StreamableHttpClientTransport<reqwest::Client>, String),
    Stdio(TokioChildProcess, ServerProcess, String),
}

fn http_start_error(name: &str, url: &str, text: &str) -> NodeError {
    let category = if text.contains("401")
        || text.contains("403")
        || text.to_lowercase().contains("unauthorized")
    {
        category::AUTH
    } else {
        category::NETWORK
    };
    NodeError::new(
        category,
        format!("Cannot connect to MCP server '{name}' at {url}: {text}"),
        false,
    )
}

fn service_error(server: &str, tool: &str, failure: ServiceError) -> NodeError {
    match failure {
        ServiceError::McpError(data) => {
            let code = data.code.0;
            if code == -32602 {
                NodeError::new(
                    "argument_error",
                    format!("MCP server '{server}' rejected the arguments of '{tool}': {}", data.message),
                    true,
                )
            } else {
                NodeError::new(
                    "tool_error",
                    format!("MCP server '{server}' answered '{tool}' with error {code}: {}", data.message),
                    false,
                )
            }
        }
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => NodeError::new(
            category::MCP_UNAVAILABLE,
            format!("MCP server '{server}' went away during '{tool}' (it crashed or closed the connection)"),
            false,
        ),
        ServiceError::Timeout { timeout } => NodeError::new(
            category::TIMEOUT,
            format!("MCP server '{server}' did not answer '{tool}' within {:.1} s", timeout.as_secs_f64()),
            false,
        ),
        other => NodeError::new(
            "tool_error",
            format!("MCP server '{server}' failed on '{tool}': {other}"),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_variables_expand_with_defaults() {
        std::env::set_var("PFLOW_MCP_TEST_TOKEN", "s3cret");
        std::env::remove_var("PFLOW_MCP_TEST_UNSET");
        assert_eq!(
            expand_env("Bearer ${PFLOW_MCP_TEST_TOKEN}").unwrap(),
            "Bearer s3cret"
        );
        assert_eq!(
            expand_env("${PFLOW_MCP_TEST_UNSET:-fallback}/x").unwrap(),
            "fallback/x"
        );
        assert_eq!(
            expand_env("${PFLOW_MCP_TEST_TOKEN:-unused}").unwrap(),
            "s3cret"
        );
        assert_eq!(expand_env("no variables").unwrap(), "no variables");
        assert_eq!(
            expand_env("${PFLOW_MCP_TEST_UNSET}").unwrap_err(),
            "environment variable PFLOW_MCP_TEST_UNSET is not set"
        );
    }

    #[test]
    fn the_standard_configuration_format_round_trips() {
        let text = r#"{"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"A": "1"}},
            "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${T}"}}
        }}"#;
        let file: McpServersFile = serde_json::from_str(text).unwrap();
        assert_eq!(file.servers["files"].args[2], "/tmp");
        assert_eq!(file.servers["remote"].kind.as_deref(), Some("http"));
        let again: McpServersFile =
            serde_json::from_str(&serde_json::to_string(&file).unwrap()).unwrap();
        assert_eq!(again, file);
    }
}
