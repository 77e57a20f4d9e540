//! pflow's `read-file`: a file's content as text, or as base64 when it is binary (by pflow's
//! list of binary extensions, or because it is not UTF-8).

use pflow_sdk::{base64, fs, json, Node, NodeError, NodeSpec, Outcome, Params};

/// pflow treats these as binary whatever their bytes.
const BINARY_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "pdf", "zip", "tar", "gz", "7z", "rar",
    "mp3", "mp4", "wav", "avi", "mov", "exe", "dll", "so", "dylib", "woff", "woff2", "ttf",
    "bin", "dat",
];

struct ReadFile;

impl Node for ReadFile {
    fn describe() -> NodeSpec {
        NodeSpec::new("read-file", "Read content from a file.")
            .param("file_path", "str", "Path to the file to read", true)
            .param("encoding", "str", "File encoding (utf-8; others are read as utf-8)", false)
            .output("content", "str", "File contents (base64-encoded for binary)", true)
            .output("content_is_binary", "bool", "True if content is binary data", true)
            .output("file_path", "str", "Path that was read", true)
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        let path = params.str("file_path")?;
        let bytes = fs::read(path)?;
        let extension = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
        let text = if path.contains('.') && BINARY_EXTENSIONS.contains(&extension.as_str()) {
            None
        } else {
            String::from_utf8(bytes.clone()).ok()
        };
        let (content, is_binary) = match text {
            Some(text) => (text, false),
            None => (base64::encode(&bytes), true),
        };
        Ok(json!({
            "content": content,
            "content_is_binary": is_binary,
            "file_path": path,
        })
        .into())
    }
}

pflow_sdk::export_node!(ReadFile);
