//! The `http` capability: requests leave the sandbox only through here, after the policy
//! (allowed hosts and schemes) has seen the URL and every redirect hop, with the response size
//! capped and the time bounded by the node's deadline. Transient failures (network errors,
//! timeouts, 5xx) are retried with backoff when the node asks for it.

use crate::bindings::pflow::node::types::NodeError;
use crate::error::category;
use crate::home::HttpSettings;
use pflow_ir::HttpOverrides;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, LOCATION};
use reqwest::{Method, StatusCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use url::Url;

const MAX_REDIRECTS: usize = 10;
/// First wait before a retry; doubled for each further one.
const RETRY_BACKOFF: Duration = Duration::from_millis(200);
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Which URLs a node may reach. A host must be allowed by the settings and by every
/// narrowing layer (workflow, node) to be reached.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpPolicy {
    host_layers: Vec<Vec<String>>,
    schemes: Vec<String>,
    pub max_response_bytes: u64,
}

/// What the default settings allow: any host, http and https, 10 MiB responses.
impl Default for HttpPolicy {
    fn default() -> Self {
        HttpPolicy::from_settings(&HttpSettings::default())
    }
}

impl HttpPolicy {
    pub fn from_settings(settings: &HttpSettings) -> Self {
        HttpPolicy {
            host_layers: vec![settings.allowed_hosts.clone()],
            schemes: settings
                .allowed_schemes
                .iter()
                .map(|s| s.to_ascii_lowercase())
                .collect(),
            max_response_bytes: (settings.max_response_mb.max(0.0) * (1 << 20) as f64) as u64,
        }
    }

    /// This policy, further limited to the hosts `overrides` allows.
    pub fn narrowed(&self, overrides: Option<&HttpOverrides>) -> Self {
        let mut policy = self.clone();
        if let Some(hosts) = overrides.and_then(|o| o.allowed_hosts.clone()) {
            policy.host_layers.push(hosts);
        }
        policy
    }

    fn check(&self, url: &Url) -> Result<(), NodeError> {
        if !self.schemes.iter().any(|s| s == url.scheme()) {
            return Err(denied(format!(
                "The URL scheme '{}' is not allowed (allowed: {}).",
                url.scheme(),
                self.schemes.join(", ")
            )));
        }
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        for layer in &self.host_layers {
            if !layer.iter().any(|pattern| host_matches(pattern, host)) {
                return Err(denied(format!(
                    "Host '{host}' is not in the allowed hosts ({}). Allow it in settings.json \
                     under http.allowed_hosts, or in the workflow's sandbox.http.allowed_hosts if \
                     the settings already do.",
                    layer.join(", ")
                )));
            }
        }
        Ok(())
    }
}

/// `*` matches any host; `*.example.com` its subdomains; anything else the exact name.
fn host_matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.trim().to_ascii_lowercase();
    if pattern == "*" {
        return true;
    }
    match pattern.strip_prefix("*.") {
        Some(domain) => host.len() > domain.len() + 1 && host.ends_with(&format!(".{domain}")),
        None => pattern == host,
    }
}

fn denied(message: String) -> NodeError {
    NodeError::new(category::POLICY_DENIED, message, false)
}

/// One client (connection pool, TLS configuration) and one runtime for every request of the
/// process, made on first use so that runs without HTTP pay nothing for them.
pub struct HttpClient {
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
}

impl HttpClient {
    pub fn shared() -> Result<&'static HttpClient, NodeError> {
        static CLIENT: OnceLock<Result<HttpClient, String>> = OnceLock::new();
        CLIENT
            .get_or_init(|| {
                // reqwest is built without a bundled crypto provider; ring is the one linked.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start the HTTP runtime: {e}"))?;
                let client = reqwest::Client::builder()
                    // Redirects are followed here, so that the policy sees every hop.
                    .redirect(reqwest::redirect::Policy::none())
                    .user_agent(concat!("pflow-host/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
                Ok(HttpClient { runtime, client })
            })
            .as_ref()
            .map_err(|message| NodeError::new(category::NETWORK, message.clone(), false))
    }
}

pub struct Request {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub timeout: Option<Duration>,
    pub retries: u8,
}

pub struct Response {
    pub status: u16,
    pub attempts: u8,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub duration: Duration,
}

/// When and why a request must stop.
pub struct Bounds<'a> {
    pub node_deadline: Instant,
    pub cancel: &'a AtomicBool,
}

