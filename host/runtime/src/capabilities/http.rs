//! The `http` capability: requests leave the sandbox only through here, after the policy
//! (allowed hosts and schemes) has seen the URL and every redirect hop, with the response size
//! capped and the time bounded by the node's deadline. Transient failures (network errors,
//! timeouts, 5xx) are retried with backoff when the node asks for it.
//!
//! What a request may reach is decided on the address it connects to, not only on its name:
//! link-local and cloud-metadata addresses are always refused, and loopback and private ranges
//! too under `http.deny_private`. The check sits in the client's DNS resolver, so the address
//! checked is the address connected to (no DNS rebinding between the two), on every hop.
//!
//! Credentials stay with the origin they were meant for: a redirect to another origin drops
//! every header but a few harmless ones (so `Authorization`, cookies and the node's API-key
//! header whatever its name), and a 307/308 re-sends a body only to the same origin.

use crate::bindings::pflow::node::types::NodeError;
use crate::error::category;
use crate::home::HttpSettings;
use pflow_ir::HttpOverrides;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, LOCATION};
use reqwest::{Method, StatusCode};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use url::{Host, Url};

const MAX_REDIRECTS: usize = 10;
/// First wait before a retry; doubled for each further one.
const RETRY_BACKOFF: Duration = Duration::from_millis(200);
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// Request headers that go along to another origin on a redirect; every other one (credentials
/// under any name) stays with the origin it was written for.
const HEADERS_KEPT_ACROSS_ORIGINS: &[&str] = &[
    "accept",
    "accept-encoding",
    "accept-language",
    "cache-control",
    "content-language",
    "content-type",
    "if-modified-since",
    "if-none-match",
    "pragma",
    "user-agent",
];

/// Which URLs a node may reach. A host must be allowed by the settings and by every
/// narrowing layer (workflow, node) to be reached, and its address by `addresses`.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpPolicy {
    host_layers: Vec<Vec<String>>,
    schemes: Vec<String>,
    pub max_response_bytes: u64,
    pub addresses: AddressPolicy,
}

/// Which IP addresses a connection may go to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AddressPolicy {
    /// Anything but link-local and cloud-metadata addresses.
    #[default]
    DenyLinkLocal,
    /// Public addresses only: loopback, private, shared and unspecified ranges refused too.
    DenyPrivate,
}

impl AddressPolicy {
    /// Why a connection to `ip` is refused, or None when it is allowed.
    pub fn refusal(self, ip: IpAddr) -> Option<&'static str> {
        let ip = match ip {
            IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map(IpAddr::V4)
                .unwrap_or(IpAddr::V6(v6)),
            v4 => v4,
        };
        const AWS_METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);
        const ALIBABA_METADATA: Ipv4Addr = Ipv4Addr::new(100, 100, 100, 200);
        let metadata = match ip {
            IpAddr::V4(v4) => v4.is_link_local() || v4 == ALIBABA_METADATA,
            IpAddr::V6(v6) => v6.is_unicast_link_local() || v6 == AWS_METADATA_V6,
        };
        if metadata {
            return Some("a link-local or cloud-metadata address, which is always refused");
        }
        if self == AddressPolicy::DenyLinkLocal {
            return None;
        }
        let private = match ip {
            IpAddr::V4(v4) => {
                let [a, b, ..] = v4.octets();
                v4.is_loopback()
                    || v4.is_private()
                    || v4.is_unspecified()
                    || v4.is_broadcast()
                    || v4.is_multicast()
                    || a == 0
                    || (a == 100 && (64..128).contains(&b))
            }
            IpAddr::V6(v6) => {
                v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (v6.segments()[0] & 0xfe00) == 0xfc00
            }
        };
        private.then_some(
            "a loopback or private address, refused because settings.json sets http.deny_private",
        )
    }
}

/// The error the resolver gives for a name whose every address is refused.
#[derive(Debug, thiserror::Error)]
#[error("'{host}' resolves to {ip}: {reason}")]
struct AddressRefused {
    host: String,
    ip: IpAddr,
    reason: &'static str,
}

