//! A local LLM stand-in: a real HTTP server on loopback that speaks the Anthropic Messages API
//! (`POST /v1/messages`) and OpenAI Chat Completions (`POST /v1/chat/completions`), checks that
//! each request is well formed for its API, and answers with the next scripted [`Reply`] in that
//! API's wire format. Every request is recorded for the test to inspect.
//!
//! Token usage is estimated as a quarter of the characters, as providers roughly count.

use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;
use tiny_http::{Header, Response, Server};

/// One scripted answer, in neither wire format: the stand-in renders it in the format of the
/// endpoint that was called.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reply {
    /// A call of the tool the request forced, with this input.
    Tool { input: Value },
    /// Plain text, as a provider that ignores tools would answer.
    Text { text: String },
    /// An API error with this HTTP status, in the provider's error shape.
    Error {
        status: u16,
        message: String,
        #[serde(default)]
        retry_after: Option<String>,
    },
    /// The model declines (Anthropic `stop_reason: "refusal"`, OpenAI `message.refusal`).
    Refusal { text: String },
}

/// A reply and how long to wait before sending it.
#[derive(Debug, Clone, Deserialize)]
pub struct Scripted {
    #[serde(flatten)]
    pub reply: Reply,
    #[serde(default)]
    pub delay_ms: u64,
}

impl From<Reply> for Scripted {
    fn from(reply: Reply) -> Self {
        Scripted { reply, delay_ms: 0 }
    }
}

