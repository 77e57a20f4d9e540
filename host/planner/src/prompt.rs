//! The prompts (files under `prompts/`, compiled in) and their `{{name}}` slots.

use pflow_runtime::NodeFailure;
use serde_json::{Map, Value};

const SYSTEM: &str = include_str!("../prompts/system.md");
const REQUEST: &str = include_str!("../prompts/request.md");
const RETRY: &str = include_str!("../prompts/retry.md");
const RUNTIME_FIX: &str = include_str!("../prompts/runtime_fix.md");

pub fn system() -> &'static str {
    SYSTEM
}

/// The first message: what exists, what is asked, and the values the user gave.
pub fn request(catalog: &str, request: &str, given: &Map<String, Value>) -> String {
    let given = if given.is_empty() {
        String::new()
    } else {
        let pairs: Vec<String> = given
            .iter()
            .map(|(k, v)| format!("- `{k}` = {}", pflow_ir::template::render(v)))
            .collect();
        format!(
            "\nThe user gave these values; declare an input with each of these names:\n{}\n",
            pairs.join("\n")
        )
    };
    fill(
        REQUEST,
        &[
            ("catalog", catalog),
            ("request", request.trim()),
            ("given", &given),
        ],
    )
}

/// The request again, with the last answer and why it was not accepted.
pub fn retry(
    base: &str,
    attempt: u32,
    max: u32,
    candidate: Option<&Value>,
    errors: &[String],
) -> String {
    let candidate = match candidate {
        Some(workflow) => format!(
            "The workflow you submitted:\n\n```json\n{}\n```\n",
            pretty(workflow)
        ),
        None => String::new(),
    };
    let errors: Vec<String> = errors
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{}. {}", i + 1, e.replace('\n', "\n   ")))
        .collect();
    base.to_string()
        + &fill(
            RETRY,
            &[
                ("attempt", &attempt.to_string()),
                ("max", &max.to_string()),
                ("candidate", &candidate),
                ("errors", &errors.join("\n")),
            ],
        )
}

/// The request again, with the workflow that failed at run time, its structured errors, and
/// why the last fix was not accepted (when it was not).
pub fn runtime_fix(
    base: &str,
    attempt: u32,
    max: u32,
    candidate: &Value,
    runtime_errors: &[NodeFailure],
    rejection: &[String],
) -> String {
    let rejection = if rejection.is_empty() {
        String::new()
    } else {
        format!(
            "\nYour last fix was not accepted:\n\n{}\n",
            rejection
                .iter()
                .map(|r| format!("- {r}"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    };
    let errors = serde_json::to_string_pretty(runtime_errors).unwrap_or_default();
    base.to_string()
        + &fill(
            RUNTIME_FIX,
            &[
                ("attempt", &attempt.to_string()),
                ("max", &max.to_string()),
                ("candidate", &pretty(candidate)),
                ("runtime_errors", &errors),
                ("rejection", &rejection),
            ],
        )
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Replaces each `{{name}}` once, in one pass, so that a value containing `{{...}}` (a user's
/// request, a workflow) is never expanded again.
pub(crate) fn fill(template: &str, slots: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}").map(|end| (&after[..end], end)) {
            Some((name, end)) if slots.iter().any(|(n, _)| *n == name) => {
                let value = slots.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
                out.push_str(value.unwrap_or_default());
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slots_are_filled_once() {
        assert_eq!(
            fill("a {{x}} b {{y}} {{unknown}}", &[("x", "{{y}}"), ("y", "2")]),
            "a {{y}} b 2 {{unknown}}"
        );
    }

    #[test]
    fn the_request_names_the_values_the_user_gave() {
        let mut given = Map::new();
        given.insert("file".into(), json!("notes.txt"));
        let text = request("CATALOG", "count words", &given);
        assert!(text.starts_with("CATALOG\n# The request\n\ncount words\n"));
        assert!(text.contains("- `file` = notes.txt"));
    }

    #[test]
    fn a_retry_numbers_the_errors_and_shows_the_candidate() {
        let text = retry(
            "BASE",
            2,
            3,
            Some(&json!({"nodes": []})),
            &["one\nmore".into(), "two".into()],
        );
        assert!(text.starts_with("BASE\n# Your previous answer was not accepted (attempt 2 of 3)"));
        assert!(text.contains("1. one\n   more\n2. two"));
        assert!(text.contains("\"nodes\": []"));
    }
}
