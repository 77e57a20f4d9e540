//! Sending a request: the HTTP exchange, retries with backoff, timeouts and cancellation.

use crate::message::{Request, Response};
use crate::{anthropic, openai, price, LlmConfig, LlmError, Provider};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a waiting call looks at the cancel flag: Ctrl-C ends a call within this.
const CANCEL_POLL: Duration = Duration::from_millis(10);
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// A provider's client. Blocking: it owns a small runtime, so callers need no async.
pub struct Client {
    config: LlmConfig,
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

/// One answered call.
#[derive(Debug, Clone)]
pub struct Completion {
    pub response: Response,
    /// HTTP requests sent, retries included.
    pub http_requests: u32,
    pub duration: Duration,
    /// Estimated from [`price`]'s table; None for a model it does not list.
    pub cost_usd: Option<f64>,
}

enum Failure {
    /// Worth sending again: after `wait` when the provider said how long.
    Retry {
        error: LlmError,
        wait: Option<Duration>,
    },
    Final(LlmError),
}

impl Client {
    pub fn new(config: LlmConfig) -> Result<Client, LlmError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport = |message: String| LlmError::Transport {
            provider: config.provider,
            url: config.base_url.clone(),
            message,
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| transport(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| transport(format!("cannot start the HTTP runtime: {e}")))?;
        Ok(Client {
            config,
            http,
            runtime,
        })
    }

    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// Sends `request`, retrying what the provider asks to be retried, until an answer, a final
    /// error, or `cancel` is set (checked every 10 ms, also while waiting to retry).
    pub fn complete(&self, request: &Request, cancel: &AtomicBool) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let (url, headers, body) = match self.config.provider {
            Provider::Anthropic => (
                anthropic::url(&self.config),
                anthropic::headers(&self.config),
                anthropic::body(&self.config, request),
            ),
            Provider::OpenAi => (
                openai::url(&self.config),
                openai::headers(&self.config),
                openai::body(&self.config, request),
            ),
        };
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let mut sent = 0;
        loop {
            sent += 1;
            let outcome = self.runtime.block_on(until_cancelled(
                cancel,
                self.send_once(&url, &headers, &body, sent),
            ));
            let failure = match outcome {
                None => return Err(LlmError::Cancelled),
                Some(Ok(response)) => {
                    return Ok(Completion {
                        cost_usd: price::estimate(&self.config.model, &response.usage),
                        response,
                        http_requests: sent,
                        duration: started.elapsed(),
                    })
                }
                Some(Err(failure)) => failure,
            };
            let (error, wait) = match failure {
                Failure::Final(error) => return Err(error),
                Failure::Retry { error, wait } => (error, wait),
            };
            if sent > self.config.max_retries {
                return Err(error);
            }
            let wait = wait.unwrap_or_else(|| backoff(sent));
            if wait > self.config.max_retry_wait {
                return Err(LlmError::RetryTooFarAway {
                    provider: self.config.provider,
                    wait,
                    limit: self.config.max_retry_wait,
                });
            }
            tracing::info!("{error}; retrying in {wait:?}");
            let slept = self.runtime.block_on(until_cancelled(cancel, async {
                tokio::time::sleep(wait).await
            }));
            if slept.is_none() {
                return Err(LlmError::Cancelled);
            }
        }
    }

    async fn send_once(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: &[u8],
        attempt: u32,
    ) -> Result<Response, Failure> {
        let provider = self.config.provider;
        let mut builder = self
            .http
            .post(url)
            .timeout(self.config.timeout)
            .header("content-type", "application/json")
            .body(body.to_vec());
        for (name, value) in headers {
            builder = builder.header(*name, value);
        }
        let answer = builder.send().await.map_err(|e| {
            if e.is_timeout() {
                Failure::Final(LlmError::Timeout {
                    provider,
                    after: self.config.timeout,
                })
            } else {
                Failure::Retry {
                    error: LlmError::Transport {
                        provider,
                        url: url.to_string(),
                        message: error_chain(&e),
                    },
                    wait: None,
                }
            }
        })?;
        let status = answer.status().as_u16();
        let wait = retry_after(answer.headers());
        let bytes = answer.bytes().await.map_err(|e| {
            Failure::Final(if e.is_timeout() {
                LlmError::Timeout {
                    provider,
                    after: self.config.timeout,
                }
            } else {
                LlmError::Transport {
                    provider,
                    url: url.to_string(),
                    message: error_chain(&e),
                }
            })
        })?;
        let document: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            if document.is_null() {
                return Err(Failure::Final(LlmError::Malformed {
                    provider,
                    message: format!("the body is not JSON: {}", preview(&bytes)),
                }));
            }
            return match provider {
                Provider::Anthropic => anthropic::parse(&document),
                Provider::OpenAi => openai::parse(&document),
            }
            .map_err(Failure::Final);
        }
        let (kind, mut message) = match provider {
            Provider::Anthropic => anthropic::error_of(&document),
            Provider::OpenAi => openai::error_of(&document),
        };
        if message.is_empty() {
            message = preview(&bytes);
        }
        let unknown_model = match provider {
            Provider::Anthropic => anthropic::is_unknown_model(status, &kind, &message),
            Provider::OpenAi => openai::is_unknown_model(status, &kind, &message),
        };
        let error = if status == 401 || status == 403 {
            LlmError::Unauthorized {
                provider,
                status,
                message,
            }
        } else if unknown_model {
            LlmError::UnknownModel {
                provider,
                model: self.config.model.clone(),
                message,
            }
        } else {
            LlmError::Status {
                provider,
                status,
                attempts: attempt,
                message,
            }
        };
        if LlmError::retryable_status(status) {
            Err(Failure::Retry { error, wait })
        } else {
            Err(Failure::Final(error))
        }
    }
}

/// Runs `work` until it finishes (Some) or `cancel` is set (None).
async fn until_cancelled<T>(
    cancel: &AtomicBool,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    let watch = async {
        while !cancel.load(Ordering::Relaxed) {
            tokio::time::sleep(CANCEL_POLL).await;
        }
    };
    tokio::select! {
        result = work => Some(result),
        _ = watch => None,
    }
}

/// 0.5 s, 1 s, 2 s, ... up to 8 s.
fn backoff(attempt: u32) -> Duration {
    FIRST_BACKOFF
        .saturating_mul(1 << attempt.saturating_sub(1).min(8))
        .min(MAX_BACKOFF)
}

/// OpenAI's `retry-after-ms`, else the standard `retry-after` in seconds. (The HTTP-date form
/// is rare from these APIs and falls back to backoff.)
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    match text.char_indices().nth(300) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None if text.is_empty() => "(empty body)".to_string(),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_cap() {
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(2));
        assert_eq!(backoff(30), MAX_BACKOFF);
    }

    #[test]
    fn retry_after_prefers_milliseconds() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        headers.clear();
        headers.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), None);
    }
}
