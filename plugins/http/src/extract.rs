//! `extract`: `{alias: path}` with paths such as `$.field`, `$.nested.field`,
//! `$.items[0].name` (the leading `$.` is optional).

use pflow_sdk::serde_json::{self, value::RawValue};
use pflow_sdk::{Map, NodeError, Value};
use std::collections::{BTreeMap, HashMap};

/// How much of the response the error's `sample` shows.
const SAMPLE_CHARS: usize = 500;
const SAMPLE_DEPTH: usize = 2;
const SAMPLE_ITEMS: usize = 3;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
}

fn parse_path(path: &str) -> Option<Vec<Step>> {
    let mut rest = path.trim();
    if let Some(after) = rest.strip_prefix('$') {
        rest = after;
    }
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            rest = after;
            if rest.is_empty() {
                return None;
            }
            continue;
        }
        if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']')?;
            steps.push(Step::Index(after[..close].trim().parse().ok()?));
            rest = &after[close + 1..];
            continue;
        }
        let end = rest.find(|c| c == '.' || c == '[').unwrap_or(rest.len());
        steps.push(Step::Field(rest[..end].to_string()));
        rest = &rest[end..];
    }
    Some(steps)
}

/// One level of the document, parsed only as deep as its direct children: nested values stay
/// raw text. Extraction opens just the containers on its paths, each once, instead of building
/// the whole tree (which costs milliseconds for a 100 KB body inside the sandbox).
enum Level<'a> {
    Object(BTreeMap<String, &'a RawValue>),
    Array(Vec<&'a RawValue>),
    Scalar,
}

fn open(raw: &RawValue) -> Level<'_> {
    let text = raw.get();
    match text.trim_start().as_bytes().first() {
        Some(b'{') => serde_json::from_str(text).map_or(Level::Scalar, Level::Object),
        Some(b'[') => serde_json::from_str(text).map_or(Level::Scalar, Level::Array),
        _ => Level::Scalar,
    }
}

fn lookup<'a>(
    root: &'a RawValue,
    steps: &[Step],
    opened: &mut HashMap<String, Level<'a>>,
) -> Option<&'a RawValue> {
    let mut current = root;
    let mut prefix = String::new();
    for step in steps {
        let level = opened.entry(prefix.clone()).or_insert_with(|| open(current));
        current = match (step, level) {
            (Step::Field(name), Level::Object(map)) => map.get(name).copied(),
            (Step::Index(i), Level::Array(items)) => items.get(*i).copied(),
            _ => None,
        }?;
        match step {
            Step::Field(name) => {
                prefix.push('.');
                prefix.push_str(name);
            }
            Step::Index(i) => prefix.push_str(&format!("[{}]", i)),
        }
    }
    Some(current)
}

/// Every alias with its value, or one `extraction_error` naming every path that failed.
pub fn extract(paths: &Map<String, Value>, body: &RawValue) -> Result<Map<String, Value>, NodeError> {
    let mut opened = HashMap::new();
    let mut extracted = Map::new();
    let mut failed = Vec::new();
    for (alias, path) in paths {
        let path_text = match path.as_str() {
            Some(text) => text,
            None => {
                failed.push(format!("{}: {} (not a path string)", alias, path));
                continue;
            }
        };
        let found = parse_path(path_text)
            .and_then(|steps| lookup(body, &steps, &mut opened))
            .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
        match found {
            Some(value) => {
                extracted.insert(alias.clone(), value);
            }
            None => failed.push(format!("{}: {}", alias, path_text)),
        }
    }
    if failed.is_empty() {
        return Ok(extracted);
    }
    // The error path can afford the whole tree.
    let body: Value = serde_json::from_str(body.get()).unwrap_or(Value::Null);
    let available: Vec<String> = match &body {
        Value::Object(map) => map.keys().cloned().collect(),
        Value::Array(items) => vec![format!("[0..{}]", items.len())],
        _ => Vec::new(),
    };
    Err(NodeError::new(
        "extraction_error",
        format!(
            "{} of {} extract path(s) found nothing in the response: {}. The response's top-level {}: {}.",
            failed.len(),
            paths.len(),
            failed.join(", "),
            if matches!(body, Value::Array(_)) { "value is a list" } else { "keys are" },
            if available.is_empty() { "none".to_string() } else { available.join(", ") }
        ),
    )
    .fixable(true)
    .attempted(failed)
    .available(available)
    .sample(sample(&body)))
}

/// A shallow rendering: two levels deep, the first few items of lists, about 500 characters.
pub fn sample(value: &Value) -> String {
    let mut text = shallow(value, 0).to_string();
    if text.len() > SAMPLE_CHARS {
        let mut cut = SAMPLE_CHARS;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    text
}

fn shallow(value: &Value, depth: usize) -> Value {
    match value {
        Value::Object(map) if depth >= SAMPLE_DEPTH => {
            Value::String(format!("{{...{} keys}}", map.len()))
        }
        Value::Array(items) if depth >= SAMPLE_DEPTH => {
            Value::String(format!("[...{} items]", items.len()))
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), shallow(v, depth + 1)))
                .collect(),
        ),
        Value::Array(items) => {
            let mut shown: Vec<Value> = items
                .iter()
                .take(SAMPLE_ITEMS)
                .map(|v| shallow(v, depth + 1))
                .collect();
            if items.len() > SAMPLE_ITEMS {
                shown.push(Value::String(format!(
                    "...{} more",
                    items.len() - SAMPLE_ITEMS
                )));
            }
            Value::Array(shown)
        }
        Value::String(s) if s.chars().count() > 80 => {
            Value::String(format!("{}...", s.chars().take(80).collect::<String>()))
        }
        other => other.clone(),
    }
}