/// Resolves names through the system, keeping only the addresses the policy allows.
struct CheckedResolver(AddressPolicy);

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = resolved
                .iter()
                .filter(|addr| policy.refusal(addr.ip()).is_none())
                .copied()
                .collect();
            match (allowed.is_empty(), resolved.first()) {
                (true, Some(first)) => Err(Box::new(AddressRefused {
                    host,
                    ip: first.ip(),
                    reason: policy.refusal(first.ip()).unwrap_or_default(),
                })
                    as Box<dyn std::error::Error + Send + Sync>),
                _ => Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs),
            }
        })
    }
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
            addresses: if settings.deny_private {
                AddressPolicy::DenyPrivate
            } else {
                AddressPolicy::DenyLinkLocal
            },
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

    /// Checks the scheme, the host name and, for an address written in the URL, the address
    /// (names are checked when they resolve, see [`CheckedResolver`]).
    pub fn check(&self, url: &Url) -> Result<(), NodeError> {
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
        let literal = match url.host() {
            Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        if let Some(reason) = literal.and_then(|ip| self.addresses.refusal(ip)) {
            return Err(denied(format!(
                "{url} was not requested: {host} is {reason}."
            )));
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

/// One runtime and, per address policy, one client (connection pool, TLS configuration) for
/// every request of the process, made on first use so that runs without HTTP pay nothing.
pub struct HttpClient {
    runtime: tokio::runtime::Runtime,
    clients: [OnceLock<Result<reqwest::Client, String>>; 2],
}

impl HttpClient {
    pub fn shared() -> Result<&'static HttpClient, NodeError> {
        static CLIENT: OnceLock<Result<HttpClient, String>> = OnceLock::new();
        CLIENT
            .get_or_init(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start the HTTP runtime: {e}"))?;
                Ok(HttpClient {
                    runtime,
                    clients: [OnceLock::new(), OnceLock::new()],
                })
            })
            .as_ref()
            .map_err(|message| NodeError::new(category::NETWORK, message.clone(), false))
    }

    /// The client whose resolver enforces `addresses`. MCP's HTTP transport uses it too.
    pub fn client(addresses: AddressPolicy) -> Result<reqwest::Client, NodeError> {
        let shared = HttpClient::shared()?;
        shared.clients[addresses as usize]
            .get_or_init(|| {
                // reqwest is built without a bundled crypto provider; ring is the one linked.
                let _ = rustls::crypto::ring::default_provider().install_default();
                reqwest::Client::builder()
                    // Redirects are followed here, so that the policy sees every hop.
                    .redirect(reqwest::redirect::Policy::none())
                    .dns_resolver(Arc::new(CheckedResolver(addresses)))
                    .user_agent(concat!("pflow-host/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| format!("cannot build the HTTP client: {e}"))
            })
            .clone()
            .map_err(|message| NodeError::new(category::NETWORK, message, false))
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
    let shared = HttpClient::shared()?;
    let client = HttpClient::client(policy.addresses)?;
    let attempts = 1 + request.retries as usize;
    let mut last_error = None;
    let mut made = 0;
    for attempt in 1..=attempts {
        if attempt > 1 {
            let wait = RETRY_BACKOFF * 2u32.pow(attempt as u32 - 2);
            if Instant::now() + wait >= bounds.node_deadline {
                break;
            }
            std::thread::sleep(wait);
        }
        made = attempt;
        let started = Instant::now();
        let outcome = shared.runtime.block_on(follow_redirects(
            &client,
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
        .map(|e| with_attempts(e, made))
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
    client: &reqwest::Client,
    mut method: Method,
    mut url: Url,
    headers: &HeaderMap,
    body: Option<&[u8]>,
    policy: &HttpPolicy,
    timeout: Option<Duration>,
    bounds: &Bounds<'_>,
) -> Result<Response, Failure> {
    let mut body = body.map(<[u8]>::to_vec);
    let mut headers = headers.clone();
    for _ in 0..=MAX_REDIRECTS {
        policy.check(&url).map_err(Failure::Final)?;
        let mut builder = client
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
                let next = url.join(&location).map_err(|e| {
                    Failure::Final(NodeError::new(
                        category::NETWORK,
                        format!("The server redirected to an invalid location '{location}': {e}"),
                        false,
                    ))
                })?;
                if next.origin() != url.origin() {
                    headers = headers
                        .iter()
                        .filter(|(name, _)| HEADERS_KEPT_ACROSS_ORIGINS.contains(&name.as_str()))
                        .map(|(name, value)| (name.clone(), value.clone()))
                        .collect();
                    let keeps_body = matches!(
                        status,
                        StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
                    );
                    if keeps_body && body.is_some() {
                        return Err(Failure::Final(NodeError::new(
                            category::POLICY_DENIED,
                            format!(
                                "{url} answered {status} to {next}, another origin; a request body is only re-sent to the same origin. Request {next} directly if it is meant to get the body."
                            ),
                            false,
                        )));
                    }
                }
                url = next;
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
    let mut response = builder.send().await.map_err(|e| {
        let error = network_error(&e);
        if error.category == category::POLICY_DENIED {
            Failure::Final(error)
        } else {
            Failure::Transient(error)
        }
    })?;
    let too_large = |size: String| {
        Failure::Final(NodeError::new(
            "response_too_large",
            format!(
                "The response is {size}, over the {} cap for HTTP responses (settings.json: http.max_response_mb).",
                crate::limits::human_bytes(max_bytes)
            ),
            false,
        ))
    };
    if let Some(length) = response.content_length().filter(|&l| l > max_bytes) {
        return Err(too_large(crate::limits::human_bytes(length)));
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
                crate::limits::human_bytes(max_bytes)
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
/// An address the policy refused is `policy_denied`.
fn network_error(error: &reqwest::Error) -> NodeError {
    let mut cause = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<AddressRefused>() {
            return denied(format!("Not connected: {refused}."));
        }
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