pub fn send(
    request: Request,
    policy: &HttpPolicy,
    bounds: &Bounds<'_>,
) -> Result<Response, NodeError> {
    let method = Method::from_bytes(request.method.as_bytes())
        .map_err(|_| bad_params(format!("'{}' is not an HTTP method.", request.method)))?;
    let mut url = Url::parse(&request.url).map_err(|e| {
        bad_params(format!(
            "'{}' is not a valid URL ({e}); give a full URL such as https://api.example.com/items.",
            request.url
        ))
    })?;
    if !request.query.is_empty() {
        url.query_pairs_mut().extend_pairs(&request.query);
    }
    let mut headers = HeaderMap::new();
    for (name, value) in &request.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| bad_params(format!("'{name}' is not a valid header name.")))?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            bad_params(format!(
                "The value of header '{name}' is not valid in a header."
            ))
        })?;
        headers.append(name, value);
    }
    let client = HttpClient::shared()?;
    let attempts = 1 + request.retries as usize;
    let mut last_error = None;
    for attempt in 1..=attempts {
        if attempt > 1 {
            let wait = RETRY_BACKOFF * 2u32.pow(attempt as u32 - 2);
            if Instant::now() + wait >= bounds.node_deadline {
                break;
            }
            std::thread::sleep(wait);
        }
        let started = Instant::now();
        let outcome = client.runtime.block_on(follow_redirects(
            client,
            method.clone(),
            url.clone(),
            &headers,
            request.body.as_deref(),
            policy,
            request.timeout,
            bounds,
        ));
        match outcome {
            Ok(mut response) => {
                response.attempts = attempt as u8;
                response.duration = started.elapsed();
                if response.status >= 500 && attempt < attempts {
                    last_error = None;
                    tracing::debug!("HTTP {} from {url}, retrying", response.status);
                    continue;
                }
                return Ok(response);
            }
            Err(Failure::Transient(error)) if attempt < attempts => {
                tracing::debug!("{}, retrying", error.message);
                last_error = Some(error);
            }
            Err(Failure::Transient(error) | Failure::Final(error)) => {
                return Err(with_attempts(error, attempt));
            }
        }
    }
    Err(last_error
        .map(|e| with_attempts(e, attempts))
        .unwrap_or_else(|| timeout_error(&url, true)))
}

fn with_attempts(mut error: NodeError, attempts: usize) -> NodeError {
    if attempts > 1 {
        error.message = format!("{} (after {attempts} attempts)", error.message);
    }
    error
}

fn bad_params(message: String) -> NodeError {
    NodeError::new("bad_params", message, true)
}

enum Failure {
    /// Worth another attempt: network errors and timeouts.
    Transient(NodeError),
    Final(NodeError),
}

