//! The {{name}} node: upper-cases `text` into `result`.
//!
//! The host calls `describe` once when the plugin is installed, and `run` for every execution.
//! `run` returns the outputs, or a `NodeError` that the host reports like any node's failure.

use pflow_sdk::{json, log, Node, NodeError, NodeSpec, Outcome, Params};

struct Upper;

impl Node for Upper {
    fn describe() -> NodeSpec {
        NodeSpec::new("{{name}}", "Upper-cases a text.")
            .param("text", "str", "The text to upper-case.", true)
            .output("result", "str", "The text, upper-cased.", true)
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        let text = params.str("text")?;
        log::debug(&format!("upper-casing {} characters", text.chars().count()));
        Ok(json!({ "result": text.to_uppercase() }).into())
    }
}

pflow_sdk::export_node!(Upper);
