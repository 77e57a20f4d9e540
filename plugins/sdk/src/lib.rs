//! Write a pflow workflow node in plain Rust.
//!
//! A node implements [`Node`] and names itself with [`export_node!`]; the SDK holds all of the
//! component model's canonical-ABI glue, so the author never touches a pointer:
//!
//! ```ignore
//! use pflow_sdk::{json, Node, NodeError, NodeSpec, Outcome, Params};
//!
//! struct Greet;
//!
//! impl Node for Greet {
//!     fn describe() -> NodeSpec {
//!         NodeSpec::new("greet", "Greets someone")
//!             .param("name", "string", "Who to greet", true)
//!             .output("greeting", "string", "The greeting", true)
//!     }
//!
//!     fn run(params: Params) -> Result<Outcome, NodeError> {
//!         let name = params.str("name")?;
//!         Ok(json!({ "greeting": format!("Hello, {}!", name) }).into())
//!     }
//! }
//!
//! pflow_sdk::export_node!(Greet);
//! ```
//!
//! Capabilities are plain functions in [`log`], [`process`], [`http`] and [`mcp`]. A node that calls none of them
//! imports none, and the host can see which ones it uses before running it.
//!
//! This crate builds with rustc 1.63 (Debian's wasm toolchain), so it keeps to that language.

#[doc(hidden)]
pub mod abi;
pub mod base64;
pub mod fs;
pub mod http;
pub mod llm;
pub mod log;
pub mod mcp;
mod params;
pub mod process;
pub mod python_json;

pub use params::Params;
pub use serde_json::{self, json, Map, Value};

/// Why a node failed. Crosses the component boundary unchanged and ends up, with the node id and
/// type added, in the run report and in the planner's repair prompts.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeError {
    pub category: String,
    pub message: String,
    pub fixable: bool,
    pub attempted: Vec<String>,
    pub available: Vec<String>,
    pub sample: Option<String>,
}

impl NodeError {
    /// A non-fixable error of `category` (e.g. `command_failed`) with a one-paragraph message.
    pub fn new(category: impl Into<String>, message: impl Into<String>) -> Self {
        NodeError {
            category: category.into(),
            message: message.into(),
            fixable: false,
            attempted: Vec::new(),
            available: Vec::new(),
            sample: None,
        }
    }

    /// A parameter is missing or has the wrong shape: the workflow can be fixed.
    pub fn bad_params(message: impl Into<String>) -> Self {
        NodeError::new("bad_params", message).fixable(true)
    }

    pub fn fixable(mut self, fixable: bool) -> Self {
        self.fixable = fixable;
        self
    }

    pub fn attempted(mut self, attempted: Vec<String>) -> Self {
        self.attempted = attempted;
        self
    }

    pub fn available(mut self, available: Vec<String>) -> Self {
        self.available = available;
        self
    }

    pub fn sample(mut self, sample: impl Into<String>) -> Self {
        self.sample = Some(sample.into());
        self
    }
}

impl std::fmt::Display for NodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.category, self.message)
    }
}

/// One parameter or output of a node.
#[derive(Debug, Clone, PartialEq)]
pub struct Port {
    pub name: String,
    /// pflow's type names: `string`, `int`, `float`, `bool`, `dict`, `list`, `any`, or unions
    /// such as `dict|str`.
    pub type_name: String,
    pub description: String,
    pub required: bool,
    /// The value's nested structure as a JSON Schema, where known.
    pub schema: Option<Value>,
}

/// What a node is: its type name, what it does, what it takes and what it writes.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec {
    pub name: String,
    pub description: String,
    pub params: Vec<Port>,
    pub outputs: Vec<Port>,
}

