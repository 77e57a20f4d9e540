use crate::Provider;
use std::time::Duration;

/// Why a call produced no answer. Each message says what to change.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("no model chosen: pass --model, set PFLOW_MODEL, or set llm.model in settings.json")]
    NoModel,
    #[error(
        "unknown LLM provider '{0}' in settings.json llm.provider: use \"anthropic\" or \"openai\""
    )]
    UnknownProvider(String),
    #[error("{provider} needs an API key: set {variable} (or llm.api_key in settings.json)")]
    MissingKey {
        provider: Provider,
        variable: &'static str,
    },
    #[error("{provider} does not know the model '{model}': {message}")]
    UnknownModel {
        provider: Provider,
        model: String,
        message: String,
    },
    #[error("{provider} did not accept the API key ({status}): {message}")]
    Unauthorized {
        provider: Provider,
        status: u16,
        message: String,
    },
    #[error("the model refused to answer: {0}")]
    Refusal(String),
    #[error("{provider} answered HTTP {status} after {attempts} attempt(s): {message}")]
    Status {
        provider: Provider,
        status: u16,
        attempts: u32,
        message: String,
    },
    #[error(
        "{provider} asked to wait {wait:?} before retrying, longer than the {limit:?} allowed"
    )]
    RetryTooFarAway {
        provider: Provider,
        wait: Duration,
        limit: Duration,
    },
    #[error("cannot reach {provider} at {url}: {message}")]
    Transport {
        provider: Provider,
        url: String,
        message: String,
    },
    #[error("{provider} did not answer within {after:?}")]
    Timeout { provider: Provider, after: Duration },
    #[error("cancelled")]
    Cancelled,
    #[error("{provider}'s answer is not in its wire format: {message}")]
    Malformed { provider: Provider, message: String },
}

impl LlmError {
    /// Whether the same request may succeed if sent again later.
    pub(crate) fn retryable_status(status: u16) -> bool {
        status == 408 || status == 409 || status == 429 || status >= 500
    }
}
