//! pflow's `copy-file`.

use pflow_sdk::{fs, json, Node, NodeError, NodeSpec, Outcome, Params};

struct CopyFile;

impl Node for CopyFile {
    fn describe() -> NodeSpec {
        NodeSpec::new(
            "copy-file",
            "Copy a file to a new location with automatic directory creation.",
        )
        .param("source_path", "str", "Source file path", true)
        .param("dest_path", "str", "Destination file path", true)
        .param("overwrite", "bool", "Whether to overwrite an existing file (default false)", false)
        .output("copied", "str", "What was copied where", true)
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        let source = params.str("source_path")?;
        let dest = params.str("dest_path")?;
        fs::copy(source, dest, params.bool_or("overwrite", false)?)?;
        Ok(json!({ "copied": format!("Successfully copied '{}' to '{}'", source, dest) }).into())
    }
}

pflow_sdk::export_node!(CopyFile);
