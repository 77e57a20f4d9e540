//! pflow's `write-file`: text (lists and objects as indented JSON), or binary from base64;
//! missing parent directories are created.

use pflow_sdk::{base64, fs, json, Node, NodeError, NodeSpec, Outcome, Params, Value};

struct WriteFile;

impl Node for WriteFile {
    fn describe() -> NodeSpec {
        NodeSpec::new(
            "write-file",
            "Write content to a file with automatic directory creation.",
        )
        .param("content", "any", "Content to write (text, or base64 when content_is_binary)", true)
        .param("file_path", "str", "Path to the file to write", true)
        .param("content_is_binary", "bool", "True if content is base64-encoded binary", false)
        .param("encoding", "str", "File encoding (utf-8)", false)
        .param("append", "bool", "Append to the file instead of overwriting (default false)", false)
        .output("written", "str", "What was written where", true)
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        let path = params.str("file_path")?;
        let append = params.bool_or("append", false)?;
        let bytes = match params.get("content") {
            None | Some(Value::Null) => {
                return Err(NodeError::bad_params("Missing required 'content' parameter"))
            }
            Some(Value::String(text)) if params.bool_or("content_is_binary", false)? => {
                base64::decode(text).ok_or_else(|| {
                    NodeError::bad_params("content_is_binary is true but content is not base64")
                })?
            }
            Some(Value::String(text)) => text.clone().into_bytes(),
            Some(structured @ (Value::Object(_) | Value::Array(_))) => {
                pflow_sdk::serde_json::to_string_pretty(structured)
                    .unwrap_or_default()
                    .into_bytes()
            }
            Some(other) => other.to_string().into_bytes(),
        };
        fs::write(path, &bytes, append)?;
        let verb = if append { "appended to" } else { "wrote" };
        Ok(json!({ "written": format!("Successfully {} '{}'", verb, path) }).into())
    }
}

pflow_sdk::export_node!(WriteFile);