#[allow(clippy::too_many_arguments)]
async fn follow_redirects(
    client: &HttpClient,
    mut method: Method,
    mut url: Url,
    headers: &HeaderMap,
    body: Option<&[u8]>,
    policy: &HttpPolicy,
    timeout: Option<Duration>,
    bounds: &Bounds<'_>,
) -> Result<Response, Failure> {
    let mut body = body.map(<[u8]>::to_vec);
    for _ in 0..=MAX_REDIRECTS {
        policy.check(&url).map_err(Failure::Final)?;
        let mut builder = client
            .client
            .request(method.clone(), url.clone())
            .headers(headers.clone());
        if let Some(body) = &body {
            builder = builder.body(body.clone());
        }
        let now = Instant::now();
        let own_deadline = timeout.map(|t| now + t);
        let (deadline, node_limit) = match own_deadline {
            Some(own) if own < bounds.node_deadline => (own, false),
            _ => (bounds.node_deadline, true),
        };
        let exchange = exchange(builder, policy.max_response_bytes);
        let response = tokio::select! {
            result = tokio::time::timeout(deadline.saturating_duration_since(now), exchange) => match result {
                Ok(result) => result?,
                Err(_) => return Err(Failure::Transient(timeout_error(&url, node_limit))),
            },
            _ = cancelled(bounds.cancel) => {
                return Err(Failure::Final(NodeError::new(category::CANCELLED, "The run was cancelled.".to_string(), false)))
            }
        };
        let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::OK);
        let location = response
            .headers
            .iter()
            .find(|(name, _)| name.as_str() == LOCATION.as_str())
            .map(|(_, value)| value.clone());
        match (status.is_redirection(), location) {
            (true, Some(location)) => {
                url = url.join(&location).map_err(|e| {
                    Failure::Final(NodeError::new(
                        category::NETWORK,
                        format!("The server redirected to an invalid location '{location}': {e}"),
                        false,
                    ))
                })?;
                // 303, and 301/302 after anything but GET/HEAD, continue as a GET without body.
                let becomes_get = status == StatusCode::SEE_OTHER
                    || (matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND)
                        && method != Method::GET
                        && method != Method::HEAD);
                if becomes_get {
                    method = Method::GET;
                    body = None;
                }
            }
            _ => return Ok(response),
        }
    }
    Err(Failure::Final(NodeError::new(
        category::NETWORK,
        format!("More than {MAX_REDIRECTS} redirects, the last to {url}."),
        false,
    )))
}

/// Sends one request and reads its body up to the cap.
async fn exchange(builder: reqwest::RequestBuilder, max_bytes: u64) -> Result<Response, Failure> {
    let mut response = builder
        .send()
        .await
        .map_err(|e| Failure::Transient(network_error(&e)))?;
    let too_large = |size: String| {
        Failure::Final(NodeError::new(
            "response_too_large",
            format!(
                "The response is {size}, over the {} cap for HTTP responses (settings.json: http.max_response_mb).",
                crate::sandbox::human_bytes(max_bytes)
            ),
            false,
        ))
    };
    if let Some(length) = response.content_length().filter(|&l| l > max_bytes) {
        return Err(too_large(crate::sandbox::human_bytes(length)));
    }
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_string(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| Failure::Transient(network_error(&e)))?
    {
        if (body.len() + chunk.len()) as u64 > max_bytes {
            return Err(too_large(format!(
                "more than {}",
                crate::sandbox::human_bytes(max_bytes)
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Response {
        status,
        attempts: 1,
        headers,
        body,
        duration: Duration::ZERO,
    })
}

async fn cancelled(flag: &AtomicBool) {
    while !flag.load(Ordering::Relaxed) {
        tokio::time::sleep(CANCEL_POLL).await;
    }
}

fn timeout_error(url: &Url, node_limit: bool) -> NodeError {
    NodeError::new(
        category::TIMEOUT,
        format!(
            "No complete answer from {url} in time ({}).",
            if node_limit {
                "the node's wall-time limit; raise sandbox.timeout_seconds"
            } else {
                "the request's timeout"
            }
        ),
        false,
    )
}

/// Connection refused, DNS, TLS and the like: the network or the server, not the workflow.
fn network_error(error: &reqwest::Error) -> NodeError {
    let mut cause = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = source {
        cause = e.to_string();
        source = e.source();
    }
    let url = error.url().map(|u| u.to_string()).unwrap_or_default();
    NodeError::new(
        category::NETWORK,
        format!("Cannot reach {url}: {cause}."),
        false,
    )
}
