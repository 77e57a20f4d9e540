//! pflow's JSON workflow IR: the types, parsing with precise errors, and `${...}` templates.
//! Pure: no I/O, no execution.

pub mod template;
mod workflow;

pub use workflow::{
    default_action, is_node_id, BatchConfig, BatchErrorHandling, Edge, HttpOverrides, InputSpec,
    Node, OutputSpec, ParseError, SandboxOverrides, TemplateMode, Workflow, INPUT_TYPES,
};

/// The closest of `candidates` to `wanted`, best first, for "did you mean" hints.
pub fn closest<'a>(wanted: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(wanted, c), c))
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(3).map(|(_, c)| c).collect()
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
