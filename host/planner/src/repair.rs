//! Repair: a workflow that failed (at run time, or static validation when it was loaded) goes
//! to the LLM with its errors, under the planner's contract and validation loops, and the
//! repaired candidate runs again from the checkpoint, so completed nodes are not redone.
//!
//! Per repair: up to 3 answers until one passes static validation (each rejection fed back,
//! with its category). Up to 3 repairs that run. It stops early on an error the model cannot
//! fix (`fixable: false`: auth, network, policy), on an error signature (node, category,
//! normalized message) seen before, and counts an answer identical to the failing workflow or
//! an earlier candidate as a failed answer that is not run.

use crate::contract::{self, Submission};
use crate::events::{ask, PlannerEvent};
use crate::nodes::canonical;
use crate::shared::Mode;
use pflow_llm::{structured, Client, LlmError, Request, Role, Usage};
use pflow_runtime::{CancelToken, Host, NodeFailure, RunReport, Status};
use pflow_validate::{issue_category, validate};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

pub const MAX_REPAIRS: u32 = 3;
pub const MAX_ANSWERS_PER_REPAIR: u32 = 3;
const REPAIR: &str = include_str!("../prompts/repair.md");
const MAX_ANSWER_TOKENS: u32 = 8192;

/// What failed, for the model.
pub struct Failure<'a> {
    pub workflow: &'a Value,
    /// The request the workflow was planned from, when known.
    pub request: Option<&'a str>,
    pub errors: Vec<NodeFailure>,
    pub completed_nodes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairStatus {
    Repaired,
    Failed,
    Cancelled,
}

#[derive(Debug, Clone, Serialize)]
pub struct RepairOutcome {
    pub status: RepairStatus,
    /// The repaired workflow when it ran through; the last candidate otherwise.
    pub workflow: Option<Value>,
    /// Why repair stopped, when it did not succeed.
    pub reason: Option<String>,
    /// Repaired candidates that ran.
    pub repairs: u32,
    pub llm_calls: u32,
    pub usage: Usage,
    #[serde(skip)]
    pub report: Option<RunReport>,
}

pub struct Repairer<'a> {
    pub host: &'a Host,
    pub llm: &'a Client,
    pub cancel: &'a CancelToken,
}

