//! The planner's nodes. Each `exec` does one thing; routing lives in `post`.

use crate::contract::{self, Submission};
use crate::events::PlannerEvent;
use crate::flow::{Action, Env, PlannerNode};
use crate::library::{kebab, valid_name};
use crate::shared::{Candidate, Mode, Shared};
use crate::{context, prompt, PlanStatus, PlannerOutput};
use pflow_ir::Workflow;
use pflow_llm::{structured, Completion, LlmError, Request, Role};
use pflow_runtime::runtime_validation::{
    validate_runtime, RuntimeRoute, RuntimeValidation, MAX_RUNTIME_ATTEMPTS,
};
use pflow_validate::{extract_metadata, top_errors, WorkflowMetadata, MAX_ATTEMPTS};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Errors sent back to the model per retry.
const ERRORS_PER_RETRY: usize = 3;
const MAX_ANSWER_TOKENS: u32 = 8192;

pub(crate) struct ContextNode;

impl PlannerNode for ContextNode {
    const NAME: &'static str = "context";
    type Prep = String;
    type Exec = context::Catalog;

    fn prep(&self, shared: &Shared) -> String {
        shared.user_input.clone()
    }

    fn exec(&self, env: &mut Env<'_>, request: String) -> context::Catalog {
        context::build(&request, env.host.registry.specs(), &env.library.list())
    }

    fn post(&self, shared: &mut Shared, env: &mut Env<'_>, catalog: context::Catalog) -> Action {
        env.emit(PlannerEvent::Context {
            types_listed: catalog.types_listed,
            types_total: catalog.types_total,
            saved_listed: catalog.saved_listed,
            saved_total: catalog.saved_total,
        });
        shared.planning_context = catalog.text;
        "default"
    }
}

pub(crate) struct GeneratorNode;

impl PlannerNode for GeneratorNode {
    const NAME: &'static str = "generator";
    type Prep = (Request, Mode, u32);
    type Exec = Result<Completion, LlmError>;

    fn prep(&self, shared: &Shared) -> Self::Prep {
        let base = prompt::request(
            &shared.planning_context,
            &shared.user_input,
            &shared.cli_params,
        );
        let text = match shared.mode {
            Mode::Draft if shared.generation_attempts == 0 => base,
            Mode::Draft => prompt::retry(
                &base,
                shared.generation_attempts,
                MAX_ATTEMPTS,
                shared.generated_workflow.as_ref(),
                &shared.validation_errors,
            ),
            Mode::RuntimeFix => prompt::runtime_fix(
                &base,
                shared.runtime_attempts,
                MAX_RUNTIME_ATTEMPTS,
                shared.dry_run_workflow.as_ref().unwrap_or(&Value::Null),
                &shared.runtime_errors,
                &shared.rejection,
            ),
        };
        let request = Request {
            system: prompt::system().to_string(),
            messages: vec![(Role::User, text)],
            tool: Some(contract::tool()),
            max_tokens: MAX_ANSWER_TOKENS,
            temperature: Some(0.0),
        };
        (request, shared.mode, shared.llm_calls + 1)
    }

    fn exec(&self, env: &mut Env<'_>, (request, mode, call): Self::Prep) -> Self::Exec {
        crate::events::ask(env.llm, &request, env.cancel, call, mode, env.on_event)
    }

    fn post(&self, shared: &mut Shared, env: &mut Env<'_>, answer: Self::Exec) -> Action {
        let completion = match answer {
            Ok(completion) => completion,
            Err(LlmError::Cancelled) => {
                shared.cancelled = true;
                return "failed";
            }
            Err(error) => {
                shared.llm_error = Some(error.to_string());
                return "failed";
            }
        };
        shared.llm_calls += 1;
        shared.http_requests += completion.http_requests;
        shared.usage += completion.response.usage;
        if let Some(cost) = completion.cost_usd {
            *shared.cost_usd.get_or_insert(0.0) += cost;
        }
        match read_answer(shared, env, &completion) {
            Ok((workflow, candidate)) => {
                shared.generated_workflow = Some(workflow);
                shared.candidate = Some(candidate);
                shared.rejection.clear();
            }
            Err((workflow, problems)) => {
                // The retry shows this answer's workflow, or none: never an older one.
                shared.generated_workflow = workflow;
                shared.rejection = problems;
            }
        }
        "default"
    }
}

type Refused = (Option<Value>, Vec<String>);

