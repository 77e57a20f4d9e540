//! The `llm` capability: one completion through the providers of `pflow-llm`, configured as
//! the planner's are (`--model`/`PFLOW_MODEL`/`settings.json llm`, the provider's key
//! variable). The node sees prompts and answers, never a key or a base URL. Calls are bounded
//! by the node's deadline and stopped by the run's cancellation.

use crate::bindings::pflow::node::types::NodeError;
use crate::capabilities::HostState;
use crate::error::category;
use pflow_llm::{Client, LlmConfig, LlmError, LlmSettings, Request, Role, Tool};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// pflow's default answer length ceiling when the node sets none.
const DEFAULT_MAX_TOKENS: u32 = 4096;
const ANSWER_TOOL: &str = "respond";

/// The run's access to LLMs: the settings, and one client per model, made on first use (a
/// client holds its own connection pool and runtime).
pub struct LlmAccess {
    settings: LlmSettings,
    clients: Mutex<HashMap<String, Arc<Client>>>,
}

impl std::fmt::Debug for LlmAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmAccess").finish_non_exhaustive()
    }
}

impl LlmAccess {
    /// Access configured by `settings` and the process environment.
    pub fn new(settings: LlmSettings) -> LlmAccess {
        LlmAccess {
            settings,
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// The client for `model` (the configured one when None). pflow's `provider/model` names
    /// are accepted: the provider part picks the provider.
    fn client(&self, model: Option<&str>) -> Result<Arc<Client>, NodeError> {
        let key = model.unwrap_or("").to_string();
        if let Some(client) = self.clients.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return Ok(client);
        }
        let mut settings = self.settings.clone();
        let model = match model.and_then(|m| m.split_once('/')) {
            Some((provider @ ("anthropic" | "openai"), name)) => {
                settings.provider = Some(provider.to_string());
                Some(name)
            }
            _ => model,
        };
        let config = LlmConfig::resolve(model, &settings, |name| std::env::var(name).ok())
            .map_err(|e| llm_error(&e))?;
        let client = Arc::new(Client::new(config).map_err(|e| llm_error(&e))?);
        if let Ok(mut clients) = self.clients.lock() {
            clients.insert(key, client.clone());
        }
        Ok(client)
    }
}

fn llm_error(error: &LlmError) -> NodeError {
    let (category, fixable) = match error {
        LlmError::NoModel | LlmError::MissingKey { .. } | LlmError::UnknownProvider(_) => {
            ("llm_unavailable", false)
        }
        LlmError::UnknownModel { .. } => ("bad_params", true),
        LlmError::Unauthorized { .. } => (category::AUTH, false),
        LlmError::Refusal(_) => ("refusal", true),
        LlmError::Status { status: 429, .. } | LlmError::RetryTooFarAway { .. } => {
            ("rate_limited", false)
        }
        LlmError::Timeout { .. } => (category::TIMEOUT, false),
        LlmError::Cancelled => (category::CANCELLED, false),
        LlmError::Transport { .. } => (category::NETWORK, false),
        _ => ("llm_error", false),
    };
    NodeError::new(category, error.to_string(), fixable)
}

fn bad_request(message: String) -> NodeError {
    NodeError::new("bad_params", message, true)
}

/// The node's request, read from its JSON.
fn request_of(fields: &Map<String, Value>) -> Result<(Request, Option<Value>), NodeError> {
    let text = |name: &str| -> Result<Option<String>, NodeError> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(bad_request(format!("'{name}' must be text, got {other}"))),
        }
    };
    let prompt = text("prompt")?
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| bad_request("'prompt' is required and may not be empty".into()))?;
    let schema = fields
        .get("output_schema")
        .filter(|s| !s.is_null())
        .cloned();
    let tool = schema.as_ref().map(|schema| Tool {
        name: ANSWER_TOOL.to_string(),
        description: "Give the answer in the requested structure.".to_string(),
        input_schema: object_schema(schema),
    });
    let request = Request {
        system: text("system")?.unwrap_or_default(),
        messages: vec![(Role::User, prompt)],
        tool,
        max_tokens: fields
            .get("max_tokens")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_MAX_TOKENS, |n| n.min(u32::MAX as u64) as u32),
        temperature: fields.get("temperature").and_then(Value::as_f64),
    };
    Ok((request, schema))
}

/// Tools take an object: any other schema is wrapped as `{value: schema}`.
fn object_schema(schema: &Value) -> Value {
    if schema.get("type").and_then(Value::as_str) == Some("object") {
        schema.clone()
    } else {
        json!({"type": "object", "properties": {"value": schema}, "required": ["value"]})
    }
}

impl crate::bindings::pflow::node::llm::Host for HostState {
    fn complete(&mut self, request: String) -> Result<String, NodeError> {
        if !self.grants.allows(super::Capability::Llm) {
            return Err(super::denied(super::Capability::Llm, &self.node_type));
        }
        let Some(access) = self.capabilities.llm.clone() else {
            return Err(NodeError::new(
                "llm_unavailable",
                "No LLM is available to this run.".to_string(),
                false,
            ));
        };
        let fields = match serde_json::from_str::<Value>(&request) {
            Ok(Value::Object(fields)) => fields,
            _ => return Err(bad_request("The request must be a JSON object".into())),
        };
        let (request, schema) = request_of(&fields)?;
        let client = access.client(fields.get("model").and_then(Value::as_str))?;
        // The node's own deadline bounds the call, checked by the same flag cancellation sets.
        let left = self
            .deadline
            .saturating_duration_since(std::time::Instant::now());
        let timeout = fields
            .get("timeout_seconds")
            .and_then(Value::as_f64)
            .map_or(left, |s| Duration::from_secs_f64(s.max(0.0)).min(left));
        let completion = self
            .cancel
            .with_deadline(timeout, |flag| client.complete(&request, flag))
            .map_err(|e| match e {
                LlmError::Cancelled if !self.cancel.is_cancelled() => NodeError::new(
                    category::TIMEOUT,
                    format!("The LLM call did not finish within {timeout:?}"),
                    false,
                ),
                other => llm_error(&other),
            })?;
        let response = completion.response;
        let structured = match (&schema, &response.tool_call) {
            (None, _) => None,
            (Some(schema), Some((_, input))) => Some(if object_schema(schema) == *schema {
                input.clone()
            } else {
                input.get("value").cloned().unwrap_or(Value::Null)
            }),
            (Some(_), None) => pflow_llm::structured::object(&response, ANSWER_TOOL)
                .ok()
                .map(Value::Object),
        };
        let answer = json!({
            "text": response.text,
            "structured": structured,
            "model": client.config().model,
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
            "cost_usd": completion.cost_usd,
        });
        Ok(answer.to_string())
    }
}
