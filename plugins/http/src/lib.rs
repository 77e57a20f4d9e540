//! pflow's `http` node, plus `extract`. The request goes out through the host's `http`
//! capability, so the host's policy (allowed hosts, schemes, size cap, time limit) applies to
//! every call a workflow makes; this component shapes params, classifies answers and extracts.

mod extract;

use pflow_sdk::http::{self, Request, Response};
use pflow_sdk::serde_json::{self, value::RawValue};
use pflow_sdk::{json, Map, Node, NodeError, NodeSpec, Outcome, Params, Value};

const DEFAULT_TIMEOUT_SECONDS: f64 = 30.0;
const DEFAULT_RETRIES: u8 = 2;
/// How much of a response body an error message quotes.
const BODY_EXCERPT_CHARS: usize = 300;

struct HttpNode;

impl Node for HttpNode {
    fn describe() -> NodeSpec {
        NodeSpec::new(
            "http",
            "Make an HTTP request. A JSON response is parsed; `extract` picks values out of it by \
             path ({alias: \"$.items[0].name\"}) into `extracted`. A non-2xx answer fails the node \
             (action `error`).",
        )
        .param("url", "string", "URL to request", true)
        .param("method", "string", "GET (default), or POST when a body is given; PUT, PATCH, DELETE, HEAD, OPTIONS", false)
        .param("body", "any", "Request body: dicts and lists are sent as JSON, text as is", false)
        .param("headers", "dict", "Request headers", false)
        .param("params", "dict", "Query string parameters", false)
        .param("timeout", "int", "Seconds before giving up (default 30)", false)
        .param("auth_token", "string", "Sent as `Authorization: Bearer <token>`", false)
        .param("api_key", "string", "Sent in the header named by api_key_header", false)
        .param("api_key_header", "string", "Header for api_key (default X-API-Key)", false)
        .param("extract", "dict", "{alias: path} picked from the JSON response into `extracted`", false)
        .param("retries", "int", "Extra attempts after network errors, timeouts and 5xx (default 2)", false)
        .output("response", "dict|str", "The response body: parsed JSON, or text", true)
        .output("status_code", "int", "HTTP status", true)
        .output("response_headers", "dict", "Response headers, names in lower case", true)
        .output("response_time", "float", "Seconds the request took", true)
        .output_with_schema(
            "extracted",
            "dict",
            "{alias: value} when extract is given",
            false,
            json!({"type": "object", "x-keys-from-param": "extract"}),
        )
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        let request = build_request(&params)?;
        let extract_paths = match params.get("extract") {
            None => None,
            Some(Value::Object(paths)) => Some(paths.clone()),
            Some(other) => {
                return Err(NodeError::bad_params(format!(
                    "Parameter 'extract' must be an object of {{alias: path}}, got {}",
                    other
                )))
            }
        };

        let response = http::send(&request)?;
        if !(200..300).contains(&response.status) {
            return Err(status_error(&request, &response));
        }
        // Validated without building the tree; the host parses it once, natively.
        let json_body = json_body(&response);
        let mut outputs = Map::new();
        if let Some(paths) = extract_paths {
            let body = match json_body {
                Some(body) => body,
                None => return Err(non_json_error(&response)),
            };
            let extracted = extract::extract(&paths, body)?;
            outputs.insert("extracted".to_string(), Value::Object(extracted));
        }
        let headers: Map<String, Value> = response
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect();
        outputs.insert("status_code".to_string(), json!(response.status));
        outputs.insert("response_headers".to_string(), Value::Object(headers));
        outputs.insert(
            "response_time".to_string(),
            json!(response.duration_us as f64 / 1e6),
        );
        let outcome = Outcome::new(outputs);
        Ok(match json_body {
            Some(body) => outcome.with_raw_output("response", body.get()),
            None => {
                let text = String::from_utf8_lossy(&response.body).into_owned();
                outcome.with_output("response", Value::String(text))
            }
        })
    }
}

