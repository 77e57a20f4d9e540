//! What a finished run hands back: its declared outputs, or, when it declares none, the value
//! pflow would show (the most downstream `result`, `response`, `output`, `text`, `data` or
//! `stdout`, else the last node's namespace).

use crate::attempt::template_failure;
use crate::error::NodeFailure;
use pflow_ir::template::Template;
use pflow_ir::Workflow;
use serde_json::{Map, Value};

/// pflow's order of preference for the output of a workflow without declared outputs.
const PRIORITY_KEYS: &[&str] = &["result", "response", "output", "text", "data", "stdout"];

/// The declared outputs resolved against the store; without declarations, the auto-detected
/// output under its key.
pub fn collect(
    workflow: &Workflow,
    store: &Map<String, Value>,
    strict: bool,
) -> Result<Map<String, Value>, NodeFailure> {
    if workflow.outputs.is_empty() {
        return Ok(auto_detected(store).into_iter().collect());
    }
    let mut outputs = Map::new();
    for (name, spec) in &workflow.outputs {
        let value = match &spec.source {
            Some(source) => Template::parse(source)
                .resolve(store, strict)
                .map_err(|e| template_failure(e, "output_source", &format!("Output '{name}' cannot be filled")))?,
            None => store.get(name).cloned().ok_or_else(|| {
                NodeFailure::new(
                    "template",
                    "output_source",
                    format!("Output '{name}' has no source and nothing was written under that name; give it a source such as ${{node.field}}."),
                )
            })?,
        };
        outputs.insert(name.clone(), value);
    }
    Ok(outputs)
}

/// pflow's `find_auto_output`: for each priority key, the root, then the last node namespace
/// that has a usable value (not null, not blank text); else the last usable root entry.
pub fn auto_detected(store: &Map<String, Value>) -> Option<(String, Value)> {
    let usable = |value: &Value| match value {
        Value::Null => false,
        Value::String(text) => !text.trim().is_empty(),
        _ => true,
    };
    let namespaces = || {
        store
            .iter()
            .filter(|(key, _)| !key.starts_with('_'))
            .filter_map(|(_, value)| value.as_object())
    };
    for key in PRIORITY_KEYS {
        if let Some(value) = store.get(*key).filter(|v| usable(v)) {
            return Some((key.to_string(), value.clone()));
        }
        if let Some(value) = namespaces()
            .filter_map(|namespace| namespace.get(*key).filter(|v| usable(v)))
            .next_back()
        {
            return Some((key.to_string(), value.clone()));
        }
    }
    store
        .iter()
        .rev()
        .find(|(key, value)| !key.starts_with('_') && usable(value))
        .map(|(key, value)| (key.clone(), value.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_most_downstream_priority_key_wins() {
        let store = json!({
            "text": "input",
            "a": {"stdout": "first", "response": ""},
            "b": {"stdout": "second"},
        });
        let store = store.as_object().unwrap();
        assert_eq!(auto_detected(store), Some(("text".into(), json!("input"))));
        let mut without_root = store.clone();
        without_root.shift_remove("text");
        assert_eq!(
            auto_detected(&without_root),
            Some(("stdout".into(), json!("second")))
        );
    }
}
