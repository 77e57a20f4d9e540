//! Runtime validation: run a candidate workflow once (dry by default), collect what went wrong,
//! and say whether an LLM can fix it, as the planner's runtime-validation step routes.

use crate::dry::{DryRun, Effect, Skipped, UNVERIFIED};
use crate::error::NodeFailure;
use crate::executor::{Executor, NodeReport, Status};
use pflow_ir::template::{Scope, Template};
use pflow_ir::Workflow;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::sync::Arc;

/// Fix attempts before the planner gives up on runtime errors.
pub const MAX_RUNTIME_ATTEMPTS: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeRoute {
    /// Nothing went wrong.
    Default,
    /// Something an LLM can fix went wrong, and attempts are left.
    RuntimeFix,
    /// Nothing fixable went wrong, the attempts are used up, or the workflow cannot run.
    FailedRuntime,
}

/// A node that did not run for real, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unverified {
    pub node_id: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct RuntimeValidation {
    pub route: RuntimeRoute,
    /// Attempts after this validation (one more when the route is `runtime_fix`).
    pub runtime_attempts: u32,
    /// Every issue, in the one error shape.
    pub runtime_errors: Vec<NodeFailure>,
    pub live: bool,
    /// Nodes that ran for real.
    pub executed: Vec<String>,
    pub unverified: Vec<Unverified>,
    /// Templates that read from an unverified node: not checked, not missing.
    pub unverified_templates: Vec<String>,
    /// What the dry run did not do.
    pub skipped: Vec<Skipped>,
    /// Files commands would have created, changed or deleted.
    pub effects: Vec<Effect>,
    /// Each node's status and time in the run.
    pub nodes: Vec<NodeReport>,
}

impl RuntimeValidation {
    /// A workflow that could not start (missing inputs, unknown types): nothing an LLM fix of
    /// params could repair, so `failed_runtime`.
    pub fn cannot_run(message: String, attempts: u32) -> RuntimeValidation {
        RuntimeValidation {
            route: RuntimeRoute::FailedRuntime,
            runtime_errors: vec![NodeFailure::new("compile", "cannot_run", message)],
            ..RuntimeValidation::clean(false, attempts)
        }
    }

    /// Nothing wrong, nothing done yet.
    fn clean(live: bool, attempts: u32) -> RuntimeValidation {
        RuntimeValidation {
            route: RuntimeRoute::Default,
            runtime_attempts: attempts,
            runtime_errors: Vec::new(),
            live,
            executed: Vec::new(),
            unverified: Vec::new(),
            unverified_templates: Vec::new(),
            skipped: Vec::new(),
            effects: Vec::new(),
            nodes: Vec::new(),
        }
    }
}

