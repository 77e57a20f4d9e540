//! What the validator needs to know about node types: their params and outputs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A node's parameter or output, as its `describe` declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Port {
    pub name: String,
    /// pflow's type names: `str`, `int`, `float`, `bool`, `dict`, `list`, `any`, unions with `|`.
    #[serde(rename = "type")]
    pub type_name: String,
    pub description: String,
    pub required: bool,
    /// The value's nested structure as a JSON Schema, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
}

/// The node types a workflow may use.
pub trait NodeCatalog {
    /// Params of `node_type`, or None when no such type is installed.
    fn params(&self, node_type: &str) -> Option<&[Port]>;
    fn outputs(&self, node_type: &str) -> Option<&[Port]>;
    fn types(&self) -> Vec<&str>;
}
