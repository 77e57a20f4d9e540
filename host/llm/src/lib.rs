//! LLM providers for pflow-host: the Anthropic Messages API and OpenAI-compatible Chat
//! Completions (OpenAI, Ollama, llama.cpp's server, vLLM, LM Studio), over reqwest.
//!
//! One non-streaming call at a time: [`Client::complete`] sends a [`Request`], retries what a
//! provider asks to be retried (429, 5xx, Anthropic's 529, honouring `retry-after`), stops within
//! a poll interval when the caller's cancel flag is set, and returns the answer with its token
//! usage and an estimated cost. [`structured::object`] takes the one JSON object a forced tool
//! call (or, failing that, a fenced ```json block) carries.

mod anthropic;
mod client;
mod config;
mod error;
mod message;
mod openai;
pub mod price;
pub mod structured;

pub use client::{Client, Completion};
pub use config::CREDENTIAL_VARIABLES;
pub use config::{LlmConfig, LlmSettings, Provider};
pub use error::LlmError;
pub use message::{Request, Response, Role, Tool, Usage};