/// Runs `workflow` once with `inputs` on a fresh store (dry unless `live`) and classifies what
/// went wrong. `attempts` is how many runtime fixes were already tried.
pub fn validate_runtime(
    mut executor: Executor<'_>,
    workflow: &Workflow,
    inputs: Map<String, Value>,
    live: bool,
    attempts: u32,
) -> RuntimeValidation {
    let dry = (!live).then(|| Arc::new(DryRun::default()));
    executor.dry = dry.clone();
    let mut validation = RuntimeValidation::clean(live, attempts);
    let report = match executor.run(workflow, inputs, &mut |_| {}) {
        Ok(report) => report,
        Err(error) => {
            return RuntimeValidation {
                live,
                ..RuntimeValidation::cannot_run(error.to_string(), attempts)
            }
        }
    };
    if let Some(dry) = &dry {
        validation.skipped = dry.skipped();
        validation.effects = dry.effects();
    }

    // 1. Node errors and traps raised during the run.
    let mut unverified_ids = HashSet::new();
    let mut failed_ids = HashSet::new();
    for node in &report.nodes {
        match &node.error {
            Some(error) if error.category == UNVERIFIED => {
                unverified_ids.insert(node.id.clone());
                validation.unverified.push(Unverified {
                    node_id: node.id.clone(),
                    reason: error.message.clone(),
                });
            }
            // A template that reads an unverified node cannot resolve in a dry run; the node
            // reading it is unverified too, not wrong.
            Some(error) if reads_unverified(error, &unverified_ids).is_some() => {
                let source = reads_unverified(error, &unverified_ids).unwrap_or_default();
                unverified_ids.insert(node.id.clone());
                validation
                    .unverified_templates
                    .extend(error.attempted.iter().cloned());
                validation.unverified.push(Unverified {
                    node_id: node.id.clone(),
                    reason: format!(
                        "it reads the output of '{source}', which did not run for real"
                    ),
                });
            }
            Some(error) => {
                failed_ids.insert(node.id.clone());
                validation.runtime_errors.push(error.clone());
            }
            None if node.status == Status::Succeeded => validation.executed.push(node.id.clone()),
            None => {}
        }
    }
    // 2. `error` values that nodes wrote without failing.
    for node in &workflow.nodes {
        if failed_ids.contains(&node.id) || unverified_ids.contains(&node.id) {
            continue;
        }
        if let Some(error) = report
            .state
            .store
            .get(&node.id)
            .and_then(|ns| ns.get("error"))
        {
            validation.runtime_errors.push(NodeFailure {
                available: written_keys(&report.state.store, &node.id),
                ..NodeFailure::new(
                    "namespaced_error",
                    "node_error",
                    pflow_ir::template::render(error),
                )
                .at(&node.id, &node.type_name)
            });
        }
    }
    // 3. Templates that read what a node did not write.
    let already: HashSet<String> = validation
        .runtime_errors
        .iter()
        .flat_map(|e| e.attempted.iter().cloned())
        .collect();
    for text in template_texts(workflow) {
        let template = Template::parse(&text);
        for reference in template.references() {
            let Some(node) = workflow
                .node(&reference.root)
                .filter(|_| reference.is_node_reference())
            else {
                continue;
            };
            let written = reference.to_string();
            if unverified_ids.contains(&node.id) {
                if !validation.unverified_templates.contains(&written) {
                    validation.unverified_templates.push(written);
                }
                continue;
            }
            // A node that did not run (an earlier failure, a branch not taken) is no evidence,
            // and what a failed node did not write follows from its failure, already reported.
            if !report.state.store.contains_key(&node.id)
                || failed_ids.contains(&node.id)
                || already.contains(&written)
            {
                continue;
            }
            if let Err(unresolved) = reference.resolve(&report.state.store as &dyn Scope) {
                if validation
                    .runtime_errors
                    .iter()
                    .any(|e| e.attempted.contains(&written))
                {
                    continue;
                }
                validation.runtime_errors.push(NodeFailure {
                    fixable: true,
                    attempted: vec![written],
                    available: written_keys(&report.state.store, &node.id),
                    ..NodeFailure::new(
                        "missing_template",
                        "missing_template_path",
                        unresolved.message,
                    )
                    .at(&node.id, &node.type_name)
                });
            }
        }
    }
    validation.nodes = report.nodes;
    let (route, runtime_attempts) = route(&validation.runtime_errors, attempts);
    validation.route = route;
    validation.runtime_attempts = runtime_attempts;
    validation
}

/// `default` without issues; `runtime_fix` (one more attempt) when one is fixable and attempts
/// are left; `failed_runtime` otherwise.
pub fn route(issues: &[NodeFailure], attempts: u32) -> (RuntimeRoute, u32) {
    if issues.is_empty() {
        (RuntimeRoute::Default, attempts)
    } else if attempts < MAX_RUNTIME_ATTEMPTS && issues.iter().any(|i| i.fixable) {
        (RuntimeRoute::RuntimeFix, attempts + 1)
    } else {
        (RuntimeRoute::FailedRuntime, attempts)
    }
}

/// The unverified node whose output a failed template read, if that is why `error` happened.
fn reads_unverified(error: &NodeFailure, unverified: &HashSet<String>) -> Option<String> {
    if error.category != "template_error" {
        return None;
    }
    error.attempted.iter().find_map(|text| {
        let template = Template::parse(text);
        template
            .references()
            .first()
            .map(|r| r.root.clone())
            .filter(|root| unverified.contains(root))
    })
}

fn written_keys(store: &Map<String, Value>, node_id: &str) -> Vec<String> {
    store
        .get(node_id)
        .and_then(Value::as_object)
        .map(|ns| ns.keys().cloned().collect())
        .unwrap_or_default()
}

/// Every string holding a template: node params, batch items, output sources.
fn template_texts(workflow: &Workflow) -> Vec<String> {
    fn collect(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(text) if text.contains("${") => out.push(text.clone()),
            Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
            Value::Object(map) => map.values().for_each(|v| collect(v, out)),
            _ => {}
        }
    }
    let mut texts = Vec::new();
    for node in &workflow.nodes {
        node.params.values().for_each(|v| collect(v, &mut texts));
        if let Some(batch) = &node.batch {
            collect(&batch.items, &mut texts);
        }
    }
    texts.extend(workflow.outputs.values().filter_map(|o| o.source.clone()));
    texts
}
