//! pflow's JSON workflow IR: the types, parsing with precise errors, and `${...}` templates.
//! Pure: no I/O, no execution.

pub mod markdown;
mod strict_json;
pub mod template;
mod workflow;

pub use strict_json::{find_duplicate_key, DuplicateKey};
pub use workflow::{
    cycle_message, default_action, is_node_id, is_version, nesting_message, Backoff, BatchConfig,
    BatchErrorHandling, Edge, HttpOverrides, InputSpec, LoopConfig, Node, OutputSpec, ParseError,
    RetryConfig, SandboxOverrides, TemplateMode, Workflow, INPUT_TYPES,
};

/// The closest of `candidates` to `wanted`, best first, for "did you mean" hints: similar
/// spelling (Jaro-Winkler), or an abbreviation whose letters appear in order (`cmd` ->
/// `command`).
pub fn closest<'a>(wanted: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let wanted_lower = wanted.to_lowercase();
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| {
            let lower = c.to_lowercase();
            let spelling = strsim::jaro_winkler(&wanted_lower, &lower);
            let abbreviation = if wanted_lower.len() >= 2 && is_subsequence(&wanted_lower, &lower) {
                0.8
            } else {
                0.0
            };
            (spelling.max(abbreviation), c)
        })
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

fn is_subsequence(short: &str, long: &str) -> bool {
    let mut long = long.chars();
    short.chars().all(|c| long.any(|l| l == c))
}

/// "a string", "a list", ...: how a message names the kind of a JSON value.
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
