//! What the planner reports while it works: for a progress display and for the trace.

use crate::shared::Mode;
use pflow_llm::{Provider, Request, Response, Usage};
use pflow_runtime::runtime_validation::RuntimeRoute;
use pflow_runtime::NodeFailure;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum PlannerEvent {
    /// A planner node starts.
    Step {
        node: &'static str,
    },
    /// A node returned `action`, which leads to `to` (None: the flow ends).
    Route {
        from: &'static str,
        action: &'static str,
        to: Option<&'static str>,
    },
    Context {
        types_listed: usize,
        types_total: usize,
        saved_listed: usize,
        saved_total: usize,
    },
    LlmRequest {
        call: u32,
        mode: Mode,
        provider: Provider,
        model: String,
        request: Request,
    },
    LlmAnswer {
        call: u32,
        http_requests: u32,
        duration_ms: f64,
        usage: Usage,
        cost_usd: Option<f64>,
        response: Response,
    },
    LlmFailed {
        call: u32,
        error: String,
    },
    /// A candidate was checked (or refused before it could be).
    Validation {
        mode: Mode,
        attempt: u32,
        valid: bool,
        errors: Vec<String>,
    },
    RuntimeValidation {
        route: RuntimeRoute,
        runtime_attempts: u32,
        errors: Vec<NodeFailure>,
        skipped: usize,
        effects: usize,
    },
}

/// One LLM call, with its request and its answer (or failure) reported: the generator and the
/// repair loop ask the same way.
pub(crate) fn ask(
    llm: &pflow_llm::Client,
    request: &Request,
    cancel: &std::sync::atomic::AtomicBool,
    call: u32,
    mode: Mode,
    on_event: &mut dyn FnMut(&PlannerEvent),
) -> Result<pflow_llm::Completion, pflow_llm::LlmError> {
    let config = llm.config();
    on_event(&PlannerEvent::LlmRequest {
        call,
        mode,
        provider: config.provider,
        model: config.model.clone(),
        request: request.clone(),
    });
    let answer = llm.complete(request, cancel);
    on_event(&match &answer {
        Ok(completion) => PlannerEvent::LlmAnswer {
            call,
            http_requests: completion.http_requests,
            duration_ms: completion.duration.as_secs_f64() * 1e3,
            usage: completion.response.usage,
            cost_usd: completion.cost_usd,
            response: completion.response.clone(),
        },
        Err(error) => PlannerEvent::LlmFailed {
            call,
            error: error.to_string(),
        },
    });
    answer
}
