//! The generator contract: the model answers by calling `submit_workflow` with one JSON object,
//! `{"workflow": <IR>, "name", "description", "params"}` for a new workflow or
//! `{"reuse": "<saved name>", "params"}` for a saved one. Tools outside the project rely on this
//! shape; change it only with them.

use pflow_llm::Tool;
use serde_json::{json, Map, Value};

pub const TOOL_NAME: &str = "submit_workflow";

/// The tool the planner forces the model to call.
pub fn tool() -> Tool {
    Tool {
        name: TOOL_NAME.to_string(),
        description: "Submit the workflow that fulfils the request (or the saved workflow to \
                      reuse), with the values of its inputs."
            .to_string(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "workflow": {
                    "type": "object",
                    "description": "The workflow in pflow's JSON IR: inputs, nodes, edges, outputs."
                },
                "name": {
                    "type": "string",
                    "description": "kebab-case name to save it under, at most 50 characters"
                },
                "description": {"type": "string", "description": "What it does, in one sentence"},
                "reuse": {
                    "type": "string",
                    "description": "Instead of a workflow: the name of a saved workflow that already does this"
                },
                "params": {
                    "type": "object",
                    "description": "A value for each declared input, taken from the request"
                }
            },
            "additionalProperties": false
        }),
    }
}

/// A well-formed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Submission {
    New {
        workflow: Value,
        name: String,
        description: String,
        params: Map<String, Value>,
    },
    Reuse {
        name: String,
        params: Map<String, Value>,
    },
}

impl Submission {
    pub fn params(&self) -> &Map<String, Value> {
        match self {
            Submission::New { params, .. } | Submission::Reuse { params, .. } => params,
        }
    }
}

/// The submission, or every way the object misses the contract (each a sentence for the model).
pub fn parse(mut object: Map<String, Value>) -> Result<Submission, Vec<String>> {
    let mut problems = Vec::new();
    let params = match object.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => {
            problems.push("\"params\" must be an object of input values".to_string());
            Map::new()
        }
    };
    let mut text = |key: &str, problems: &mut Vec<String>| match object.remove(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => {
            problems.push(format!("\"{key}\" must be a string"));
            None
        }
    };
    let reuse = text("reuse", &mut problems);
    let name = text("name", &mut problems);
    let description = text("description", &mut problems);
    let workflow = object.remove("workflow");
    let unknown: Vec<String> = object.keys().map(|k| format!("\"{k}\"")).collect();
    if !unknown.is_empty() {
        problems.push(format!(
            "unknown field(s) {}: the fields are workflow, name, description, params, reuse",
            unknown.join(", ")
        ));
    }
    let submission = match (reuse, workflow) {
        (Some(_), Some(_)) => {
            problems.push("give either \"workflow\" or \"reuse\", not both".to_string());
            None
        }
        (Some(reuse), None) if reuse.trim().is_empty() => {
            problems.push("\"reuse\" must name a saved workflow".to_string());
            None
        }
        (Some(reuse), None) => Some(Submission::Reuse {
            name: reuse.trim().to_string(),
            params,
        }),
        (None, Some(Value::Object(workflow))) => {
            if name.as_deref().is_none_or(|n| n.trim().is_empty()) {
                problems.push("\"name\" is required with a workflow".to_string());
            }
            if description.as_deref().is_none_or(|d| d.trim().is_empty()) {
                problems.push("\"description\" is required with a workflow".to_string());
            }
            Some(Submission::New {
                workflow: Value::Object(workflow),
                name: name.unwrap_or_default(),
                description: description.unwrap_or_default(),
                params,
            })
        }
        (None, Some(_)) => {
            problems.push(
                "\"workflow\" must be a JSON object (the IR itself, not a string)".to_string(),
            );
            None
        }
        (None, None) => {
            problems.push(
                "the answer needs \"workflow\" (a new workflow) or \"reuse\" (a saved one)"
                    .to_string(),
            );
            None
        }
    };
    match submission {
        Some(submission) if problems.is_empty() => Ok(submission),
        _ => Err(problems),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_new_workflow_and_a_reuse_are_read() {
        let new = parse(object(json!({
            "workflow": {"nodes": []}, "name": "n", "description": "d", "params": {"a": 1}
        })))
        .unwrap();
        assert!(matches!(new, Submission::New { ref name, .. } if name == "n"));
        assert_eq!(new.params()["a"], 1);
        let reuse = parse(object(json!({"reuse": "saved", "params": {}}))).unwrap();
        assert_eq!(
            reuse,
            Submission::Reuse {
                name: "saved".into(),
                params: Map::new()
            }
        );
    }

    #[test]
    fn every_miss_is_named() {
        let problems = parse(object(json!({"workflow": "{}", "extra": 1}))).unwrap_err();
        assert!(
            problems.iter().any(|p| p.contains("\"extra\"")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("not a string")),
            "{problems:?}"
        );
        let problems = parse(object(json!({"workflow": {}, "params": []}))).unwrap_err();
        assert_eq!(problems.len(), 3, "{problems:?}");
        let problems = parse(object(json!({"workflow": {}, "reuse": "x"}))).unwrap_err();
        assert!(problems[0].contains("not both"));
        assert!(!parse(object(json!({}))).unwrap_err().is_empty());
    }
}
