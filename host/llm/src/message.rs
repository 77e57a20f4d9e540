//! A provider-neutral request and answer; `anthropic` and `openai` translate to the wire.

use serde::Serialize;
use serde_json::Value;

/// One call: a system prompt, the conversation so far, and optionally one tool the model must
/// call.
#[derive(Debug, Clone, Serialize)]
pub struct Request {
    pub system: String,
    /// User and assistant turns, alternating, the user's first.
    pub messages: Vec<(Role, String)>,
    /// When set, the model is forced to answer by calling this tool.
    pub tool: Option<Tool>,
    pub max_tokens: u32,
    pub temperature: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// JSON Schema of the tool's input object.
    pub input_schema: Value,
}

/// What the model said: text, a tool call, or both.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Response {
    pub text: String,
    /// `(name, input)` of the tool call, if the model made one.
    pub tool_call: Option<(String, Value)>,
    /// The provider's reason for stopping (`end_turn`, `tool_use`, `stop`, `max_tokens`, ...).
    pub stop_reason: String,
    pub usage: Usage,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}
