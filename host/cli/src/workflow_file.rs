//! Reading a workflow file, bounded: a file (or device, or pipe) larger than
//! [`MAX_WORKFLOW_BYTES`] is refused while it is read, so `run /dev/zero` costs the cap and no
//! more. And what names a workflow: a path, a saved name, or (over MCP) the IR itself.

use anyhow::{bail, Context, Result};
use pflow_runtime::home::PflowHome;
use serde_json::{Map, Value};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest workflow file, and largest piped standard input, the host reads.
pub const MAX_WORKFLOW_BYTES: u64 = 64 << 20;

/// A workflow file: JSON when it is named `*.json`, else `.pflow.md` or JSON by its content.
pub fn parse(path: &Path, text: &str) -> Result<pflow_ir::Workflow, pflow_ir::ParseError> {
    if is_json(path) {
        pflow_ir::Workflow::from_json_document(text)
    } else {
        pflow_ir::Workflow::from_text(text)
    }
}

pub fn is_json(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

pub fn read(path: &Path) -> Result<String> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("Cannot read workflow file '{}'", path.display()))?;
    // A regular file's size sizes the buffer exactly; devices and pipes say 0 and grow it.
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    read_bounded(file, size, &format!("Workflow file '{}'", path.display()))
}

/// Everything `reader` gives, up to the cap, as UTF-8 text; `size_hint` is the expected size,
/// `what` names it in errors.
pub fn read_bounded(reader: impl Read, size_hint: u64, what: &str) -> Result<String> {
    let capacity = size_hint.min(MAX_WORKFLOW_BYTES) as usize + 1;
    let mut bytes = Vec::with_capacity(capacity);
    reader
        .take(MAX_WORKFLOW_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("Cannot read {}", what.to_lowercase()))?;
    if bytes.len() as u64 > MAX_WORKFLOW_BYTES {
        bail!(
            "{what} is larger than {} MiB, the most the host reads",
            MAX_WORKFLOW_BYTES >> 20
        );
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{what} is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// A workflow file as given, else the saved workflow of that name (`NAME.json` or
/// `NAME.pflow.md` in `~/.pflow/workflows`).
pub fn saved_or_file(home: &PflowHome, given: &Path) -> Option<PathBuf> {
    let is_workflow_file =
        given.is_file() && (is_json(given) || given.to_string_lossy().ends_with(".md"));
    if is_workflow_file {
        return Some(given.to_path_buf());
    }
    let name = given.to_str()?;
    if name.contains('/') || name.contains(char::is_whitespace) {
        return None;
    }
    crate::library_cmd::library(home).file_of(name)
}

/// A workflow as an agent names it over MCP: an IR object, a file path, a saved workflow's
/// name, or the document's own text.
pub enum Source {
    Ir(Value),
    Text { text: String, path: Option<PathBuf> },
}

impl Source {
    pub fn resolve(home: &PflowHome, given: Option<&Value>) -> Result<Source> {
        let text = match given {
            Some(Value::Object(ir)) => return Ok(Source::Ir(Value::Object(ir.clone()))),
            Some(Value::String(text)) => text,
            _ => bail!(
                "'workflow' must be an IR object, a file path, a saved name or the document's text"
            ),
        };
        let is_document = text.contains('\n') || text.trim_start().starts_with('{');
        if is_document {
            return Ok(Source::Text {
                text: text.clone(),
                path: None,
            });
        }
        let Some(path) = saved_or_file(home, Path::new(text)) else {
            bail!("no workflow file or saved workflow named '{text}' (`workflow_list` shows the saved ones)");
        };
        Ok(Source::Text {
            text: read(&path)?,
            path: Some(path),
        })
    }

    /// The file it was read from, when it was.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::Text { path, .. } => path.as_deref(),
            Source::Ir(_) => None,
        }
    }

    /// Every static problem, as `validate` reports them.
    pub fn validate(
        &self,
        catalog: &dyn pflow_validate::NodeCatalog,
        inputs: Option<&Map<String, Value>>,
    ) -> pflow_validate::Report {
        match self {
            Source::Ir(ir) => pflow_validate::validate(ir, catalog, inputs),
            Source::Text {
                text,
                path: Some(path),
            } if is_json(path) => pflow_validate::validate_json_text(text.clone(), catalog, inputs),
            Source::Text { text, .. } => {
                pflow_validate::validate_text(text.clone(), catalog, inputs)
            }
        }
    }

    pub fn parse(&self) -> Result<pflow_ir::Workflow, pflow_ir::ParseError> {
        match self {
            Source::Ir(ir) => pflow_ir::Workflow::from_value(ir.clone()),
            Source::Text {
                text,
                path: Some(path),
            } => parse(path, text),
            Source::Text { text, path: None } => pflow_ir::Workflow::from_text(text),
        }
    }
}
