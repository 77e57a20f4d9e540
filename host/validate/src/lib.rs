//! Static validation of pflow workflows: every problem an LLM-generated workflow typically has,
//! found before anything runs, each with a path, a message and a suggestion that a person and
//! an LLM can act on. No WebAssembly runs here; node types are known through a [`NodeCatalog`].

mod catalog;
mod planner;
mod salvage;
mod semantics;
mod structure;

pub use catalog::{NodeCatalog, Port};
pub use planner::{
    extract_metadata, issue_category, route, top_errors, Route, WorkflowMetadata, MAX_ATTEMPTS,
};

use pflow_ir::Workflow;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// What an issue is about, in order of importance: a workflow with a broken structure cannot be
/// checked further, an unknown node type hides its templates' problems, and so on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueKind {
    Structure,
    NodeType,
    Params,
    Template,
    DataFlow,
    Inputs,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Issue {
    pub severity: Severity,
    pub kind: IssueKind,
    /// Where in the document, e.g. `nodes[1].params.url`.
    pub path: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

impl Issue {
    pub(crate) fn error(
        kind: IssueKind,
        path: &str,
        message: String,
        suggestion: Option<String>,
    ) -> Self {
        Issue {
            severity: Severity::Error,
            kind,
            path: path.to_string(),
            message,
            suggestion,
        }
    }

    pub(crate) fn warning(
        kind: IssueKind,
        path: &str,
        message: String,
        suggestion: Option<String>,
    ) -> Self {
        Issue {
            severity: Severity::Warning,
            ..Issue::error(kind, path, message, suggestion)
        }
    }
}

/// `Validation error at nodes[1].type: <message>`, then the suggestion on its own line.
impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.severity {
            Severity::Error => "Validation error",
            Severity::Warning => "Warning",
        };
        write!(f, "{what} at {}: {}", self.path, self.message)?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, "\n{suggestion}")?;
        }
        Ok(())
    }
}

/// Every issue found, errors first and by importance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub valid: bool,
    pub errors: Vec<Issue>,
    pub warnings: Vec<Issue>,
}

impl Report {
    fn into_issues(self) -> Vec<Issue> {
        let mut issues = self.errors;
        issues.extend(self.warnings);
        issues
    }

    fn from_issues(mut issues: Vec<Issue>) -> Self {
        // Stable: within one kind, document order stays.
        issues.sort_by_key(|issue| (issue.severity, issue.kind));
        let (errors, warnings): (Vec<Issue>, Vec<Issue>) = issues
            .into_iter()
            .partition(|i| i.severity == Severity::Error);
        Report {
            valid: errors.is_empty(),
            errors,
            warnings,
        }
    }
}

/// Validates a workflow given as text: a `.pflow.md` document, JSON IR, or pflow's saved
/// wrapper `{name, description, ir}`. A document that cannot be read is one structure error
/// with its line.
pub fn validate_text(
    text: impl Into<String>,
    catalog: &dyn NodeCatalog,
    inputs: Option<&Map<String, Value>>,
) -> Report {
    // Owned, so that a large text can go as soon as it is parsed.
    let text: String = text.into();
    if pflow_ir::markdown::looks_like_markdown(&text) {
        return match pflow_ir::markdown::parse_markdown(&text) {
            Ok(document) => validate(&document.ir, catalog, inputs),
            Err(error) => Report::from_issues(vec![Issue::error(
                IssueKind::Structure,
                &error
                    .line
                    .map_or("(document)".to_string(), |l| format!("line {l}")),
                error.message,
                error.suggestion,
            )]),
        };
    }
    validate_json_text(text, catalog, inputs)
}

/// Validates JSON text: the IR, or pflow's saved wrapper around it.
pub fn validate_json_text(
    text: String,
    catalog: &dyn NodeCatalog,
    inputs: Option<&Map<String, Value>>,
) -> Report {
    if let Some(duplicate) = pflow_ir::find_duplicate_key(&text) {
        return Report::from_issues(vec![Issue::error(
            IssueKind::Structure,
            "(document)",
            format!("Invalid JSON: {duplicate}"),
            Some("Keep one of the two values".to_string()),
        )]);
    }
    let parsed = serde_json::from_str::<Value>(&text);
    drop(text);
    match parsed {
        Ok(Value::Object(mut wrapper))
            if !wrapper.contains_key("nodes")
                && wrapper.get("ir").is_some_and(Value::is_object) =>
        {
            let ir = wrapper.remove("ir").unwrap_or_default();
            validate(&ir, catalog, inputs)
        }
        Ok(doc) => {
            let mut issues = Vec::new();
            structure::check(&doc, &mut issues);
            if !issues.is_empty() {
                return with_the_sound_parts(&doc, issues, catalog, inputs);
            }
            // Consuming the document moves its strings into the workflow and frees it as it
            // goes, so a large workflow is not held twice.
            match serde_json::from_value::<Workflow>(doc) {
                Ok(workflow) => check_semantics(&workflow, catalog, inputs),
                Err(e) => not_a_workflow(e),
            }
        }
        Err(e) => Report::from_issues(vec![Issue::error(
            IssueKind::Structure,
            "(document)",
            format!(
                "Invalid JSON at line {}, column {}: {}",
                e.line(),
                e.column(),
                {
                    let mut message = e.to_string();
                    if let Some(cut) = message.rfind(" at line ") {
                        message.truncate(cut);
                    }
                    message
                }
            ),
            None,
        )]),
    }
}

/// Validates a workflow document. `inputs`, when given, are the values a run would get
/// (`key=value` text or JSON); required inputs without a value or default are then errors.
pub fn validate(
    doc: &Value,
    catalog: &dyn NodeCatalog,
    inputs: Option<&Map<String, Value>>,
) -> Report {
    let mut issues = Vec::new();
    structure::check(doc, &mut issues);
    if issues.is_empty() {
        return match Workflow::deserialize(doc) {
            Ok(workflow) => check_semantics(&workflow, catalog, inputs),
            Err(error) => not_a_workflow(error),
        };
    }
    with_the_sound_parts(doc, issues, catalog, inputs)
}

/// The shape errors, with what the semantic checks find in the document's sound parts: a wrong
/// shape does not hide the rest, one report has everything.
fn with_the_sound_parts(
    doc: &Value,
    mut issues: Vec<Issue>,
    catalog: &dyn NodeCatalog,
    inputs: Option<&Map<String, Value>>,
) -> Report {
    if let Some(workflow) = salvage::salvage(doc) {
        issues.extend(check_semantics(&workflow, catalog, inputs).into_issues());
    }
    Report::from_issues(issues)
}

fn not_a_workflow(error: serde_json::Error) -> Report {
    Report::from_issues(vec![Issue::error(
        IssueKind::Structure,
        "(document)",
        error.to_string(),
        None,
    )])
}

fn check_semantics(
    workflow: &Workflow,
    catalog: &dyn NodeCatalog,
    inputs: Option<&Map<String, Value>>,
) -> Report {
    let mut issues = Vec::new();
    semantics::check(workflow, catalog, inputs, &mut issues);
    // In permissive mode an unresolved template stays as written at run time: a warning.
    if workflow.template_resolution_mode == pflow_ir::TemplateMode::Permissive {
        for issue in &mut issues {
            if issue.kind == IssueKind::Template && issue.severity == Severity::Error {
                issue.severity = Severity::Warning;
            }
        }
    }
    Report::from_issues(issues)
}
