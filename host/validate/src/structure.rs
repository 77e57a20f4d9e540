//! The shape of the IR document, checked on the raw JSON so that every problem is reported at
//! once with its path (serde stops at the first).

use crate::{Issue, IssueKind};
use pflow_ir::{closest, is_node_id, is_version, json_kind, INPUT_TYPES};
use serde_json::{Map, Value};
use std::collections::HashSet;

const TOP_LEVEL: &[&str] = &[
    "ir_version",
    "inputs",
    "outputs",
    "nodes",
    "edges",
    "start_node",
    "enable_namespacing",
    "template_resolution_mode",
    "sandbox",
    "cache",
    "mappings",
];
const NODE_FIELDS: &[&str] = &[
    "id",
    "type",
    "params",
    "parameters",
    "purpose",
    "batch",
    "loop",
    "retry",
    "cache",
    "prompt_cache",
    "prewarm",
    "approval",
    "sandbox",
    "_source_line",
    "_source_lines",
    "_source_files",
    "_routes_to_end",
];
const EDGE_FIELDS: &[&str] = &["from", "to", "action"];
const INPUT_FIELDS: &[&str] = &["description", "required", "type", "default", "stdin"];
const OUTPUT_FIELDS: &[&str] = &["description", "type", "source", "stdout", "_source_line"];
const LOOP_FIELDS: &[&str] = &["while", "until", "carry", "max_iterations"];
const RETRY_FIELDS: &[&str] = &["max", "wait", "backoff"];
const BATCH_FIELDS: &[&str] = &[
    "items",
    "as",
    "error_handling",
    "parallel",
    "max_concurrent",
    "max_retries",
    "retry_wait",
];

pub(crate) fn check(doc: &Value, issues: &mut Vec<Issue>) {
    let Some(top) = doc.as_object() else {
        issues.push(structure(
            "(document)",
            format!("A workflow must be a JSON object, got {}", json_kind(doc)),
            Some(
                "Start from {\"ir_version\": \"0.1.0\", \"nodes\": [...], \"edges\": [...]}"
                    .to_string(),
            ),
        ));
        return;
    };
    unknown_fields(top, TOP_LEVEL, "", issues);
    for (path, depth) in pflow_ir::template::too_deeply_nested(doc, "") {
        let path = path.trim_start_matches('.');
        issues.push(structure(
            path,
            pflow_ir::nesting_message(path, depth),
            Some(
                "Templates nest as ${a[${b}]}; compute a deeply nested value in a node instead"
                    .to_string(),
            ),
        ));
    }

    // A missing version is pflow's `0.1.0`, as its loader normalises it.
    match top.get("ir_version") {
        None => {}
        Some(Value::String(v)) if is_version(v) => {}
        Some(Value::String(v)) => issues.push(structure(
            "ir_version",
            format!("'{v}' is not a version of the form MAJOR.MINOR.PATCH"),
            Some("Use \"0.1.0\"".to_string()),
        )),
        Some(other) => issues.push(wrong_type("ir_version", "a string", other)),
    }

    let mut ids = Vec::new();
    let mut seen = HashSet::new();
    match top.get("nodes") {
        None => issues.push(missing("nodes", "a list of {\"id\", \"type\", \"params\"}")),
        Some(Value::Array(nodes)) if nodes.is_empty() => issues.push(structure(
            "nodes",
            "A workflow needs at least one node".to_string(),
            None,
        )),
        Some(Value::Array(nodes)) => {
            for (i, node) in nodes.iter().enumerate() {
                if let Some(id) = check_node(node, &format!("nodes[{i}]"), issues) {
                    if !seen.insert(id.clone()) {
                        issues.push(structure(
                            &format!("nodes[{i}].id"),
                            format!("Duplicate node id '{id}'"),
                            Some("Give every node a unique id".to_string()),
                        ));
                    }
                    ids.push(id);
                }
            }
        }
        Some(other) => issues.push(wrong_type("nodes", "a list", other)),
    }

    match top.get("edges") {
        None => {}
        Some(Value::Array(edges)) => {
            for (i, edge) in edges.iter().enumerate() {
                check_edge(edge, &format!("edges[{i}]"), &ids, &seen, issues);
            }
        }
        Some(other) => issues.push(wrong_type("edges", "a list", other)),
    }

    match top.get("start_node") {
        None => {}
        Some(Value::String(id)) if seen.contains(id) || ids.is_empty() => {}
        Some(Value::String(id)) => issues.push(unknown_node("start_node", id, &ids)),
        Some(other) => issues.push(wrong_type("start_node", "a node id", other)),
    }
    check_inputs(top.get("inputs"), issues);
    check_outputs(top.get("outputs"), issues);
    if let Some(value) = top.get("enable_namespacing").filter(|v| !v.is_boolean()) {
        issues.push(wrong_type("enable_namespacing", "true or false", value));
    }
    match top.get("template_resolution_mode") {
        None => {}
        Some(Value::String(mode)) if mode == "strict" || mode == "permissive" => {}
        Some(other) => issues.push(structure(
            "template_resolution_mode",
            format!("Must be \"strict\" or \"permissive\", got {other}"),
            None,
        )),
    }
    if let Some(value) = top.get("sandbox") {
        check_sandbox(value, "sandbox", issues);
    }
}