fn build_request(params: &Params) -> Result<Request, NodeError> {
    let url = params.str("url")?.trim().to_string();
    let mut headers = string_pairs(params, "headers")?;
    let body = match params.get("body") {
        None => None,
        Some(Value::String(text)) => Some(text.clone().into_bytes()),
        Some(data) => {
            if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")) {
                headers.push(("Content-Type".to_string(), "application/json".to_string()));
            }
            Some(data.to_string().into_bytes())
        }
    };
    let method = match params.opt_str("method")? {
        Some(method) => method.trim().to_ascii_uppercase(),
        None if body.is_some() => "POST".to_string(),
        None => "GET".to_string(),
    };
    if let Some(token) = params.opt_str("auth_token")? {
        headers.push(("Authorization".to_string(), format!("Bearer {}", token)));
    }
    if let Some(key) = params.opt_str("api_key")? {
        let header = params.opt_str("api_key_header")?.unwrap_or("X-API-Key");
        headers.push((header.to_string(), key.to_string()));
    }
    let seconds = params.f64_opt("timeout")?.unwrap_or(DEFAULT_TIMEOUT_SECONDS);
    let retries = params
        .f64_opt("retries")?
        .map(|r| r.min(10.0) as u8)
        .unwrap_or(DEFAULT_RETRIES);
    Ok(Request {
        method,
        url,
        headers,
        query: string_pairs(params, "params")?,
        body,
        timeout_ms: Some((seconds * 1000.0).min(u32::MAX as f64) as u32),
        retries,
    })
}

/// A dict param as (name, text) pairs; non-text values become JSON.
fn string_pairs(params: &Params, name: &str) -> Result<Vec<(String, String)>, NodeError> {
    match params.get(name) {
        None => Ok(Vec::new()),
        Some(Value::Object(map)) => Ok(map
            .iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), text)
            })
            .collect()),
        Some(other) => Err(NodeError::bad_params(format!(
            "Parameter '{}' must be an object of names to values, got {}",
            name, other
        ))),
    }
}

/// The body as JSON text when it is JSON (by content type, or by looking like it), validated
/// but not parsed into a tree.
fn json_body(response: &Response) -> Option<&RawValue> {
    let declared_json = response
        .header("content-type")
        .map_or(false, |t| t.to_ascii_lowercase().contains("json"));
    let first = response
        .body
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .copied();
    if declared_json || first == Some(b'{') || first == Some(b'[') {
        serde_json::from_slice(&response.body).ok()
    } else {
        None
    }
}

fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    match text.char_indices().nth(BODY_EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// One category per cause, so that the planner knows whether changing the workflow can help.
fn status_error(request: &Request, response: &Response) -> NodeError {
    let status = response.status;
    let (category, fixable, advice) = match status {
        401 | 403 => (
            "auth",
            false,
            "The credentials are missing or not accepted (auth_token, api_key, headers).",
        ),
        400 | 404 | 405 | 422 => (
            "http_client_error",
            true,
            "The URL, method, query parameters or body are likely wrong.",
        ),
        500..=599 => ("server_error", false, "The server failed; retrying later may help."),
        _ => ("http_client_error", false, "The server refused the request."),
    };
    let attempts = if response.attempts > 1 {
        format!(" after {} attempts", response.attempts)
    } else {
        String::new()
    };
    let body = excerpt(&response.body);
    let mut error = NodeError::new(
        category,
        format!(
            "HTTP {} from {} {}{}. {}{}",
            format!("{} {}", status, reason(status)).trim_end(),
            request.method,
            request.url,
            attempts,
            advice,
            if body.is_empty() {
                String::new()
            } else {
                format!(" Response: {}", body)
            }
        ),
    )
    .fixable(fixable)
    .attempted(vec![format!("{} {}", request.method, request.url)]);
    if !body.is_empty() {
        error = error.sample(body);
    }
    error
}

fn non_json_error(response: &Response) -> NodeError {
    NodeError::new(
        "non_json",
        format!(
            "extract needs a JSON response, but the body is {} (content-type: {}).",
            if response.body.is_empty() { "empty" } else { "not JSON" },
            response.header("content-type").unwrap_or("none")
        ),
    )
    .sample(excerpt(&response.body))
}

fn reason(status: u16) -> &'static str {
    match status {
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

pflow_sdk::export_node!(HttpNode);
