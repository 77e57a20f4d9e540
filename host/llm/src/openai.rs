//! The OpenAI Chat Completions wire format (`POST {base}/chat/completions`), which OpenAI,
//! Ollama, llama.cpp's server, vLLM and LM Studio all speak.

use crate::message::{Request, Response, Usage};
use crate::{LlmConfig, LlmError, Provider};
use serde_json::{json, Value};

pub(crate) fn url(config: &LlmConfig) -> String {
    format!("{}/chat/completions", config.base_url)
}

pub(crate) fn headers(config: &LlmConfig) -> Vec<(&'static str, String)> {
    match &config.api_key {
        Some(key) => vec![("authorization", format!("Bearer {key}"))],
        None => Vec::new(),
    }
}

/// OpenAI's reasoning models take `max_completion_tokens` and refuse `max_tokens`; the servers
/// that copy the API know only `max_tokens`.
fn uses_completion_tokens(model: &str) -> bool {
    ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|prefix| model.starts_with(prefix))
}

pub(crate) fn body(config: &LlmConfig, request: &Request) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    messages.extend(
        request
            .messages
            .iter()
            .map(|(role, text)| json!({"role": role.as_str(), "content": text})),
    );
    let mut body = json!({"model": config.model, "messages": messages});
    let limit_field = if uses_completion_tokens(&config.model) {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[limit_field] = json!(request.max_tokens);
    if let Some(tool) = &request.tool {
        body["tools"] = json!([{
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }]);
        body["tool_choice"] = json!({"type": "function", "function": {"name": tool.name}});
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    body
}

pub(crate) fn parse(answer: &Value) -> Result<Response, LlmError> {
    let malformed = |message: String| LlmError::Malformed {
        provider: Provider::OpenAi,
        message,
    };
    let choice = answer["choices"]
        .get(0)
        .ok_or_else(|| malformed("no `choices`".to_string()))?;
    let message = &choice["message"];
    if let Some(refusal) = message["refusal"].as_str().filter(|r| !r.is_empty()) {
        return Err(LlmError::Refusal(refusal.to_string()));
    }
    let mut response = Response {
        text: message["content"].as_str().unwrap_or_default().to_string(),
        stop_reason: choice["finish_reason"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        usage: Usage {
            input_tokens: answer["usage"]["prompt_tokens"].as_u64().unwrap_or(0),
            output_tokens: answer["usage"]["completion_tokens"].as_u64().unwrap_or(0),
        },
        ..Response::default()
    };
    if let Some(call) = message["tool_calls"].get(0) {
        let function = &call["function"];
        let name = function["name"]
            .as_str()
            .ok_or_else(|| malformed("a tool call without a function name".to_string()))?;
        // The arguments are a JSON document inside a string; a model may write broken JSON,
        // which is the model's mistake (an answer that does not fit), not the wire's.
        let arguments = match &function["arguments"] {
            Value::String(text) => {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
            }
            other => other.clone(),
        };
        response.tool_call = Some((name.to_string(), arguments));
    }
    if response.stop_reason == "content_filter" && response.tool_call.is_none() {
        return Err(LlmError::Refusal(
            "the provider's content filter stopped the answer".to_string(),
        ));
    }
    Ok(response)
}

/// `{"error": {"message": "...", "type": "...", "code": "model_not_found"}}`; some servers send
/// `{"error": "text"}`.
pub(crate) fn error_of(answer: &Value) -> (String, String) {
    let error = &answer["error"];
    if let Some(text) = error.as_str() {
        return (String::new(), text.to_string());
    }
    let kind = error["code"]
        .as_str()
        .or_else(|| error["type"].as_str())
        .unwrap_or_default();
    (
        kind.to_string(),
        error["message"].as_str().unwrap_or_default().to_string(),
    )
}

pub(crate) fn is_unknown_model(status: u16, kind: &str, message: &str) -> bool {
    kind == "model_not_found" || (status == 404 && message.contains("model"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;
    use std::time::Duration;

    fn config(model: &str) -> LlmConfig {
        LlmConfig {
            provider: Provider::OpenAi,
            model: model.into(),
            base_url: "http://localhost:11434/v1".into(),
            api_key: None,
            timeout: Duration::from_secs(1),
            max_retries: 0,
            max_retry_wait: Duration::from_secs(1),
        }
    }

    fn request() -> Request {
        Request {
            system: "sys".into(),
            messages: vec![(Role::User, "hi".into())],
            tool: None,
            max_tokens: 10,
            temperature: Some(0.0),
        }
    }

    #[test]
    fn the_system_prompt_is_the_first_message_and_reasoning_models_get_their_limit_field() {
        let body = body(&config("llama3.2"), &request());
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        assert_eq!(body["max_tokens"], 10);
        let body = body_for("o3-mini");
        assert_eq!(body["max_completion_tokens"], 10);
        assert!(body.get("max_tokens").is_none());
        assert!(
            headers(&config("x")).is_empty(),
            "no key, no authorization header"
        );
    }

    fn body_for(model: &str) -> Value {
        body(&config(model), &request())
    }

    #[test]
    fn tool_call_arguments_are_a_json_string() {
        let answer = json!({
            "choices": [{"message": {"content": null, "tool_calls": [
                {"type": "function", "function": {"name": "submit", "arguments": "{\"a\": 1}"}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4}
        });
        let response = parse(&answer).unwrap();
        assert_eq!(response.tool_call, Some(("submit".into(), json!({"a": 1}))));
        assert_eq!(response.usage.total(), 7);
        let refusal = json!({"choices": [{"message": {"refusal": "no"}}]});
        assert!(matches!(parse(&refusal), Err(LlmError::Refusal(r)) if r == "no"));
        assert_eq!(
            error_of(&json!({"error": {"message": "m", "code": "model_not_found"}})),
            ("model_not_found".to_string(), "m".to_string())
        );
    }
}
