//! The planner: a request in, a validated and dry-tested workflow out, with one LLM call on the
//! happy path and one per fix.
//!
//! [`Planner::plan`] runs the flow in [`flow`]: local context (no LLM), one forced
//! `submit_workflow` call ([`contract`]), static validation with up to 3 attempts, metadata from
//! the answer, a dry run with up to 3 runtime fixes, then the parameters for the real run. It
//! never touches the user's world: the only run it does is dry. Running for real and saving are
//! the caller's.

pub mod context;
pub mod contract;
pub mod events;
mod flow;
pub mod library;
mod nodes;
pub mod prompt;
pub mod rank;
pub mod repair;
mod search_index;
pub mod shared;
pub mod trace;

pub use events::PlannerEvent;
pub use library::{SavedWorkflow, WorkflowLibrary};
pub use shared::Shared;

use pflow_llm::{Client, Usage};
use pflow_runtime::{CancelToken, Host, NodeFailure};
use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Valid, and its dry run went through: ready to run for real.
    Planned,
    Failed,
    Cancelled,
}

/// `planner_output`: what planning produced, and what it cost.
#[derive(Debug, Clone, Serialize)]
pub struct PlannerOutput {
    pub status: PlanStatus,
    pub name: Option<String>,
    pub description: Option<String>,
    /// The saved workflow reused, when the model chose one.
    pub reused: Option<String>,
    /// The final workflow, or the last candidate when planning failed.
    pub workflow: Option<Value>,
    /// Inputs for the real run.
    pub execution_params: Map<String, Value>,
    /// Why planning failed, most important first.
    pub errors: Vec<String>,
    pub runtime_errors: Vec<NodeFailure>,
    pub generation_attempts: u32,
    pub runtime_attempts: u32,
    /// Answers received (a retried HTTP request is one call).
    pub llm_calls: u32,
    pub http_requests: u32,
    pub usage: Usage,
    /// Estimated; None when the model is not in the price table.
    pub cost_usd: Option<f64>,
}

/// What planning needs: the host (registry, sandbox, settings), an LLM and the saved workflows.
pub struct Planner<'a> {
    pub host: &'a Host,
    pub llm: &'a Client,
    pub library: &'a WorkflowLibrary,
    /// Stops the LLM call in flight (within 10 ms) and the dry run.
    pub cancel: &'a CancelToken,
}

impl Planner<'_> {
    /// Plans `request`; `cli_params` are the user's `key=value` inputs. Stops early when
    /// `cancel` is set (the LLM call in flight within 10 ms). The store comes back
    /// whole: `planner_output` is the result, `runtime_validation` what the dry run did.
    pub fn plan(
        &self,
        request: &str,
        cli_params: Map<String, Value>,
        on_event: &mut dyn FnMut(&PlannerEvent),
    ) -> Shared {
        let mut env = flow::Env {
            host: self.host,
            llm: self.llm,
            library: self.library,
            cancel: self.cancel,
            on_event,
        };
        let mut shared = Shared {
            user_input: request.to_string(),
            cli_params,
            ..Shared::default()
        };
        flow::run(&mut env, &mut shared);
        shared
    }
}
