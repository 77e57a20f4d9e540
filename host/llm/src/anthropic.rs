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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;
    use crate::Tool;
    use std::time::Duration;

    fn config() -> LlmConfig {
        LlmConfig {
            provider: Provider::Anthropic,
            model: "claude-sonnet-4-5".into(),
            base_url: "https://api.anthropic.com".into(),
            api_key: Some("k".into()),
            timeout: Duration::from_secs(1),
            max_retries: 0,
            max_retry_wait: Duration::from_secs(1),
        }
    }

    #[test]
    fn a_forced_tool_is_a_tool_choice_of_type_tool() {
        let request = Request {
            system: "sys".into(),
            messages: vec![(Role::User, "hi".into())],
            tool: Some(Tool {
                name: "submit".into(),
                description: "d".into(),
                input_schema: json!({"type": "object"}),
            }),
            max_tokens: 10,
            temperature: None,
        };
        let body = body(&config(), &request);
        assert_eq!(body["system"], "sys");
        assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "submit"})
        );
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        assert!(body.get("temperature").is_none());
        assert_eq!(url(&config()), "https://api.anthropic.com/v1/messages");
    }

    #[test]
    fn answers_refusals_and_malformed_bodies() {
        let answer = json!({
            "content": [{"type": "text", "text": "ok "}, {"type": "tool_use", "name": "submit", "input": {"a": 1}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 7}
        });
        let response = parse(&answer).unwrap();
        assert_eq!(response.tool_call, Some(("submit".into(), json!({"a": 1}))));
        assert_eq!(
            (response.usage.input_tokens, response.usage.output_tokens),
            (5, 7)
        );
        let refusal = json!({"content": [], "stop_reason": "refusal"});
        assert!(matches!(parse(&refusal), Err(LlmError::Refusal(_))));
        assert!(matches!(
            parse(&json!({"id": 1})),
            Err(LlmError::Malformed { .. })
        ));
    }
}