impl NodeSpec {
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        NodeSpec {
            name: name.into(),
            description: description.into(),
            params: Vec::new(),
            outputs: Vec::new(),
        }
    }

    pub fn param(mut self, name: &str, type_name: &str, description: &str, required: bool) -> Self {
        self.params.push(port(name, type_name, description, required));
        self
    }

    pub fn output(
        mut self,
        name: &str,
        type_name: &str,
        description: &str,
        required: bool,
    ) -> Self {
        self.outputs.push(port(name, type_name, description, required));
        self
    }

    /// An output whose nested structure is known: `schema` is a JSON Schema (`type`,
    /// `properties`, `items`), which lets the validator check paths into it.
    pub fn output_with_schema(
        mut self,
        name: &str,
        type_name: &str,
        description: &str,
        required: bool,
        schema: Value,
    ) -> Self {
        let mut port = port(name, type_name, description, required);
        port.schema = Some(schema);
        self.outputs.push(port);
        self
    }
}

fn port(name: &str, type_name: &str, description: &str, required: bool) -> Port {
    Port {
        name: name.to_string(),
        type_name: type_name.to_string(),
        description: description.to_string(),
        required,
        schema: None,
    }
}

/// A successful execution: the outputs written to the node's namespace and the action that picks
/// the next edge (`default` when none).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub outputs: Map<String, Value>,
    /// Outputs given as JSON text, passed to the host as they are.
    pub raw_outputs: Vec<(String, String)>,
    pub action: Option<String>,
}

impl Outcome {
    pub fn new(outputs: Map<String, Value>) -> Self {
        Outcome {
            outputs,
            raw_outputs: Vec::new(),
            action: None,
        }
    }

    /// Routes along the outgoing edge labelled `action` (e.g. `error`).
    pub fn with_action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }

    pub fn with_output(mut self, key: impl Into<String>, value: Value) -> Self {
        self.outputs.insert(key.into(), value);
        self
    }

    /// An output that is already JSON text (say, a response body checked with
    /// `serde_json::value::RawValue`): it reaches the host without being parsed and serialized
    /// again inside the sandbox, which matters for large documents. Text that is not valid JSON
    /// makes the node's outputs a `bad_output` error.
    pub fn with_raw_output(mut self, key: impl Into<String>, json: impl Into<String>) -> Self {
        let key = key.into();
        self.outputs.remove(&key);
        self.raw_outputs.push((key, json.into()));
        self
    }
}

impl From<Map<String, Value>> for Outcome {
    fn from(outputs: Map<String, Value>) -> Self {
        Outcome::new(outputs)
    }
}

/// A JSON object becomes the outputs; any other value is written as `result`.
impl From<Value> for Outcome {
    fn from(value: Value) -> Self {
        match value {
            Value::Object(map) => Outcome::new(map),
            other => {
                let mut map = Map::new();
                map.insert("result".to_string(), other);
                Outcome::new(map)
            }
        }
    }
}

/// A workflow node. Each execution gets a fresh instance, so a node keeps no state between runs.
pub trait Node {
    fn describe() -> NodeSpec;
    fn run(params: Params) -> Result<Outcome, NodeError>;
}

/// Exports `T: Node` as this component's `describe` and `run`. Use it once, in the plugin crate.
#[macro_export]
macro_rules! export_node {
    ($node:ty) => {
        $crate::export_node_describe_only!($node);

        #[no_mangle]
        pub unsafe extern "C" fn run(params: *mut u8, len: usize) -> *mut u8 {
            $crate::abi::export_run(params, len, <$node as $crate::Node>::run)
        }
    };
}

/// Exports the allocator and `describe` only, for a plugin that writes its own `run` export on
/// top of [`abi::export_run`] (the hostile test plugin does, to return malformed data).
#[doc(hidden)]
#[macro_export]
macro_rules! export_node_describe_only {
    ($node:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn cabi_realloc(
            old: *mut u8,
            old_size: usize,
            align: usize,
            new_size: usize,
        ) -> *mut u8 {
            $crate::abi::realloc(old, old_size, align, new_size)
        }

        #[no_mangle]
        pub unsafe extern "C" fn describe() -> *mut u8 {
            $crate::abi::export_describe(<$node as $crate::Node>::describe)
        }
    };
}
