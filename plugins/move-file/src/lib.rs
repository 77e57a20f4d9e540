//! pflow's `move-file`.

use pflow_sdk::{fs, json, Node, NodeError, NodeSpec, Outcome, Params};

struct MoveFile;

impl Node for MoveFile {
    fn describe() -> NodeSpec {
        NodeSpec::new(
            "move-file",
            "Move a file to a new location with automatic directory creation.",
        )
        .param("source_path", "str", "Source file path", true)
        .param("dest_path", "str", "Destination file path", true)
        .param("overwrite", "bool", "Whether to overwrite an existing file (default false)", false)
        .output("moved", "str", "What was moved where", true)
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        let source = params.str("source_path")?;
        let dest = params.str("dest_path")?;
        fs::rename(source, dest, params.bool_or("overwrite", false)?)?;
        Ok(json!({ "moved": format!("Successfully moved '{}' to '{}'", source, dest) }).into())
    }
}

pflow_sdk::export_node!(MoveFile);