/// The answer as a candidate, or why it is refused before validation (with its workflow, when
/// it had one, to show the model).
fn read_answer(
    shared: &Shared,
    env: &Env<'_>,
    completion: &Completion,
) -> Result<(Value, Candidate), Refused> {
    let off_contract = |problem: String| {
        format!(
            "Your answer did not fit `{}`: {problem}.",
            contract::TOOL_NAME
        )
    };
    let object = structured::object(&completion.response, contract::TOOL_NAME)
        .map_err(|e| (None, vec![off_contract(e.to_string())]))?;
    let submission = contract::parse(object)
        .map_err(|problems| (None, problems.into_iter().map(off_contract).collect()))?;
    let (workflow, candidate) = match submission {
        Submission::New {
            workflow,
            name,
            description,
            params,
        } => (
            workflow,
            Candidate {
                name: if valid_name(&name) {
                    name
                } else {
                    kebab(&name)
                },
                description: description.trim().to_string(),
                reused: None,
                params,
            },
        ),
        Submission::Reuse { name, params } => {
            let saved = env
                .library
                .load(&name)
                .map_err(|e| (None, vec![format!("{e}.")]))?;
            (
                saved.ir,
                Candidate {
                    name: saved.name,
                    description: saved.description,
                    reused: Some(name),
                    params,
                },
            )
        }
    };
    let canonical = canonical(&workflow);
    if let Some(index) = shared.seen_candidates.iter().position(|c| *c == canonical) {
        let problem = format!(
            "This workflow is identical to the one you submitted in answer {}, which did not \
             work. Change what the errors point at.",
            index + 1
        );
        return Err((Some(workflow), vec![problem]));
    }
    if shared.mode == Mode::RuntimeFix {
        if let Some(before) = &shared.dry_run_workflow {
            let changes = structural_changes(before, &workflow);
            if !changes.is_empty() {
                let problem = format!(
                    "A runtime fix may change only params, param and input names, and template \
                     paths, but this one changes the nodes: {}. Keep every node with its id and \
                     type.",
                    changes.join("; ")
                );
                return Err((Some(workflow), vec![problem]));
            }
        }
    }
    Ok((workflow, candidate))
}