/// Returns the node's id when it has a usable one.
fn check_node(node: &Value, path: &str, issues: &mut Vec<Issue>) -> Option<String> {
    let Some(fields) = node.as_object() else {
        issues.push(wrong_type(path, "an object with id, type and params", node));
        return None;
    };
    unknown_fields(fields, NODE_FIELDS, path, issues);
    if fields.contains_key("params") && fields.contains_key("parameters") {
        issues.push(structure(
            &format!("{path}.parameters"),
            "Both 'params' and 'parameters' are given".to_string(),
            Some("Keep only 'params'".to_string()),
        ));
    }
    for key in ["params", "parameters"] {
        if let Some(value) = fields.get(key).filter(|v| !v.is_object()) {
            issues.push(wrong_type(&format!("{path}.{key}"), "an object", value));
        }
    }
    if let Some(value) = fields.get("purpose").filter(|v| !v.is_string()) {
        issues.push(wrong_type(&format!("{path}.purpose"), "a string", value));
    }
    match fields.get("type") {
        None => issues.push(missing(
            &format!("{path}.type"),
            "a node type such as \"shell\"",
        )),
        Some(Value::String(_)) => {}
        Some(other) => issues.push(wrong_type(&format!("{path}.type"), "a string", other)),
    }
    if let Some(batch) = fields.get("batch") {
        check_batch(batch, &format!("{path}.batch"), issues);
    }
    if let Some(sandbox) = fields.get("sandbox") {
        check_sandbox(sandbox, &format!("{path}.sandbox"), issues);
    }
    if let Some(config) = fields.get("loop") {
        check_settings::<pflow_ir::LoopConfig>(
            config,
            LOOP_FIELDS,
            &format!("{path}.loop"),
            issues,
        );
        if fields.contains_key("batch") {
            issues.push(structure(
                &format!("{path}.loop"),
                "A node cannot have both 'batch' and 'loop'".to_string(),
                Some(
                    "Use batch for a fixed list of items, loop to repeat until a condition holds"
                        .to_string(),
                ),
            ));
        }
    }
    if let Some(config) = fields.get("retry") {
        check_settings::<pflow_ir::RetryConfig>(
            config,
            RETRY_FIELDS,
            &format!("{path}.retry"),
            issues,
        );
    }
    match fields.get("id") {
        None => {
            issues.push(missing(
                &format!("{path}.id"),
                "a unique name such as \"fetch\"",
            ));
            None
        }
        Some(Value::String(id)) if is_node_id(id) => Some(id.clone()),
        Some(Value::String(id)) => {
            issues.push(structure(
                &format!("{path}.id"),
                format!("Node id '{id}' may only contain letters, digits, '_' and '-'"),
                None,
            ));
            None
        }
        Some(other) => {
            issues.push(wrong_type(&format!("{path}.id"), "a string", other));
            None
        }
    }
}

