//! Host capabilities: the imports a node may call. Every one is linked for every node; a call
//! that the node's grants do not cover answers `policy_denied`, so a plugin can see the refusal
//! and the host never has to fail instantiation over it.

pub mod fs;
pub mod http;
pub mod llm;
mod process;
pub(crate) mod state;

use crate::bindings::pflow::node::{
    http as http_wit, log, mcp as mcp_wit, process as process_wit, types,
};
use crate::error::category;
use crate::mcp::McpSessions;
use serde::{Deserialize, Serialize};
pub use state::HostState;
use std::fmt;
use std::sync::Arc;

pub use process::{run_command, CommandFailure, Finished, Request};

/// A capability interface of the `pflow:node` package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    Log,
    Process,
    Http,
    Mcp,
    Fs,
    Llm,
}

impl Capability {
    pub const ALL: &'static [Capability] = &[
        Capability::Log,
        Capability::Process,
        Capability::Http,
        Capability::Mcp,
        Capability::Fs,
        Capability::Llm,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Capability::Log => "log",
            Capability::Process => "process",
            Capability::Http => "http",
            Capability::Mcp => "mcp",
            Capability::Fs => "fs",
            Capability::Llm => "llm",
        }
    }

    pub fn from_name(name: &str) -> Option<Capability> {
        Capability::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// The capability a component import names, e.g. `pflow:node/process@0.1.0`.
    pub fn from_import(import: &str) -> Option<Capability> {
        let interface = import.strip_prefix("pflow:node/")?;
        let interface = interface.split('@').next().unwrap_or(interface);
        Capability::from_name(interface)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What each capability needs for one node execution, as its own unit (its policy, its
/// shared per-run state). The defaults give nothing: the default HTTP policy, no MCP sessions,
/// no file roots, no LLM.
#[derive(Clone, Default)]
pub struct CapabilityContexts {
    pub http: Arc<http::HttpPolicy>,
    /// The run's MCP sessions, when it uses MCP tools.
    pub mcp: Option<Arc<McpSessions>>,
    /// Whether the node's MCP tool is annotated `readOnlyHint` (called even in a dry run).
    pub mcp_read_only: bool,
    pub files: Arc<fs::FilePolicy>,
    pub llm: Option<Arc<llm::LlmAccess>>,
}

/// The set of capabilities one node execution may use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Grants(u32);

impl Grants {
    pub fn of(capabilities: impl IntoIterator<Item = Capability>) -> Self {
        Grants(
            capabilities
                .into_iter()
                .fold(0, |bits, c| bits | 1 << c as u32),
        )
    }

    pub fn allows(self, capability: Capability) -> bool {
        self.0 & (1 << capability as u32) != 0
    }
}

/// Longest log message kept; a node cannot flood the host's log.
const MAX_LOG_MESSAGE: usize = 4096;
/// Messages kept per execution.
const MAX_LOG_MESSAGES: u32 = 1000;

impl types::Host for HostState {}

impl log::Host for HostState {
    fn log(&mut self, level: log::Level, message: String) {
        if !self.grants.allows(Capability::Log) || self.log_messages >= MAX_LOG_MESSAGES {
            return;
        }
        self.log_messages += 1;
        let mut message = message;
        if message.len() > MAX_LOG_MESSAGE {
            let mut cut = MAX_LOG_MESSAGE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
        }
        let node = self.node_id.as_str();
        match level {
            log::Level::Trace => tracing::trace!(node, "{message}"),
            log::Level::Debug => tracing::debug!(node, "{message}"),
            log::Level::Info => tracing::info!(node, "{message}"),
            log::Level::Warn => tracing::warn!(node, "{message}"),
            log::Level::Error => tracing::error!(node, "{message}"),
        }
    }
}

impl process_wit::Host for HostState {
    fn run(
        &mut self,
        command: process_wit::Command,
    ) -> Result<process_wit::Output, types::NodeError> {
        if !self.grants.allows(Capability::Process) {
            return Err(denied(Capability::Process, &self.node_type));
        }
        let request = process::Request {
            argv: command.argv,
            stdin: command.stdin,
            cwd: command.cwd,
            env: command.env,
            timeout: command
                .timeout_ms
                .map(|ms| std::time::Duration::from_millis(ms.into())),
            deadline: self.deadline,
            capture_bytes: self.output_cap,
            prelude: None,
        };
        let finished = match self.dry.clone() {
            None => run_command(request, &self.cancel).map_err(CommandFailure::into_node_error)?,
            Some(dry) => crate::dry::run_command_dry(request, &self.cancel, &dry, &self.node_id)
                .map_err(|not_run| self.skip("process", not_run.0))?
                .map_err(CommandFailure::into_node_error)?,
        };
        Ok(process_wit::Output {
            stdout: finished.stdout,
            stderr: finished.stderr,
            exit_code: finished.exit_code,
            stdout_truncated: finished.stdout_truncated,
            stderr_truncated: finished.stderr_truncated,
        })
    }
}

impl http_wit::Host for HostState {
    fn send(&mut self, request: http_wit::Request) -> Result<http_wit::Response, types::NodeError> {
        if !self.grants.allows(Capability::Http) {
            return Err(denied(Capability::Http, &self.node_type));
        }
        if self.dry.is_some() {
            let safe_method =
                ["GET", "HEAD", "OPTIONS"].contains(&request.method.to_ascii_uppercase().as_str());
            let has_body = request.body.as_ref().is_some_and(|b| !b.is_empty());
            if !safe_method || has_body {
                return Err(self.skip(
                    "http",
                    format!(
                        "{} {} was not sent: a dry run sends only GET, HEAD and OPTIONS, without a body",
                        request.method, request.url
                    ),
                ));
            }
        }
        let request = http::Request {
            method: request.method,
            url: request.url,
            headers: request.headers,
            query: request.query,
            body: request.body,
            timeout: request
                .timeout_ms
                .map(|ms| std::time::Duration::from_millis(ms.into())),
            retries: request.retries,
        };
        let bounds = http::Bounds {
            node_deadline: self.deadline,
            cancel: &self.cancel,
        };
        let response = http::send(request, &self.capabilities.http, &bounds)?;
        Ok(http_wit::Response {
            status: response.status,
            attempts: response.attempts,
            headers: response.headers,
            body: response.body,
            duration_us: u32::try_from(response.duration.as_micros()).unwrap_or(u32::MAX),
        })
    }
}

impl mcp_wit::Host for HostState {
    fn call(&mut self, call: mcp_wit::ToolCall) -> Result<mcp_wit::ToolResult, types::NodeError> {
        if !self.grants.allows(Capability::Mcp) {
            return Err(denied(Capability::Mcp, &self.node_type));
        }
        if self.dry.is_some() && !self.capabilities.mcp_read_only {
            return Err(self.skip(
                "mcp",
                format!(
                    "tool '{}' of '{}' was not called: a dry run calls only tools annotated readOnlyHint",
                    call.tool, call.server
                ),
            ));
        }
        let Some(sessions) = self.capabilities.mcp.clone() else {
            return Err(types::NodeError {
                category: crate::error::category::MCP_UNAVAILABLE.to_string(),
                message: "No MCP servers are available to this run.".to_string(),
                fixable: false,
                attempted: vec![call.server],
                available: Vec::new(),
                sample: None,
            });
        };
        let arguments = match serde_json::from_str(&call.arguments) {
            Ok(serde_json::Value::Object(arguments)) => arguments,
            _ => {
                return Err(types::NodeError {
                    category: "bad_params".to_string(),
                    message: "The tool's arguments must be a JSON object.".to_string(),
                    fixable: true,
                    attempted: Vec::new(),
                    available: Vec::new(),
                    sample: Some(call.arguments.chars().take(200).collect()),
                })
            }
        };
        let deadline = match call.timeout_ms {
            Some(ms) => self
                .deadline
                .min(std::time::Instant::now() + std::time::Duration::from_millis(ms.into())),
            None => self.deadline,
        };
        let result = sessions.call(&call.server, &call.tool, arguments, deadline, &self.cancel)?;
        Ok(mcp_wit::ToolResult {
            content: result.content.to_string(),
            structured: result.structured.map(|v| v.to_string()),
            is_error: result.is_error,
        })
    }
}

impl HostState {
    /// Records what a dry run did not do, as the node's `unverified` error.
    fn skip(&self, capability: &str, reason: String) -> types::NodeError {
        if let Some(dry) = &self.dry {
            dry.skip(&self.node_id, capability, reason.clone());
        }
        types::NodeError::new(crate::dry::UNVERIFIED, format!("Dry run: {reason}."), false)
    }
}

impl types::NodeError {
    /// An error with just a category, a message and whether the workflow can fix it.
    pub(crate) fn new(category: &str, message: String, fixable: bool) -> Self {
        types::NodeError {
            category: category.to_string(),
            message,
            fixable,
            attempted: Vec::new(),
            available: Vec::new(),
            sample: None,
        }
    }
}

fn denied(capability: Capability, node_type: &str) -> types::NodeError {
    types::NodeError {
        category: category::POLICY_DENIED.to_string(),
        message: format!(
            "Node type '{node_type}' is not granted the '{capability}' capability. Built-in nodes \
             get the capabilities they import; grant a user plugin more in settings.json under \
             plugins.grants.{node_type}."
        ),
        fixable: false,
        attempted: vec![capability.to_string()],
        available: Vec::new(),
        sample: None,
    }
}

#[cfg(test)]
mod tests {
    use super::Capability;

    #[test]
    fn every_capability_is_listed_and_named_once() {
        for capability in Capability::ALL {
            // A new variant fails to compile here until it is added to ALL as well.
            match capability {
                Capability::Log
                | Capability::Process
                | Capability::Http
                | Capability::Mcp
                | Capability::Fs
                | Capability::Llm => {}
            }
            assert_eq!(Capability::from_name(capability.name()), Some(*capability));
            let import = format!("pflow:node/{}@0.1.0", capability.name());
            assert_eq!(Capability::from_import(&import), Some(*capability));
        }
        assert_eq!(Capability::ALL.len(), 6);
    }
}
