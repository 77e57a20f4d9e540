//! The Anthropic Messages API wire format (`POST {base}/v1/messages`).

use crate::message::{Request, Response, Usage};
use crate::{LlmConfig, LlmError, Provider};
use serde_json::{json, Value};

const API_VERSION: &str = "2023-06-01";

pub(crate) fn url(config: &LlmConfig) -> String {
    format!("{}/v1/messages", config.base_url)
}

pub(crate) fn headers(config: &LlmConfig) -> Vec<(&'static str, String)> {
    let mut headers = vec![("anthropic-version", API_VERSION.to_string())];
    if let Some(key) = &config.api_key {
        headers.push(("x-api-key", key.clone()));
    }
    headers
}

pub(crate) fn body(config: &LlmConfig, request: &Request) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|(role, text)| json!({"role": role.as_str(), "content": text}))
        .collect();
    let mut body = json!({
        "model": config.model,
        "max_tokens": request.max_tokens,
        "system": request.system,
        "messages": messages,
    });
    if let Some(tool) = &request.tool {
        body["tools"] = json!([{
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.input_schema,
        }]);
        body["tool_choice"] = json!({"type": "tool", "name": tool.name});
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    body
}

pub(crate) fn parse(answer: &Value) -> Result<Response, LlmError> {
    let malformed = |message: &str| LlmError::Malformed {
        provider: Provider::Anthropic,
        message: message.to_string(),
    };
    let blocks = answer["content"]
        .as_array()
        .ok_or_else(|| malformed("no `content` list"))?;
    let mut response = Response {
        stop_reason: answer["stop_reason"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        usage: Usage {
            input_tokens: answer["usage"]["input_tokens"].as_u64().unwrap_or(0),
            output_tokens: answer["usage"]["output_tokens"].as_u64().unwrap_or(0),
        },
        ..Response::default()
    };
    for block in blocks {
        match block["type"].as_str() {
            Some("text") => response.text.push_str(block["text"].as_str().unwrap_or("")),
            Some("tool_use") if response.tool_call.is_none() => {
                let name = block["name"]
                    .as_str()
                    .ok_or_else(|| malformed("a tool_use block without a name"))?;
                response.tool_call = Some((name.to_string(), block["input"].clone()));
            }
            _ => {}
        }
    }
    if response.stop_reason == "refusal" {
        let said = response.text.trim();
        return Err(LlmError::Refusal(if said.is_empty() {
            "the model stopped with stop_reason \"refusal\"".to_string()
        } else {
            said.to_string()
        }));
    }
    Ok(response)
}

/// `{"type": "error", "error": {"type": "not_found_error", "message": "..."}}`.
pub(crate) fn error_of(answer: &Value) -> (String, String) {
    (
        answer["error"]["type"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

pub(crate) fn is_unknown_model(status: u16, kind: &str, message: &str) -> bool {
    status == 404 && (kind == "not_found_error" || message.contains("model"))
}