/// A request the stand-in received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `anthropic` or `openai`.
    pub api: &'static str,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    /// The system prompt and every message, as one text: what the model was told.
    pub fn prompt(&self) -> String {
        let mut text = String::new();
        if let Some(system) = self.body["system"].as_str() {
            text.push_str(system);
            text.push('\n');
        }
        for message in self.body["messages"].as_array().into_iter().flatten() {
            if let Some(content) = message["content"].as_str() {
                text.push_str(content);
                text.push('\n');
            }
        }
        text
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Script = Arc<Mutex<VecDeque<Scripted>>>;

pub struct StandIn {
    server: Arc<Server>,
    pub port: u16,
    script: Script,
    log: Arc<Mutex<Vec<Recorded>>>,
}

impl StandIn {
    /// Listens on 127.0.0.1 (`port` 0 picks a free one) and answers with `script` in order.
    pub fn start(port: u16, script: Vec<Scripted>) -> std::io::Result<StandIn> {
        let server = Arc::new(
            Server::http(("127.0.0.1", port)).map_err(|e| std::io::Error::other(e.to_string()))?,
        );
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .unwrap_or(port);
        let script: Script = Arc::new(Mutex::new(script.into()));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (serving, replies, logging) = (server.clone(), script.clone(), log.clone());
        thread::spawn(move || {
            for request in serving.incoming_requests() {
                let (replies, logging) = (replies.clone(), logging.clone());
                // One thread per request: a slow reply must not hold up the next one.
                thread::spawn(move || serve(request, &replies, &logging));
            }
        });
        Ok(StandIn {
            server,
            port,
            script,
            log,
        })
    }

    /// `ANTHROPIC_BASE_URL` for this stand-in.
    pub fn anthropic_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `OPENAI_BASE_URL` for this stand-in.
    pub fn openai_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Adds replies to the end of the script.
    pub fn push(&self, replies: impl IntoIterator<Item = Scripted>) {
        self.script.lock().unwrap().extend(replies);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().unwrap().clone()
    }

    /// Replies not yet used.
    pub fn remaining(&self) -> usize {
        self.script.lock().unwrap().len()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

fn serve(mut request: tiny_http::Request, script: &Script, log: &Mutex<Vec<Recorded>>) {
    let path = request.url().to_string();
    let headers = request
        .headers()
        .iter()
        .map(|h| (h.field.to_string(), h.value.to_string()))
        .collect();
    let mut raw = String::new();
    let _ = request.as_reader().read_to_string(&mut raw);
    let body: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
    let api = match path.as_str() {
        "/v1/messages" => "anthropic",
        "/v1/chat/completions" => "openai",
        _ => {
            let _ = request.respond(json_response(
                404,
                &json!({"error": format!("no endpoint {path}")}),
            ));
            return;
        }
    };
    let recorded = Recorded {
        api,
        path,
        headers,
        body,
    };
    log.lock().unwrap().push(recorded.clone());
    let (status, document, extra) = match wire_problem(&recorded) {
        Some(problem) => error_body(api, 400, &problem, None),
        None => {
            let next = script.lock().unwrap().pop_front();
            match next {
                None => error_body(api, 400, "the stand-in's script has no more replies", None),
                Some(scripted) => {
                    thread::sleep(Duration::from_millis(scripted.delay_ms));
                    render(api, &recorded.body, &scripted.reply)
                }
            }
        }
    };
    let mut response = json_response(status, &document);
    for (name, value) in extra {
        if let Ok(header) = Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            response.add_header(header);
        }
    }
    let _ = request.respond(response);
}

/// What the real API would refuse as malformed, checked as far as a client could get wrong.
fn wire_problem(request: &Recorded) -> Option<String> {
    let body = &request.body;
    if !body.is_object() {
        return Some("the body is not a JSON object".into());
    }
    if body["model"].as_str().is_none_or(str::is_empty) {
        return Some("model: field required".into());
    }
    if body["messages"].as_array().is_none_or(|m| m.is_empty()) {
        return Some("messages: at least one message is required".into());
    }
    match request.api {
        "anthropic" => {
            if request.header("x-api-key").is_none() {
                return Some("x-api-key header is required".into());
            }
            if request.header("anthropic-version").is_none() {
                return Some("anthropic-version header is required".into());
            }
            if body["max_tokens"].as_u64().is_none() {
                return Some("max_tokens: field required".into());
            }
            if body["messages"][0]["role"] != "user" {
                return Some("messages: the first message must use the user role".into());
            }
            if body.get("tool_choice").is_some()
                && body["tool_choice"]["type"] != "tool"
                && body["tool_choice"]["type"] != "auto"
            {
                return Some("tool_choice.type: must be auto, any, tool or none".into());
            }
        }
        _ => {
            if body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m["role"].as_str().is_none())
            {
                return Some("messages: every message needs a role".into());
            }
            if body.get("tool_choice").is_some() && body["tool_choice"]["type"] != "function" {
                return Some("tool_choice: expected {\"type\": \"function\", ...}".into());
            }
        }
    }
    None
}

fn forced_tool(api: &str, body: &Value) -> String {
    let name = match api {
        "anthropic" => &body["tool_choice"]["name"],
        _ => &body["tool_choice"]["function"]["name"],
    };
    name.as_str().unwrap_or("tool").to_string()
}

/// Roughly what a provider counts: a token per four characters.
fn tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

type Rendered = (u16, Value, Vec<(String, String)>);

fn render(api: &'static str, request: &Value, reply: &Reply) -> Rendered {
    let model = request["model"].clone();
    let input_tokens = tokens(&request.to_string());
    let (content, tool_input) = match reply {
        Reply::Tool { input } => (None, Some(input)),
        Reply::Text { text } => (Some(text.as_str()), None),
        Reply::Refusal { text } => (Some(text.as_str()), None),
        Reply::Error {
            status,
            message,
            retry_after,
        } => return error_body(api, *status, message, retry_after.clone()),
    };
    let refusal = matches!(reply, Reply::Refusal { .. });
    let output_tokens =
        tokens(content.unwrap_or_default()) + tool_input.map_or(0, |i| tokens(&i.to_string()));
    let tool = forced_tool(api, request);
    let document = if api == "anthropic" {
        let mut blocks = Vec::new();
        if let Some(text) = content {
            blocks.push(json!({"type": "text", "text": text}));
        }
        if let Some(input) = tool_input {
            blocks.push(
                json!({"type": "tool_use", "id": "toolu_standin", "name": tool, "input": input}),
            );
        }
        let stop_reason = if refusal {
            "refusal"
        } else if tool_input.is_some() {
            "tool_use"
        } else {
            "end_turn"
        };
        json!({
            "id": "msg_standin", "type": "message", "role": "assistant", "model": model,
            "content": blocks, "stop_reason": stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        })
    } else {
        let mut message = json!({"role": "assistant", "content": null});
        match (refusal, content, tool_input) {
            (true, Some(text), _) => message["refusal"] = json!(text),
            (false, Some(text), _) => message["content"] = json!(text),
            _ => {}
        }
        if let Some(input) = tool_input {
            message["tool_calls"] = json!([{
                "id": "call_standin", "type": "function",
                "function": {"name": tool, "arguments": input.to_string()},
            }]);
        }
        let finish = if tool_input.is_some() {
            "tool_calls"
        } else {
            "stop"
        };
        json!({
            "id": "chatcmpl-standin", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
        })
    };
    (200, document, Vec::new())
}

fn error_body(api: &str, status: u16, message: &str, retry_after: Option<String>) -> Rendered {
    let document = if api == "anthropic" {
        let kind = match status {
            400 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            _ => "api_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": message}})
    } else {
        let (kind, code) = match status {
            401 => ("invalid_request_error", json!("invalid_api_key")),
            404 => ("invalid_request_error", json!("model_not_found")),
            429 => ("requests", json!("rate_limit_exceeded")),
            400 => ("invalid_request_error", Value::Null),
            _ => ("server_error", Value::Null),
        };
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
    };
    let headers = retry_after
        .map(|v| vec![("retry-after".to_string(), v)])
        .unwrap_or_default();
    (status, document, headers)
}

fn json_response(status: u16, document: &Value) -> Response<std::io::Cursor<Vec<u8>>> {
    Response::from_data(document.to_string().into_bytes())
        .with_status_code(status)
        .with_header(Header::from_bytes("content-type", "application/json").unwrap())
}
