//! The planner's shared store: what the nodes read and write, under the seeds' keys.

use pflow_llm::Usage;
use pflow_runtime::runtime_validation::RuntimeValidation;
use pflow_runtime::NodeFailure;
use pflow_validate::WorkflowMetadata;
use serde::Serialize;
use serde_json::{Map, Value};

/// Whether the generator drafts a workflow or fixes one that failed at run time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Draft,
    RuntimeFix,
}

/// The generator's accepted answer, beyond the workflow itself.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Candidate {
    pub name: String,
    pub description: String,
    /// Set when the answer reused a saved workflow.
    pub reused: Option<String>,
    /// Input values the model took from the request.
    pub params: Map<String, Value>,
}

#[derive(Debug, Default, Serialize)]
pub struct Shared {
    pub user_input: String,
    /// `key=value` pairs from the command line; they win over the model's params.
    pub cli_params: Map<String, Value>,
    pub planning_context: String,
    /// The last candidate that reached validation.
    pub generated_workflow: Option<Value>,
    pub candidate: Option<Candidate>,
    /// Answers validated while drafting.
    pub generation_attempts: u32,
    /// The problems of the last candidate, most important first (the top 3 go back to the
    /// model).
    pub validation_errors: Vec<String>,
    pub workflow_metadata: Option<WorkflowMetadata>,
    pub runtime_errors: Vec<NodeFailure>,
    /// Runtime fixes asked for.
    pub runtime_attempts: u32,
    /// The candidate the last dry run ran: what a runtime fix starts from.
    pub dry_run_workflow: Option<Value>,
    /// The dry run of the last candidate that got that far.
    pub runtime_validation: Option<RuntimeValidation>,
    pub execution_params: Map<String, Value>,
    pub planner_output: Option<crate::PlannerOutput>,

    pub mode: Mode,
    /// Why the last answer was refused before validation (off-contract, identical to an
    /// earlier one, a runtime fix that changed the nodes); empty when it was not.
    pub rejection: Vec<String>,
    /// Canonical JSON of every candidate validated so far.
    pub seen_candidates: Vec<String>,
    pub llm_calls: u32,
    pub http_requests: u32,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    /// Set when the LLM could not be asked (no key, refused, unreachable, cancelled).
    pub llm_error: Option<String>,
    pub cancelled: bool,
}

impl Shared {
    /// The model's params with the command line's on top.
    pub fn merged_params(&self) -> Map<String, Value> {
        let mut params = self
            .candidate
            .as_ref()
            .map(|c| c.params.clone())
            .unwrap_or_default();
        for (key, value) in &self.cli_params {
            params.insert(key.clone(), value.clone());
        }
        params
    }
}