fn check_edge(
    edge: &Value,
    path: &str,
    ids: &[String],
    known: &HashSet<String>,
    issues: &mut Vec<Issue>,
) {
    let Some(fields) = edge.as_object() else {
        issues.push(wrong_type(
            path,
            "an object {\"from\", \"to\", \"action\"}",
            edge,
        ));
        return;
    };
    for (wrong, right) in [
        ("from_node", "from"),
        ("to_node", "to"),
        ("source", "from"),
        ("target", "to"),
    ] {
        if fields.contains_key(wrong) {
            issues.push(structure(
                &format!("{path}.{wrong}"),
                format!("Edges have no field '{wrong}'; use '{right}'"),
                Some("Edges use `from` and `to`: {\"from\": \"a\", \"to\": \"b\"}".to_string()),
            ));
        }
    }
    let others: Map<String, Value> = fields
        .iter()
        .filter(|(k, _)| !["from_node", "to_node", "source", "target"].contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    unknown_fields(&others, EDGE_FIELDS, path, issues);
    for end in ["from", "to"] {
        match fields.get(end) {
            None if fields.contains_key(&format!("{end}_node")) => {}
            None => issues.push(missing(&format!("{path}.{end}"), "a node id")),
            Some(Value::String(id)) if known.contains(id) || ids.is_empty() => {}
            Some(Value::String(id)) => issues.push(unknown_node(&format!("{path}.{end}"), id, ids)),
            Some(other) => issues.push(wrong_type(&format!("{path}.{end}"), "a node id", other)),
        }
    }
    if let Some(value) = fields.get("action").filter(|v| !v.is_string()) {
        issues.push(wrong_type(&format!("{path}.action"), "a string", value));
    }
}

fn check_inputs(inputs: Option<&Value>, issues: &mut Vec<Issue>) {
    let Some(inputs) = inputs else { return };
    let Some(inputs) = inputs.as_object() else {
        issues.push(wrong_type(
            "inputs",
            "an object of {name: {description, type, required}}",
            inputs,
        ));
        return;
    };
    let mut stdin = Vec::new();
    for (name, spec) in inputs {
        let path = format!("inputs.{name}");
        let Some(fields) = spec.as_object() else {
            issues.push(wrong_type(
                &path,
                "an object {description, type, required, default}",
                spec,
            ));
            continue;
        };
        unknown_fields(fields, INPUT_FIELDS, &path, issues);
        match fields.get("type") {
            None => {}
            Some(Value::String(t)) if INPUT_TYPES.contains(&t.as_str()) => {}
            Some(other) => issues.push(structure(
                &format!("{path}.type"),
                format!("Unknown input type {other}"),
                Some(format!("Use one of: {}", INPUT_TYPES.join(", "))),
            )),
        }
        for flag in ["required", "stdin"] {
            if let Some(value) = fields.get(flag).filter(|v| !v.is_boolean()) {
                issues.push(wrong_type(
                    &format!("{path}.{flag}"),
                    "true or false",
                    value,
                ));
            }
        }
        if let Some(value) = fields.get("description").filter(|v| !v.is_string()) {
            issues.push(wrong_type(
                &format!("{path}.description"),
                "a string",
                value,
            ));
        }
        if fields.get("stdin") == Some(&Value::Bool(true)) {
            stdin.push(name.as_str());
        }
    }
    if stdin.len() > 1 {
        issues.push(structure(
            "inputs",
            format!(
                "Only one input may set stdin: true, found: {}",
                stdin.join(", ")
            ),
            None,
        ));
    }
}

fn check_outputs(outputs: Option<&Value>, issues: &mut Vec<Issue>) {
    let Some(outputs) = outputs else { return };
    let Some(outputs) = outputs.as_object() else {
        issues.push(wrong_type(
            "outputs",
            "an object of {name: {description, source}}",
            outputs,
        ));
        return;
    };
    for (name, spec) in outputs {
        let path = format!("outputs.{name}");
        let Some(fields) = spec.as_object() else {
            issues.push(wrong_type(
                &path,
                "an object {description, type, source}",
                spec,
            ));
            continue;
        };
        unknown_fields(fields, OUTPUT_FIELDS, &path, issues);
        for key in ["source", "description", "type"] {
            if let Some(value) = fields.get(key).filter(|v| !v.is_string()) {
                issues.push(wrong_type(&format!("{path}.{key}"), "a string", value));
            }
        }
    }
}

fn check_batch(batch: &Value, path: &str, issues: &mut Vec<Issue>) {
    let Some(fields) = batch.as_object() else {
        issues.push(wrong_type(path, "an object {items, as, ...}", batch));
        return;
    };
    unknown_fields(fields, BATCH_FIELDS, path, issues);
    match fields.get("items") {
        None => issues.push(missing(
            &format!("{path}.items"),
            "a ${...} template or a list",
        )),
        Some(Value::String(_) | Value::Array(_)) => {}
        Some(other) => issues.push(wrong_type(
            &format!("{path}.items"),
            "a template or a list",
            other,
        )),
    }
    if let Err(e) = serde_json::from_value::<pflow_ir::BatchConfig>(batch.clone()) {
        if fields.contains_key("items") && fields.keys().all(|k| BATCH_FIELDS.contains(&k.as_str()))
        {
            issues.push(structure(
                path,
                format!("Invalid batch settings: {e}"),
                None,
            ));
        }
    }
}

/// A settings object (`loop`, `retry`): known fields, then the values of the known fields.
fn check_settings<T: serde::de::DeserializeOwned>(
    value: &Value,
    known: &[&str],
    path: &str,
    issues: &mut Vec<Issue>,
) {
    let Some(fields) = value.as_object() else {
        issues.push(wrong_type(
            path,
            &format!("an object {{{}}}", known.join(", ")),
            value,
        ));
        return;
    };
    unknown_fields(fields, known, path, issues);
    if fields.keys().all(|k| known.contains(&k.as_str())) {
        if let Err(e) = serde_json::from_value::<T>(value.clone()) {
            issues.push(structure(path, format!("Invalid settings: {e}"), None));
        }
    }
}

fn check_sandbox(sandbox: &Value, path: &str, issues: &mut Vec<Issue>) {
    if let Err(e) = serde_json::from_value::<pflow_ir::SandboxOverrides>(sandbox.clone()) {
        issues.push(structure(
            path,
            format!("Invalid sandbox limits: {e}"),
            Some(
                "Fields: fuel, memory_mb, timeout_seconds, output_mb, http.allowed_hosts"
                    .to_string(),
            ),
        ));
    }
}

fn unknown_fields(
    fields: &Map<String, Value>,
    known: &[&str],
    path: &str,
    issues: &mut Vec<Issue>,
) {
    for key in fields.keys().filter(|k| !known.contains(&k.as_str())) {
        let field_path = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        let close = closest(key, known.iter().copied());
        issues.push(structure(
            &field_path,
            format!("Unknown field '{key}'"),
            Some(match close.first() {
                Some(best) => format!("Did you mean '{best}'? Allowed here: {}", known.join(", ")),
                None => format!("Allowed here: {}", known.join(", ")),
            }),
        ));
    }
}

fn unknown_node(path: &str, id: &str, ids: &[String]) -> Issue {
    let close = closest(id, ids.iter().map(String::as_str));
    structure(
        path,
        format!("Node '{id}' does not exist"),
        Some(match close.first() {
            Some(best) => format!("Did you mean '{best}'? Nodes: {}", ids.join(", ")),
            None => format!("Nodes: {}", ids.join(", ")),
        }),
    )
}

fn missing(path: &str, example: &str) -> Issue {
    structure(
        path,
        "Required field is missing".to_string(),
        Some(format!("Add it: {example}")),
    )
}

fn wrong_type(path: &str, expected: &str, got: &Value) -> Issue {
    structure(
        path,
        format!("Must be {expected}, got {}", json_kind(got)),
        None,
    )
}

fn structure(path: &str, message: String, suggestion: Option<String>) -> Issue {
    Issue::error(IssueKind::Structure, path, message, suggestion)
}
