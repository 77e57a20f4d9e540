//! Reading a workflow file, bounded: a file (or device, or pipe) larger than
//! [`MAX_WORKFLOW_BYTES`] is refused while it is read, so `run /dev/zero` costs the cap and no
//! more.

use anyhow::{bail, Context, Result};
use std::io::Read;
use std::path::Path;

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
