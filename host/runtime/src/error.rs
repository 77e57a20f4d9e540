//! The one error shape used everywhere a node fails: run reports, runtime validation, repair.

use serde::{Deserialize, Serialize};

/// `{source, node_id, node_type, category, fixable, message, attempted, available, sample}`,
/// every field always present (empty lists and a null sample when there is nothing to say), so
/// that a planner can read one shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeFailure {
    /// Who noticed: `node` (the plugin said so), `sandbox` (a limit or a trap), `template`
    /// (a `${...}` did not resolve), `host` (the host could not run the node at all).
    pub source: String,
    pub node_id: String,
    pub node_type: String,
    pub category: String,
    pub fixable: bool,
    pub message: String,
    #[serde(default)]
    pub attempted: Vec<String>,
    #[serde(default)]
    pub available: Vec<String>,
    #[serde(default)]
    pub sample: Option<String>,
}

impl NodeFailure {
    pub fn new(source: &str, category: &str, message: impl Into<String>) -> Self {
        NodeFailure {
            source: source.to_string(),
            node_id: String::new(),
            node_type: String::new(),
            category: category.to_string(),
            fixable: false,
            message: message.into(),
            attempted: Vec::new(),
            available: Vec::new(),
            sample: None,
        }
    }

    pub fn at(mut self, node_id: &str, node_type: &str) -> Self {
        self.node_id = node_id.to_string();
        self.node_type = node_type.to_string();
        self
    }
}

impl std::fmt::Display for NodeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "node '{}' ({}) failed [{}]: {}",
            self.node_id, self.node_type, self.category, self.message
        )
    }
}

/// Categories the sandbox itself raises.
pub mod category {
    pub const FUEL_EXHAUSTED: &str = "fuel_exhausted";
    pub const MEMORY_LIMIT: &str = "memory_limit";
    pub const TIMEOUT: &str = "timeout";
    pub const CANCELLED: &str = "cancelled";
    pub const TRAP: &str = "trap";
    pub const BAD_OUTPUT: &str = "bad_output";
    pub const OUTPUT_LIMIT: &str = "output_limit";
    pub const POLICY_DENIED: &str = "policy_denied";
    pub const PLUGIN_LOAD: &str = "plugin_load";
    pub const NETWORK: &str = "network";
    pub const AUTH: &str = "auth";
    pub const MCP_UNAVAILABLE: &str = "mcp_unavailable";
}
