//! What the planner's validator step needs: the top errors as plain strings, the routing of
//! pflow's ValidatorNode, and metadata a saved workflow gets without asking an LLM.

use crate::Report;
use pflow_ir::Workflow;
use serde::Serialize;

/// Generation attempts before the planner gives up.
pub const MAX_ATTEMPTS: u32 = 3;

/// The `count` most important errors, each one plain sentence block (never a debug dump).
pub fn top_errors(report: &Report, count: usize) -> Vec<String> {
    report
        .errors
        .iter()
        .take(count)
        .map(ToString::to_string)
        .collect()
}

/// The category a repair prompt gives an issue: `template_error`, `edge_format`,
/// `invalid_node_type`, `param_error`, `data_flow`, `input_error` or `structure`.
pub fn issue_category(issue: &crate::Issue) -> &'static str {
    use crate::IssueKind;
    match issue.kind {
        IssueKind::Structure if issue.path.starts_with("edges") => "edge_format",
        IssueKind::Structure => "structure",
        IssueKind::NodeType => "invalid_node_type",
        IssueKind::Params => "param_error",
        IssueKind::Template => "template_error",
        IssueKind::DataFlow => "data_flow",
        IssueKind::Inputs => "input_error",
    }
}

/// Where the planner goes after validation, as pflow's ValidatorNode routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// Valid: describe and save it.
    MetadataGeneration,
    /// Invalid, attempts left: generate again with the errors.
    Retry,
    /// No workflow, or invalid with the attempts used up.
    Failed,
}

/// `attempts` is how many generations were validated so far, this one included.
pub fn route(report: Option<&Report>, attempts: u32) -> Route {
    match report {
        None => Route::Failed,
        Some(report) if report.valid => Route::MetadataGeneration,
        Some(_) if attempts >= MAX_ATTEMPTS => Route::Failed,
        Some(_) => Route::Retry,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkflowMetadata {
    /// kebab-case, at most 50 characters.
    pub suggested_name: String,
    pub description: String,
    pub inputs: Vec<Field>,
    pub outputs: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Field {
    pub name: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub description: String,
    pub required: bool,
}

const NAME_LIMIT: usize = 50;

/// Metadata from the workflow itself (and the user's request, when there is one).
pub fn extract_metadata(workflow: &Workflow, request: Option<&str>) -> WorkflowMetadata {
    let purposes: Vec<&str> = workflow
        .nodes
        .iter()
        .filter_map(|n| n.purpose.as_deref())
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let ids: Vec<&str> = workflow.nodes.iter().map(|n| n.id.as_str()).collect();
    let name_source = match request.map(str::trim).filter(|r| !r.is_empty()) {
        Some(request) => request.to_string(),
        None => ids.join(" "),
    };
    let description = match (request, purposes.is_empty()) {
        (Some(request), _) if !request.trim().is_empty() => sentence(request.trim()),
        (_, false) => sentence(&purposes.join(", then ")),
        _ => {
            let types: Vec<&str> = workflow
                .nodes
                .iter()
                .map(|n| n.type_name.as_str())
                .collect();
            format!("Runs {} node(s): {}.", types.len(), types.join(", "))
        }
    };
    WorkflowMetadata {
        suggested_name: kebab_name(&name_source),
        description,
        inputs: workflow
            .inputs
            .iter()
            .map(|(name, spec)| Field {
                name: name.clone(),
                type_name: spec
                    .type_name
                    .clone()
                    .unwrap_or_else(|| "string".to_string()),
                description: spec.description.clone().unwrap_or_default(),
                required: spec.required && spec.default.is_none(),
            })
            .collect(),
        outputs: workflow
            .outputs
            .iter()
            .map(|(name, spec)| Field {
                name: name.clone(),
                type_name: spec.type_name.clone().unwrap_or_else(|| "any".to_string()),
                description: spec.description.clone().unwrap_or_default(),
                required: false,
            })
            .collect(),
    }
}

/// Lower-case words of letters and digits joined by '-', cut at a word boundary to fit 50.
fn kebab_name(text: &str) -> String {
    let mut name = String::new();
    for word in text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
    {
        let extra = if name.is_empty() {
            word.len()
        } else {
            word.len() + 1
        };
        if name.len() + extra > NAME_LIMIT {
            if name.is_empty() {
                name = word[..NAME_LIMIT].to_string();
            }
            break;
        }
        if !name.is_empty() {
            name.push('-');
        }
        name.push_str(&word);
    }
    if name.is_empty() {
        "workflow".to_string()
    } else {
        name
    }
}

fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    let mut out: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    out.push_str(chars.as_str());
    if !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}
