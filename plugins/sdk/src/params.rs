use crate::NodeError;
use serde_json::{Map, Value};

/// A node's resolved parameters, with accessors that turn a missing or mistyped parameter into a
/// fixable `bad_params` error naming it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    map: Map<String, Value>,
}

impl Params {
    pub fn new(map: Map<String, Value>) -> Self {
        Params { map }
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        match self.map.get(name) {
            Some(Value::Null) | None => None,
            Some(value) => Some(value),
        }
    }

    pub fn as_map(&self) -> &Map<String, Value> {
        &self.map
    }

    /// A required string parameter.
    pub fn str(&self, name: &str) -> Result<&str, NodeError> {
        match self.get(name) {
            Some(value) => value.as_str().ok_or_else(|| wrong_type(name, "a string", value)),
            None => Err(self.missing(name)),
        }
    }

    /// An optional string parameter.
    pub fn opt_str(&self, name: &str) -> Result<Option<&str>, NodeError> {
        match self.get(name) {
            Some(value) => value
                .as_str()
                .map(Some)
                .ok_or_else(|| wrong_type(name, "a string", value)),
            None => Ok(None),
        }
    }

    /// An optional boolean; `"true"`/`"false"` strings are accepted, as templates produce them.
    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, NodeError> {
        match self.get(name) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::String(s)) if s == "true" => Ok(true),
            Some(Value::String(s)) if s == "false" => Ok(false),
            Some(value) => Err(wrong_type(name, "true or false", value)),
        }
    }

    /// An optional non-negative number; numeric strings are accepted.
    pub fn f64_opt(&self, name: &str) -> Result<Option<f64>, NodeError> {
        let number = match self.get(name) {
            None => return Ok(None),
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
            Some(_) => None,
        };
        match number {
            Some(n) if n >= 0.0 && n.is_finite() => Ok(Some(n)),
            _ => Err(wrong_type(
                name,
                "a non-negative number",
                self.get(name).unwrap_or(&Value::Null),
            )),
        }
    }

    fn missing(&self, name: &str) -> NodeError {
        let given: Vec<String> = self.map.keys().cloned().collect();
        NodeError::bad_params(format!(
            "Missing required parameter '{}'. Given parameters: {}.",
            name,
            if given.is_empty() {
                "none".to_string()
            } else {
                given.join(", ")
            }
        ))
        .attempted(vec![name.to_string()])
        .available(given)
    }
}

fn wrong_type(name: &str, expected: &str, value: &Value) -> NodeError {
    let mut shown = value.to_string();
    if shown.len() > 80 {
        let mut cut = 80;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
        shown.push_str("...");
    }
    NodeError::bad_params(format!(
        "Parameter '{}' must be {}, got {}.",
        name, expected, shown
    ))
    .attempted(vec![name.to_string()])
}
