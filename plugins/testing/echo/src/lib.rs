//! The smallest useful node: writes its params back as its outputs. Used by the tests (to see
//! exactly what a node received) and by the per-node overhead benchmark.

use pflow_sdk::{Node, NodeError, NodeSpec, Outcome, Params};

struct Echo;

impl Node for Echo {
    fn describe() -> NodeSpec {
        NodeSpec::new("echo", "Writes its params back as its outputs")
            .param("*", "any", "Any params", false)
            .output("*", "any", "The params, unchanged", false)
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        let mut outcome = Outcome::new(params.as_map().clone());
        if let Some(action) = params.get("action").and_then(|a| a.as_str()) {
            outcome = outcome.with_action(action);
        }
        Ok(outcome)
    }
}

pflow_sdk::export_node!(Echo);
