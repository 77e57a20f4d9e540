//! pflow's `workflow` node: a child workflow run as one step of its parent.
//!
//! It is control flow, as `batch` and `loop` are, so the executor runs it itself: it reads no
//! data and starts nothing but the child's nodes, each of which is sandboxed as usual. The
//! child is named by a file path (relative to the parent's file), a saved workflow's name, or
//! a template resolving to either; it gets only the inputs mapped to it (`inputs:`, every key a
//! declared input of the child), runs over a store of its own, and its declared outputs become
//! the node's outputs. Nesting is bounded (`max_depth`, 10 by default) and a workflow that
//! would run itself again is refused.

use crate::error::NodeFailure;
use crate::registry::PluginSpec;
use crate::sandbox::Outcome;
use pflow_ir::Workflow;
use pflow_validate::Port;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub const NODE_TYPE: &str = "workflow";
/// pflow's default bound on nesting.
pub const DEFAULT_MAX_DEPTH: u64 = 10;
/// A child workflow file larger than this is refused (as the CLI refuses a workflow file).
const MAX_CHILD_BYTES: u64 = 64 << 20;

/// Where a run sits among nested workflows: which files are running above it (to refuse a
/// cycle), where relative paths start, and where saved workflows live.
#[derive(Debug, Clone, Default)]
pub struct Nesting {
    /// The directory of the running workflow's file; relative child paths start here (the
    /// working directory when None).
    pub base_dir: Option<PathBuf>,
    /// `~/.pflow/workflows`, for children named by a saved workflow's name.
    pub saved_dir: Option<PathBuf>,
    /// The canonical files of the workflows running above this one, outermost first.
    pub stack: Vec<PathBuf>,
}

impl Nesting {
    /// A top-level run of the workflow in `file` (when it came from one): its children's paths
    /// start at its directory, and it may not run itself.
    pub fn run_of(mut self, file: Option<&Path>) -> Nesting {
        if let Some(real) = file.and_then(|f| f.canonicalize().ok()) {
            self.base_dir = real.parent().map(Path::to_path_buf);
            self.stack = vec![real];
        }
        self
    }
}

/// What the registry lists for the `workflow` node type.
pub fn spec() -> PluginSpec {
    let port = |name: &str, type_name: &str, description: &str, required: bool| Port {
        name: name.to_string(),
        type_name: type_name.to_string(),
        description: description.to_string(),
        required,
        schema: None,
    };
    PluginSpec {
        name: NODE_TYPE.to_string(),
        description: "Run another workflow as one step: a .pflow.md or JSON file (relative to \
                      this workflow), a saved workflow's name, or a ${template}. Its declared \
                      outputs become this node's outputs."
            .to_string(),
        params: vec![
            port(
                "workflow",
                "str",
                "The child: file path, saved name or template",
                true,
            ),
            port(
                "inputs",
                "dict",
                "Values for the child's declared inputs",
                false,
            ),
            port(
                "max_depth",
                "int",
                "How deep workflows may nest (default 10)",
                false,
            ),
        ],
        outputs: vec![port("*", "any", "The child's declared outputs", false)],
        capabilities: Vec::new(),
    }
}

fn failure(category: &str, message: String) -> NodeFailure {
    NodeFailure {
        fixable: true,
        ..NodeFailure::new("host", category, message)
    }
}

/// The child's file and its workflow.
pub fn load(nesting: &Nesting, reference: &str) -> Result<(PathBuf, Workflow), NodeFailure> {
    let reference = reference.trim();
    if reference.is_empty() {
        return Err(failure("bad_params", "Param 'workflow' is empty".into()));
    }
    let looks_like_path =
        reference.contains('/') || reference.ends_with(".json") || reference.ends_with(".md");
    let path = if looks_like_path {
        let path = Path::new(reference);
        match (&nesting.base_dir, path.is_absolute()) {
            (Some(base), false) => base.join(path),
            _ => path.to_path_buf(),
        }
    } else {
        let dir = nesting.saved_dir.clone().unwrap_or_default();
        let candidates = [
            dir.join(format!("{reference}.json")),
            dir.join(format!("{reference}.pflow.md")),
        ];
        candidates
            .iter()
            .find(|p| p.is_file())
            .cloned()
            .ok_or_else(|| {
                failure(
                    "workflow_not_found",
                    format!(
                        "No saved workflow '{reference}' (looked for {}); give a file path such as ./{reference}.pflow.md",
                        candidates[0].display()
                    ),
                )
            })?
    };
    let real = path.canonicalize().map_err(|e| {
        failure(
            "workflow_not_found",
            format!("Cannot read the child workflow '{}': {e}", path.display()),
        )
    })?;
    let size = std::fs::metadata(&real).map(|m| m.len()).unwrap_or(0);
    if size > MAX_CHILD_BYTES {
        return Err(failure(
            "invalid_workflow",
            format!(
                "The child workflow '{}' is larger than 64 MiB",
                real.display()
            ),
        ));
    }
    let text = std::fs::read_to_string(&real).map_err(|e| {
        failure(
            "workflow_not_found",
            format!("Cannot read the child workflow '{}': {e}", real.display()),
        )
    })?;
    let is_json = real.extension().is_some_and(|e| e == "json");
    let workflow = if is_json {
        Workflow::from_json_document(&text)
    } else {
        Workflow::from_text(&text)
    }
    .map_err(|e| {
        failure(
            "invalid_workflow",
            format!("The child workflow '{}' is invalid: {e}", real.display()),
        )
    })?;
    Ok((real, workflow))
}

/// Refuses a child that is already running above, or one level too deep.
pub fn check_nesting(nesting: &Nesting, child: &Path, max_depth: u64) -> Result<(), NodeFailure> {
    if let Some(at) = nesting.stack.iter().position(|p| p == child) {
        let chain: Vec<String> = nesting.stack[at..]
            .iter()
            .chain([&child.to_path_buf()])
            .map(|p| p.display().to_string())
            .collect();
        return Err(failure(
            "workflow_cycle",
            format!("A workflow would run itself: {}", chain.join(" -> ")),
        ));
    }
    if nesting.stack.len() as u64 >= max_depth {
        return Err(failure(
            "max_depth",
            format!(
                "Workflows nest {} deep here, the limit (max_depth) is {max_depth}",
                nesting.stack.len() + 1
            ),
        ));
    }
    Ok(())
}

/// The params of a `workflow` node: the child reference, its inputs and the depth bound.
pub fn params_of(
    params: &Map<String, Value>,
) -> Result<(String, Map<String, Value>, u64), NodeFailure> {
    let reference = match params.get("workflow") {
        Some(Value::String(reference)) => reference.clone(),
        Some(other) => {
            return Err(failure(
                "bad_params",
                format!("Param 'workflow' must be a path or a name, got {other}"),
            ))
        }
        None => {
            return Err(failure(
                "bad_params",
                "Missing required param 'workflow'".into(),
            ))
        }
    };
    let inputs = match params.get("inputs") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(inputs)) => inputs.clone(),
        Some(other) => {
            return Err(failure(
                "bad_params",
                format!("Param 'inputs' must map the child's input names to values, got {other}"),
            ))
        }
    };
    let max_depth = params
        .get("max_depth")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_MAX_DEPTH);
    Ok((reference, inputs, max_depth))
}

/// The node's outcome from the child's outputs.
pub fn outcome(outputs: Map<String, Value>) -> Outcome {
    Outcome {
        outputs,
        action: pflow_ir::default_action(),
    }
}