/// Nodes added, removed or retyped between two workflows, as sentences.
fn structural_changes(before: &Value, after: &Value) -> Vec<String> {
    let types = |workflow: &Value| -> BTreeMap<String, String> {
        workflow["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| {
                (
                    n["id"].as_str().unwrap_or_default().to_string(),
                    n["type"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    let (old, new) = (types(before), types(after));
    let mut changes = Vec::new();
    for (id, old_type) in &old {
        match new.get(id) {
            None => changes.push(format!("node '{id}' was removed")),
            Some(new_type) if new_type != old_type => changes.push(format!(
                "node '{id}' was retyped from '{old_type}' to '{new_type}'"
            )),
            Some(_) => {}
        }
    }
    for id in new.keys().filter(|id| !old.contains_key(*id)) {
        changes.push(format!("node '{id}' was added"));
    }
    changes
}

/// JSON with every object's keys sorted: two candidates that differ only in key order are the
/// same candidate.
pub(crate) fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

pub(crate) struct ValidatorNode;

pub(crate) struct ValidatorPrep {
    rejection: Vec<String>,
    workflow: Option<Value>,
    params: Map<String, Value>,
    cli_params: Map<String, Value>,
}

impl PlannerNode for ValidatorNode {
    const NAME: &'static str = "validator";
    type Prep = ValidatorPrep;
    /// The ranked errors; empty when the candidate is valid.
    type Exec = Vec<String>;

    fn prep(&self, shared: &Shared) -> ValidatorPrep {
        ValidatorPrep {
            rejection: shared.rejection.clone(),
            workflow: shared.generated_workflow.clone(),
            params: shared.merged_params(),
            cli_params: shared.cli_params.clone(),
        }
    }

    fn exec(&self, env: &mut Env<'_>, prep: ValidatorPrep) -> Vec<String> {
        if !prep.rejection.is_empty() {
            return prep.rejection;
        }
        let Some(workflow) = prep.workflow else {
            return vec!["Your answer contained no workflow.".to_string()];
        };
        let report = pflow_validate::validate(&workflow, &env.host.registry, Some(&prep.params));
        let mut errors = top_errors(&report, ERRORS_PER_RETRY);
        errors.extend(undeclared_params(&workflow, &prep.params, &prep.cli_params));
        errors.truncate(ERRORS_PER_RETRY);
        errors
    }

    fn post(&self, shared: &mut Shared, env: &mut Env<'_>, errors: Vec<String>) -> Action {
        let refused = !shared.rejection.is_empty();
        if !refused {
            if let Some(workflow) = &shared.generated_workflow {
                shared.seen_candidates.push(canonical(workflow));
            }
        }
        let valid = errors.is_empty();
        let attempt = match shared.mode {
            Mode::Draft => {
                shared.generation_attempts += 1;
                shared.generation_attempts
            }
            Mode::RuntimeFix => shared.runtime_attempts,
        };
        env.emit(PlannerEvent::Validation {
            mode: shared.mode,
            attempt,
            valid,
            errors: errors.clone(),
        });
        shared.validation_errors = errors;
        if valid {
            return "metadata_generation";
        }
        let limit = match shared.mode {
            Mode::Draft => MAX_ATTEMPTS,
            Mode::RuntimeFix => MAX_RUNTIME_ATTEMPTS,
        };
        if attempt >= limit {
            return "failed";
        }
        if shared.mode == Mode::RuntimeFix {
            // A refused or invalid fix uses up a fix, like one that fails when run.
            shared.runtime_attempts += 1;
            shared.rejection = std::mem::take(&mut shared.validation_errors);
            shared.validation_errors = shared.rejection.clone();
        }
        "retry"
    }
}

/// Values given for inputs the workflow does not declare: the run would refuse them.
fn undeclared_params(
    workflow: &Value,
    params: &Map<String, Value>,
    cli_params: &Map<String, Value>,
) -> Vec<String> {
    let declared = workflow["inputs"].as_object();
    let is_declared = |name: &str| declared.is_some_and(|inputs| inputs.contains_key(name));
    params
        .keys()
        .filter(|name| !is_declared(name))
        .map(|name| {
            let from = if cli_params.contains_key(name) {
                "The user gave"
            } else {
                "Your params give"
            };
            format!(
                "{from} a value for '{name}', which the workflow does not declare as an input. \
                 Declare `inputs.{name}` and use it as ${{{name}}}, or drop the value."
            )
        })
        .collect()
}

pub(crate) struct MetadataNode;

impl PlannerNode for MetadataNode {
    const NAME: &'static str = "metadata";
    type Prep = (Option<Value>, String, Candidate);
    type Exec = Option<WorkflowMetadata>;

    fn prep(&self, shared: &Shared) -> Self::Prep {
        (
            shared.generated_workflow.clone(),
            shared.user_input.clone(),
            shared.candidate.clone().unwrap_or_default(),
        )
    }

    fn exec(&self, _env: &mut Env<'_>, (workflow, request, candidate): Self::Prep) -> Self::Exec {
        let workflow = Workflow::from_json(&workflow?.to_string()).ok()?;
        let mut metadata = extract_metadata(&workflow, Some(&request));
        // The model's name and description, when usable: it knows what the workflow is for.
        if valid_name(&candidate.name) {
            metadata.suggested_name = candidate.name;
        }
        if !candidate.description.is_empty() {
            metadata.description = candidate.description;
        }
        Some(metadata)
    }

    fn post(&self, shared: &mut Shared, _env: &mut Env<'_>, metadata: Self::Exec) -> Action {
        shared.workflow_metadata = metadata;
        "default"
    }
}

pub(crate) struct RuntimeValidationNode;

impl PlannerNode for RuntimeValidationNode {
    const NAME: &'static str = "runtime_validation";
    type Prep = (Value, Map<String, Value>, u32);
    type Exec = RuntimeValidation;

    fn prep(&self, shared: &Shared) -> Self::Prep {
        (
            shared.generated_workflow.clone().unwrap_or_default(),
            shared.merged_params(),
            shared.runtime_attempts,
        )
    }

    fn exec(&self, env: &mut Env<'_>, (workflow, params, attempts): Self::Prep) -> Self::Exec {
        match Workflow::from_json(&workflow.to_string()) {
            Ok(parsed) => validate_runtime(
                env.host.executor(env.cancel),
                &parsed,
                params,
                false,
                attempts,
            ),
            // Validation passed, so this cannot happen; if it does, it is not the model's to fix.
            Err(error) => RuntimeValidation::cannot_run(error.to_string(), attempts),
        }
    }

    fn post(&self, shared: &mut Shared, env: &mut Env<'_>, validation: Self::Exec) -> Action {
        env.emit(PlannerEvent::RuntimeValidation {
            route: validation.route,
            runtime_attempts: validation.runtime_attempts,
            errors: validation.runtime_errors.clone(),
            skipped: validation.skipped.len(),
            effects: validation.effects.len(),
        });
        shared.dry_run_workflow = shared.generated_workflow.clone();
        shared.runtime_errors = validation.runtime_errors.clone();
        shared.runtime_attempts = validation.runtime_attempts;
        let route = validation.route;
        shared.runtime_validation = Some(validation);
        if env.cancel.is_cancelled() {
            shared.cancelled = true;
            return "failed_runtime";
        }
        match route {
            RuntimeRoute::Default => "default",
            RuntimeRoute::RuntimeFix => {
                shared.mode = Mode::RuntimeFix;
                shared.rejection.clear();
                "runtime_fix"
            }
            RuntimeRoute::FailedRuntime => "failed_runtime",
        }
    }
}

pub(crate) struct ParameterPreparationNode;

impl PlannerNode for ParameterPreparationNode {
    const NAME: &'static str = "parameter_preparation";
    type Prep = Map<String, Value>;
    type Exec = Map<String, Value>;

    fn prep(&self, shared: &Shared) -> Self::Prep {
        shared.merged_params()
    }

    fn exec(&self, _env: &mut Env<'_>, params: Self::Prep) -> Self::Exec {
        params
    }

    fn post(&self, shared: &mut Shared, _env: &mut Env<'_>, params: Self::Exec) -> Action {
        shared.execution_params = params;
        "default"
    }
}

pub(crate) struct ResultNode;

impl PlannerNode for ResultNode {
    const NAME: &'static str = "result";
    type Prep = PlannerOutput;
    type Exec = PlannerOutput;

    fn prep(&self, shared: &Shared) -> PlannerOutput {
        let succeeded = !shared.cancelled
            && shared.llm_error.is_none()
            && shared
                .runtime_validation
                .as_ref()
                .is_some_and(|v| v.route == RuntimeRoute::Default)
            && shared.validation_errors.is_empty();
        let status = if shared.cancelled {
            PlanStatus::Cancelled
        } else if succeeded {
            PlanStatus::Planned
        } else {
            PlanStatus::Failed
        };
        let errors: Vec<String> = match (&shared.llm_error, status) {
            (Some(error), _) => vec![error.clone()],
            (None, PlanStatus::Failed) if !shared.validation_errors.is_empty() => {
                shared.validation_errors.clone()
            }
            (None, PlanStatus::Failed) => shared
                .runtime_errors
                .iter()
                .map(ToString::to_string)
                .collect(),
            _ => Vec::new(),
        };
        let candidate = shared.candidate.clone().unwrap_or_default();
        let metadata = shared.workflow_metadata.as_ref();
        PlannerOutput {
            status,
            name: metadata
                .map(|m| m.suggested_name.clone())
                .or((!candidate.name.is_empty()).then_some(candidate.name)),
            description: metadata.map(|m| m.description.clone()),
            reused: candidate.reused,
            workflow: shared.generated_workflow.clone(),
            execution_params: shared.execution_params.clone(),
            errors,
            runtime_errors: shared.runtime_errors.clone(),
            generation_attempts: shared.generation_attempts,
            runtime_attempts: shared.runtime_attempts,
            llm_calls: shared.llm_calls,
            http_requests: shared.http_requests,
            usage: shared.usage,
            cost_usd: shared.cost_usd,
        }
    }

    fn exec(&self, _env: &mut Env<'_>, output: PlannerOutput) -> PlannerOutput {
        output
    }

    fn post(&self, shared: &mut Shared, _env: &mut Env<'_>, output: PlannerOutput) -> Action {
        shared.planner_output = Some(output);
        "default"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_make_a_new_candidate() {
        assert_eq!(
            canonical(&json!({"b": 1, "a": {"d": [1, {"z": 0, "y": 1}], "c": 2}})),
            canonical(&json!({"a": {"c": 2, "d": [1, {"y": 1, "z": 0}]}, "b": 1}))
        );
    }

    #[test]
    fn structural_changes_name_each_node() {
        let before = json!({"nodes": [{"id": "a", "type": "http"}, {"id": "b", "type": "shell"}]});
        let after = json!({"nodes": [{"id": "a", "type": "shell"}, {"id": "c", "type": "shell"}]});
        assert_eq!(
            structural_changes(&before, &after),
            [
                "node 'a' was retyped from 'http' to 'shell'",
                "node 'b' was removed",
                "node 'c' was added"
            ]
        );
        let params_only = json!({"nodes": [{"id": "a", "type": "http", "params": {"url": "x"}}, {"id": "b", "type": "shell"}]});
        assert!(structural_changes(&before, &params_only).is_empty());
    }
}