/// The same node, category and message (numbers and case aside): a repair that brings it back
/// did not help.
fn signature(error: &NodeFailure) -> String {
    let message: String = error
        .message
        .chars()
        .map(|c| {
            if c.is_ascii_digit() {
                '#'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("{}|{}|{message}", error.node_id, error.category)
}

impl Repairer<'_> {
    /// Repairs `failure`; `run` runs a valid candidate (resuming from the checkpoint) and
    /// returns its report.
    pub fn repair(
        &self,
        failure: Failure<'_>,
        run: &mut dyn FnMut(&Value) -> Result<RunReport, String>,
        on_event: &mut dyn FnMut(&PlannerEvent),
    ) -> RepairOutcome {
        let mut outcome = RepairOutcome {
            status: RepairStatus::Failed,
            workflow: None,
            reason: None,
            repairs: 0,
            llm_calls: 0,
            usage: Usage::default(),
            report: None,
        };
        if let Some(unfixable) = failure.errors.iter().find(|e| !e.fixable) {
            outcome.reason = Some(format!(
                "the error is not one a repair can fix ([{}] {})",
                unfixable.category, unfixable.message
            ));
            return outcome;
        }
        let mut seen = vec![canonical(failure.workflow)];
        let mut signatures: BTreeSet<String> = failure.errors.iter().map(signature).collect();
        let mut current = failure.workflow.clone();
        let mut errors = failure.errors;
        let mut completed = failure.completed_nodes;
        for repair in 1..=MAX_REPAIRS {
            let candidate = match self.valid_candidate(
                &current,
                failure.request,
                &errors,
                &completed,
                repair,
                &mut seen,
                &mut outcome,
                on_event,
            ) {
                Ok(candidate) => candidate,
                Err(stop) => {
                    outcome.status = stop.0;
                    outcome.reason = Some(stop.1);
                    return outcome;
                }
            };
            outcome.repairs = repair;
            outcome.workflow = Some(candidate.clone());
            let report = match run(&candidate) {
                Ok(report) => report,
                Err(message) => {
                    outcome.reason = Some(message);
                    return outcome;
                }
            };
            match report.status {
                Status::Succeeded => {
                    outcome.status = RepairStatus::Repaired;
                    outcome.report = Some(report);
                    return outcome;
                }
                Status::Cancelled => {
                    outcome.status = RepairStatus::Cancelled;
                    outcome.report = Some(report);
                    return outcome;
                }
                Status::Failed => {}
            }
            let error = report.error.clone().unwrap_or_else(|| {
                NodeFailure::new("host", "failed", "the run failed without an error")
            });
            completed = report.state.execution.completed_nodes.clone();
            outcome.report = Some(report);
            if !error.fixable {
                outcome.reason = Some(format!(
                    "the repaired workflow failed with an error a repair cannot fix ([{}] {})",
                    error.category, error.message
                ));
                return outcome;
            }
            if !signatures.insert(signature(&error)) {
                outcome.reason = Some(format!(
                    "the same error came back ([{}] at '{}'): repairing again would not help",
                    error.category, error.node_id
                ));
                return outcome;
            }
            current = candidate;
            errors = vec![error];
        }
        outcome.reason = Some(format!("{MAX_REPAIRS} repairs ran and none worked"));
        outcome
    }

    /// Asks until an answer passes static validation, or the answers of this repair run out.
    #[allow(clippy::too_many_arguments)]
    fn valid_candidate(
        &self,
        current: &Value,
        request: Option<&str>,
        errors: &[NodeFailure],
        completed: &[String],
        repair: u32,
        seen: &mut Vec<String>,
        outcome: &mut RepairOutcome,
        on_event: &mut dyn FnMut(&PlannerEvent),
    ) -> Result<Value, (RepairStatus, String)> {
        let mut feedback: Vec<String> = Vec::new();
        for answer in 1..=MAX_ANSWERS_PER_REPAIR {
            let request = Request {
                system: crate::prompt::system().to_string(),
                messages: vec![(
                    Role::User,
                    self.prompt(
                        current, request, errors, completed, &feedback, answer, repair,
                    ),
                )],
                tool: Some(contract::tool()),
                max_tokens: MAX_ANSWER_TOKENS,
                temperature: Some(0.0),
            };
            outcome.llm_calls += 1;
            let call = outcome.llm_calls;
            let reply = ask(
                self.llm,
                &request,
                self.cancel,
                call,
                Mode::RuntimeFix,
                on_event,
            );
            let completion = match reply {
                Ok(completion) => completion,
                Err(LlmError::Cancelled) => {
                    return Err((RepairStatus::Cancelled, "cancelled".to_string()))
                }
                Err(error) => return Err((RepairStatus::Failed, error.to_string())),
            };
            outcome.usage += completion.response.usage;
            feedback = match self.check(&completion.response, seen) {
                Ok(candidate) => {
                    on_event(&PlannerEvent::Validation {
                        mode: Mode::RuntimeFix,
                        attempt: answer,
                        valid: true,
                        errors: Vec::new(),
                    });
                    seen.push(canonical(&candidate));
                    return Ok(candidate);
                }
                Err(problems) => problems,
            };
            on_event(&PlannerEvent::Validation {
                mode: Mode::RuntimeFix,
                attempt: answer,
                valid: false,
                errors: feedback.clone(),
            });
        }
        Err((
            RepairStatus::Failed,
            format!(
                "no valid repair in {MAX_ANSWERS_PER_REPAIR} answers; the last one: {}",
                feedback.join(" ")
            ),
        ))
    }

    /// The answer's workflow if it fits the contract, is new, and passes static validation;
    /// otherwise what to tell the model, each problem with its category.
    fn check(
        &self,
        response: &pflow_llm::Response,
        seen: &mut Vec<String>,
    ) -> Result<Value, Vec<String>> {
        let off_contract = |problem: String| {
            format!("[contract] Your answer did not fit `submit_workflow`: {problem}.")
        };
        let object = structured::object(response, contract::TOOL_NAME)
            .map_err(|e| vec![off_contract(e.to_string())])?;
        let workflow = match contract::parse(object) {
            Ok(Submission::New { workflow, .. }) => workflow,
            Ok(Submission::Reuse { .. }) => {
                return Err(vec![off_contract(
                    "a repair needs the whole repaired workflow, not \"reuse\"".to_string(),
                )])
            }
            Err(problems) => return Err(problems.into_iter().map(off_contract).collect()),
        };
        let canonical = canonical(&workflow);
        if let Some(index) = seen.iter().position(|c| *c == canonical) {
            let which = if index == 0 {
                "the workflow that failed".to_string()
            } else {
                format!("repair candidate {index}, which did not work")
            };
            seen.push(canonical);
            return Err(vec![format!(
                "[identical] This workflow is identical to {which}. Change what the errors point at."
            )]);
        }
        let report = validate(&workflow, &self.host.registry, None);
        if report.valid {
            return Ok(workflow);
        }
        seen.push(canonical);
        Err(report
            .errors
            .iter()
            .take(3)
            .map(|issue| format!("[{}] {issue}", issue_category(issue)))
            .collect())
    }

    #[allow(clippy::too_many_arguments)]
    fn prompt(
        &self,
        workflow: &Value,
        request: Option<&str>,
        errors: &[NodeFailure],
        completed: &[String],
        feedback: &[String],
        answer: u32,
        repair: u32,
    ) -> String {
        let request = request
            .map(|r| format!("It was made for this request: {}\n\n", r.trim()))
            .unwrap_or_default();
        let progress = if completed.is_empty() {
            String::new()
        } else {
            format!(
                "These nodes completed; their outputs are kept and they will not run again if \
                 their params stay the same: {}.\n\n",
                completed.join(", ")
            )
        };
        let feedback = if feedback.is_empty() {
            String::new()
        } else {
            format!(
                "\nYour last answer was not accepted:\n\n{}\n",
                feedback
                    .iter()
                    .map(|f| format!("- {}", f.replace('\n', "\n  ")))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        };
        crate::prompt::fill(
            REPAIR,
            &[
                ("attempt", &answer.to_string()),
                ("repair", &repair.to_string()),
                ("max", &MAX_REPAIRS.to_string()),
                ("request", &request),
                (
                    "workflow",
                    &serde_json::to_string_pretty(workflow).unwrap_or_default(),
                ),
                ("progress", &progress),
                (
                    "errors",
                    &serde_json::to_string_pretty(errors).unwrap_or_default(),
                ),
                ("feedback", &feedback),
                ("catalog", &self.interfaces(workflow)),
            ],
        )
    }

    /// The interfaces of the node types the workflow uses.
    fn interfaces(&self, workflow: &Value) -> String {
        let types: BTreeSet<&str> = workflow["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n["type"].as_str())
            .collect();
        let specs = self
            .host
            .registry
            .specs()
            .filter(|(spec, _)| types.contains(spec.name.as_str()));
        let catalog = crate::context::build("", specs, &[]);
        catalog.text.replace("## Saved workflows\n\nNone.\n", "")
    }
}
