//! pflow's `delete-file`. It acts only with `confirm_delete: true` given through the node's
//! `inputs:` mapping (a boolean workflow input), never as a param: a deletion cannot be
//! triggered by the node's own config alone, as in pflow.

use pflow_sdk::{fs, json, Node, NodeError, NodeSpec, Outcome, Params, Value};

struct DeleteFile;

impl Node for DeleteFile {
    fn describe() -> NodeSpec {
        NodeSpec::new(
            "delete-file",
            "Delete a file from the filesystem with safety confirmation (inputs.confirm_delete: true).",
        )
        .param("file_path", "str", "Path to delete", true)
        .param("inputs", "dict", "Must map confirm_delete to the boolean true", true)
        .output("deleted", "str", "What was deleted", true)
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        let path = params.str("file_path")?;
        if params.get("confirm_delete").is_some() {
            return Err(NodeError::bad_params(
                "confirm_delete cannot be a param; map it from a boolean workflow input: \
                 inputs: {confirm_delete: ${confirm_delete}}",
            ));
        }
        let confirmed = params
            .get("inputs")
            .and_then(|inputs| inputs.get("confirm_delete"));
        if confirmed != Some(&Value::Bool(true)) {
            return Err(NodeError::bad_params(format!(
                "Deletion of '{}' not confirmed: inputs.confirm_delete must be the boolean true, got {}",
                path,
                confirmed.map_or("nothing".to_string(), |v| v.to_string())
            )));
        }
        fs::remove(path)?;
        Ok(json!({ "deleted": format!("Successfully deleted '{}'", path) }).into())
    }
}

pflow_sdk::export_node!(DeleteFile);
