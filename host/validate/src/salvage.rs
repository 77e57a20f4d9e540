//! The usable part of a document whose shape is wrong, so that the semantic checks can run on
//! it too and one `validate` reports every problem: a misnamed edge field, an unknown field or
//! a broken setting no longer hides an unknown node type or a template that misses.
//!
//! What cannot be kept is dropped (a node without an id or a type, a setting that does not
//! parse); what is clearly meant is read as meant (`from_node` as `from`). The shape errors
//! themselves are reported by `structure`; this only feeds the semantic checks.

use pflow_ir::{
    is_node_id, is_version, BatchConfig, InputSpec, LoopConfig, OutputSpec, RetryConfig,
    SandboxOverrides, Workflow,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// The workflow the document's sound parts describe, if it has any node at all.
pub(crate) fn salvage(doc: &Value) -> Option<Workflow> {
    let top = doc.as_object()?;
    let mut kept = Map::new();
    if let Some(version) = top.get("ir_version").and_then(Value::as_str) {
        if is_version(version) {
            kept.insert("ir_version".into(), Value::from(version));
        }
    }
    let mut ids = HashSet::new();
    let nodes: Vec<Value> = top
        .get("nodes")?
        .as_array()?
        .iter()
        .filter_map(|node| node_of(node, &mut ids))
        .collect();
    if nodes.is_empty() {
        return None;
    }
    kept.insert("nodes".into(), Value::Array(nodes));
    let edges: Vec<Value> = top
        .get("edges")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|edge| edge_of(edge, &ids))
        .collect();
    kept.insert("edges".into(), Value::Array(edges));
    if let Some(start) = top.get("start_node").and_then(Value::as_str) {
        if ids.contains(start) {
            kept.insert("start_node".into(), Value::from(start));
        }
    }
    for (field, entry) in [
        ("inputs", input_of as fn(&Value) -> Value),
        ("outputs", output_of),
    ] {
        if let Some(entries) = top.get(field).and_then(Value::as_object) {
            let entries: Map<String, Value> = entries
                .iter()
                .map(|(name, spec)| (name.clone(), entry(spec)))
                .collect();
            kept.insert(field.into(), Value::Object(entries));
        }
    }
    for field in ["enable_namespacing", "template_resolution_mode", "sandbox"] {
        if let Some(value) = top.get(field) {
            kept.insert(field.into(), value.clone());
        }
    }
    if !parses::<SandboxOverrides>(kept.get("sandbox")) {
        kept.remove("sandbox");
    }
    if !kept.get("enable_namespacing").is_none_or(Value::is_boolean) {
        kept.remove("enable_namespacing");
    }
    if !matches!(
        kept.get("template_resolution_mode").and_then(Value::as_str),
        None | Some("strict" | "permissive")
    ) {
        kept.remove("template_resolution_mode");
    }
    serde_json::from_value(Value::Object(kept)).ok()
}

/// Whether a node's setting parses as its type.
type Check = fn(Option<&Value>) -> bool;

fn parses<T: DeserializeOwned>(value: Option<&Value>) -> bool {
    value.is_none_or(|v| serde_json::from_value::<T>(v.clone()).is_ok())
}

/// A node with a usable, unique id and a type, and those of its fields that parse.
fn node_of(node: &Value, ids: &mut HashSet<String>) -> Option<Value> {
    let fields = node.as_object()?;
    let id = fields.get("id")?.as_str().filter(|id| is_node_id(id))?;
    let node_type = fields.get("type")?.as_str()?;
    if !ids.insert(id.to_string()) {
        return None;
    }
    let mut kept = Map::new();
    kept.insert("id".into(), Value::from(id));
    kept.insert("type".into(), Value::from(node_type));
    let params = fields
        .get("params")
        .or(fields.get("parameters"))
        .filter(|p| p.is_object());
    if let Some(params) = params {
        kept.insert("params".into(), params.clone());
    }
    let settings = [
        ("batch", parses::<BatchConfig> as Check),
        ("loop", parses::<LoopConfig>),
        ("retry", parses::<RetryConfig>),
        ("sandbox", parses::<SandboxOverrides>),
    ];
    for (field, ok) in settings {
        if fields.contains_key(field) && ok(fields.get(field)) {
            kept.insert(field.into(), fields[field].clone());
        }
    }
    if let Some(purpose) = fields.get("purpose").filter(|p| p.is_string()) {
        kept.insert("purpose".into(), purpose.clone());
    }
    if fields.get("_routes_to_end") == Some(&Value::Bool(true)) {
        kept.insert("_routes_to_end".into(), Value::Bool(true));
    }
    Some(Value::Object(kept))
}

/// An edge between kept nodes, its ends read from `from`/`to` or their usual misnamings.
fn edge_of(edge: &Value, ids: &HashSet<String>) -> Option<Value> {
    let fields = edge.as_object()?;
    let end = |names: [&str; 3]| {
        names
            .iter()
            .find_map(|name| fields.get(*name).and_then(Value::as_str))
            .filter(|id| ids.contains(*id))
    };
    let from = end(["from", "from_node", "source"])?;
    let to = end(["to", "to_node", "target"])?;
    let mut kept = Map::new();
    kept.insert("from".into(), Value::from(from));
    kept.insert("to".into(), Value::from(to));
    if let Some(action) = fields.get("action").and_then(Value::as_str) {
        kept.insert("action".into(), Value::from(action));
    }
    Some(Value::Object(kept))
}

/// An input as written when it parses; else only what parses of it, so that references to it
/// still count as references to a declared input.
fn input_of(spec: &Value) -> Value {
    if parses::<InputSpec>(Some(spec)) {
        return spec.clone();
    }
    let mut kept = Map::new();
    if let Some(fields) = spec.as_object() {
        for field in ["required", "stdin"] {
            if let Some(flag) = fields.get(field).filter(|v| v.is_boolean()) {
                kept.insert(field.into(), flag.clone());
            }
        }
        if let Some(default) = fields.get("default") {
            kept.insert("default".into(), default.clone());
        }
    }
    Value::Object(kept)
}

fn output_of(spec: &Value) -> Value {
    if parses::<OutputSpec>(Some(spec)) {
        return spec.clone();
    }
    let mut kept = Map::new();
    if let Some(source) = spec.get("source").filter(|s| s.is_string()) {
        kept.insert("source".into(), source.clone());
    }
    Value::Object(kept)
}
