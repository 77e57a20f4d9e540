//! Runs a workflow: inputs in, nodes in edge order with `${...}` resolved against the shared
//! store, each node in its own sandboxed instance, declared outputs out.

use crate::capabilities::http::HttpPolicy;
use crate::dry::DryRun;
use crate::error::{category, NodeFailure};
use crate::limits::Limits;
use crate::mcp::{McpServersFile, McpSessions};
use crate::registry::{CacheUse, McpToolType, Plugin, Registry, Resolved};
use crate::sandbox::{Execution, Outcome, Sandbox};
use pflow_ir::template::{resolve_value, Scope, Template, Unresolved};
use pflow_ir::{
    BatchConfig, BatchErrorHandling, HttpOverrides, InputSpec, Node, SandboxOverrides,
    TemplateMode, Workflow,
};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a workflow could not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartError {
    #[error("{}", missing_inputs_message(.0))]
    MissingInputs(Vec<(String, Option<String>)>),
    #[error("Unknown input '{name}'.{}", did_you_mean(.suggestions, "Declared inputs", .declared))]
    UnknownInput {
        name: String,
        suggestions: Vec<String>,
        declared: Vec<String>,
    },
    #[error("Input '{name}' must be {expected}: {problem}")]
    BadInputValue {
        name: String,
        expected: String,
        problem: String,
    },
    #[error("Unknown node type: '{node_type}' (node '{node_id}').{}", did_you_mean(.suggestions, "Known types", .known))]
    UnknownNodeType {
        node_id: String,
        node_type: String,
        suggestions: Vec<String>,
        known: Vec<String>,
    },
}

fn missing_inputs_message(missing: &[(String, Option<String>)]) -> String {
    let list: Vec<String> = missing
        .iter()
        .map(|(name, description)| match description {
            Some(d) => format!("'{name}' ({d})"),
            None => format!("'{name}'"),
        })
        .collect();
    let example: Vec<String> = missing.iter().map(|(n, _)| format!("{n}=...")).collect();
    format!(
        "Missing required input(s): {}. Give them on the command line as {}.",
        list.join(", "),
        example.join(" ")
    )
}

fn did_you_mean(suggestions: &[String], what: &str, all: &[String]) -> String {
    let mut text = String::new();
    if !suggestions.is_empty() {
        text.push_str(&format!(" Did you mean: {}?", suggestions.join(", ")));
    }
    if all.is_empty() {
        text.push_str(&format!(" {what}: none."));
    } else {
        text.push_str(&format!(" {what}: {}.", all.join(", ")));
    }
    text
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Succeeded,
    Failed,
    Cancelled,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    pub id: String,
    #[serde(rename = "type")]
    pub node_type: String,
    pub status: Status,
    pub action: String,
    pub duration_ms: f64,
    /// Whether the node's component came from the compiled-component cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component_cache: Option<CacheUse>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<NodeFailure>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub status: Status,
    pub outputs: Map<String, Value>,
    pub nodes: Vec<NodeReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<NodeFailure>,
    pub duration_ms: f64,
    /// The shared store at the end of the run: inputs at the root, node outputs by node id.
    #[serde(skip)]
    pub store: Map<String, Value>,
}

/// Progress, for a display.
pub enum Event<'a> {
    NodeStarted { id: &'a str, node_type: &'a str },
    NodeFinished(&'a NodeReport),
}

pub struct Executor<'a> {
    pub sandbox: &'a Sandbox,
    pub registry: &'a Registry,
    /// Limits before the workflow's and the node's own `sandbox` overrides.
    pub limits: Limits,
    /// The settings' HTTP policy, before the workflow and the node narrow it.
    pub http_policy: HttpPolicy,
    /// The configured MCP servers and which of them workflows may call.
    pub mcp_servers: McpServersFile,
    pub mcp_allowed: Vec<String>,
    /// Set for a dry run (runtime validation): side effects are contained or skipped.
    pub dry: Option<Arc<DryRun>>,
}

impl Executor<'_> {
    /// Runs `workflow` with `given` inputs (strings from a command line are converted to the
    /// declared type). Errors that stop it from starting come back as `StartError`; everything
    /// that goes wrong once it runs is in the report.
    pub fn run(
        &self,
        workflow: &Workflow,
        given: Map<String, Value>,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<RunReport, StartError> {
        let started = Instant::now();
        let mut store = resolve_inputs(&workflow.inputs, given)?;
        let plugins = self.plugins_for(workflow)?;
        // Servers start on first use and are shut down when `mcp` is dropped, at the end of the run.
        let mcp = self.mcp_sessions(&plugins);
        let strict = workflow.template_resolution_mode == TemplateMode::Strict;
        let workflow_limits = self.limits.with(workflow.sandbox.as_ref());
        let workflow_http = self
            .http_policy
            .narrowed(http_overrides(workflow.sandbox.as_ref()));

        // Lookups by id and by (node, action), built once: a run is linear in its nodes.
        let nodes: HashMap<&str, &Node> =
            workflow.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        let mut edges: HashMap<(&str, &str), &str> = HashMap::new();
        for edge in &workflow.edges {
            // Of two edges from a node for the same action, the first wins.
            edges
                .entry((edge.from.as_str(), edge.action.as_str()))
                .or_insert(edge.to.as_str());
        }

        let mut reports = Vec::new();
        let mut failure = None;
        let mut status = Status::Succeeded;
        let mut current = Some(workflow.start());
        // Cycles are refused when the workflow is read, so each node runs at most once.
        while let Some(node) = current {
            if self.sandbox.is_cancelled() {
                status = Status::Cancelled;
                break;
            }
            on_event(Event::NodeStarted {
                id: &node.id,
                node_type: &node.type_name,
            });
            let node_started = Instant::now();
            let Resolved { plugin, mcp_tool } = plugins[node.id.as_str()];
            // Borrowed unless the MCP target has to be added: a large param is not copied.
            let params = match mcp_tool {
                Some(tool) => std::borrow::Cow::Owned(with_mcp_target(&node.params, tool)),
                None => std::borrow::Cow::Borrowed(&node.params),
            };
            let exec = Execution {
                node_id: &node.id,
                node_type: &node.type_name,
                limits: workflow_limits.with(node.sandbox.as_ref()),
                grants: plugin.grants,
                http_policy: Arc::new(
                    workflow_http.narrowed(http_overrides(node.sandbox.as_ref())),
                ),
                mcp: mcp.clone(),
                mcp_read_only: mcp_tool.is_some_and(|t| t.annotations["readOnlyHint"] == true),
                dry: self.dry.clone(),
            };
            let (result, cache) = match &node.batch {
                None => self.run_once(plugin, &exec, &params, &store, strict),
                Some(batch) => self.run_batch(plugin, &exec, &params, batch, &store, strict),
            };
            let (outputs, action, error) = match result {
                Ok(outcome) => (outcome.outputs, outcome.action, None),
                Err(failure) => {
                    let written = Map::from_iter([("error".to_string(), json!(failure.message))]);
                    (written, "error".to_string(), Some(failure))
                }
            };
            write_outputs(&mut store, &node.id, outputs, workflow.enable_namespacing);
            let report = NodeReport {
                id: node.id.clone(),
                node_type: node.type_name.clone(),
                status: if error.is_some() {
                    Status::Failed
                } else {
                    Status::Succeeded
                },
                action: action.clone(),
                duration_ms: millis(node_started.elapsed()),
                component_cache: cache,
                error: error.clone(),
            };
            on_event(Event::NodeFinished(&report));
            reports.push(report);

            current = edges
                .get(&(node.id.as_str(), action.as_str()))
                .and_then(|id| nodes.get(id).copied());
            if current.is_none() && action == "error" {
                // No edge handles the error: the run fails with it.
                status = match &error {
                    Some(e) if e.category == category::CANCELLED => Status::Cancelled,
                    _ => Status::Failed,
                };
                failure = error.or_else(|| {
                    Some(
                        NodeFailure::new(
                            "node",
                            "error_action",
                            "The node returned the action 'error' and no edge handles it.",
                        )
                        .at(&node.id, &node.type_name),
                    )
                });
            }
        }

        let mut outputs = Map::new();
        if status == Status::Succeeded {
            match collect_outputs(workflow, &store, strict) {
                Ok(collected) => outputs = collected,
                Err(e) => {
                    status = Status::Failed;
                    failure = Some(e);
                }
            }
        }
        Ok(RunReport {
            status,
            outputs,
            nodes: reports,
            error: failure,
            duration_ms: millis(started.elapsed()),
            store,
        })
    }

    /// The plugin of every node, or the first node whose type no plugin provides.
    fn plugins_for<'w>(
        &self,
        workflow: &'w Workflow,
    ) -> Result<std::collections::HashMap<&'w str, Resolved<'_>>, StartError> {
        workflow
            .nodes
            .iter()
            .map(|node| match self.registry.resolve(&node.type_name) {
                Some(resolved) => Ok((node.id.as_str(), resolved)),
                None => Err(StartError::UnknownNodeType {
                    node_id: node.id.clone(),
                    node_type: node.type_name.clone(),
                    suggestions: pflow_ir::closest(&node.type_name, self.registry.types())
                        .into_iter()
                        .map(str::to_string)
                        .collect(),
                    known: self.registry.types().map(str::to_string).collect(),
                }),
            })
            .collect()
    }

    /// Sessions for the run when it uses MCP tools (or the plain `mcp` type); none otherwise.
    fn mcp_sessions(
        &self,
        plugins: &std::collections::HashMap<&str, Resolved<'_>>,
    ) -> Option<Arc<McpSessions>> {
        let uses_mcp = plugins
            .values()
            .any(|r| r.mcp_tool.is_some() || r.plugin.spec.name == "mcp");
        if !uses_mcp {
            return None;
        }
        match McpSessions::new(
            self.mcp_servers.servers.clone(),
            self.mcp_allowed.clone(),
            self.http_policy.clone(),
        ) {
            Ok(sessions) => Some(Arc::new(sessions)),
            Err(e) => {
                tracing::warn!("{e}");
                None
            }
        }
    }

    fn run_once(
        &self,
        plugin: &Plugin,
        exec: &Execution<'_>,
        params: &Map<String, Value>,
        scope: &dyn Scope,
        strict: bool,
    ) -> (Result<Outcome, NodeFailure>, Option<CacheUse>) {
        let (pre, cache) = match plugin.prepared(self.sandbox) {
            Ok(prepared) => prepared,
            Err(e) => return (Err(e.at(exec.node_id, exec.node_type)), None),
        };
        let result = resolve_params(params, scope, strict)
            .map_err(|e| e.at(exec.node_id, exec.node_type))
            .and_then(|params| self.sandbox.run(pre, exec, &params));
        (result, Some(cache))
    }

    /// pflow's `batch`: the node once per item, with the item as `${item}` (or the `as` name)
    /// and its position as `${__index__}`. Items run one after another.
    fn run_batch(
        &self,
        plugin: &Plugin,
        exec: &Execution<'_>,
        params: &Map<String, Value>,
        batch: &BatchConfig,
        store: &Map<String, Value>,
        strict: bool,
    ) -> (Result<Outcome, NodeFailure>, Option<CacheUse>) {
        let items = match batch_items(batch, store) {
            Ok(items) => items,
            Err(failure) => return (Err(failure.at(exec.node_id, exec.node_type)), None),
        };
        let mut results = Vec::with_capacity(items.len());
        let mut errors = Vec::new();
        let mut cache = None;
        for (index, item) in items.iter().enumerate() {
            let scope = BatchScope {
                store,
                alias: &batch.alias,
                item,
                index: json!(index),
            };
            let mut attempt = 0;
            let result = loop {
                attempt += 1;
                let (result, used) = self.run_once(plugin, exec, params, &scope, strict);
                cache = cache.or(used);
                if result.is_ok()
                    || attempt >= batch.max_retries.max(1)
                    || self.sandbox.is_cancelled()
                {
                    break result;
                }
                if batch.retry_wait > 0.0 {
                    std::thread::sleep(Duration::from_secs_f64(batch.retry_wait.min(60.0)));
                }
            };
            match result {
                Ok(outcome) => results.push(Value::Object(outcome.outputs)),
                Err(failure) => {
                    if batch.error_handling == BatchErrorHandling::FailFast {
                        let message = format!("Batch item {index} failed: {}", failure.message);
                        return (Err(NodeFailure { message, ..failure }), cache);
                    }
                    results.push(Value::Null);
                    errors.push(json!({"index": index, "item": item, "error": failure.message}));
                }
            }
        }
        let outputs = Map::from_iter([
            ("count".to_string(), json!(items.len())),
            (
                "success_count".to_string(),
                json!(items.len() - errors.len()),
            ),
            ("error_count".to_string(), json!(errors.len())),
            ("results".to_string(), Value::Array(results)),
            ("errors".to_string(), Value::Array(errors)),
        ]);
        let outcome = Outcome {
            outputs,
            action: pflow_ir::default_action(),
        };
        (Ok(outcome), cache)
    }
}

/// The params of an MCP tool node, with the server, the tool and its argument names added for
/// the `mcp` plugin.
fn with_mcp_target(params: &Map<String, Value>, tool: &McpToolType) -> Map<String, Value> {
    let mut params = params.clone();
    params.insert("__mcp_server".to_string(), json!(tool.server));
    params.insert("__mcp_tool".to_string(), json!(tool.tool));
    let names: Vec<&str> = tool.spec.params.iter().map(|p| p.name.as_str()).collect();
    params.insert("__mcp_arguments".to_string(), json!(names));
    params
}

fn http_overrides(sandbox: Option<&SandboxOverrides>) -> Option<&HttpOverrides> {
    sandbox.and_then(|s| s.http.as_ref())
}

struct BatchScope<'a> {
    store: &'a Map<String, Value>,
    alias: &'a str,
    item: &'a Value,
    index: Value,
}

impl Scope for BatchScope<'_> {
    fn lookup(&self, name: &str) -> Option<&Value> {
        if name == self.alias {
            Some(self.item)
        } else if name == "__index__" {
            Some(&self.index)
        } else {
            self.store.get(name)
        }
    }
}

fn resolve_params(
    params: &Map<String, Value>,
    scope: &dyn Scope,
    strict: bool,
) -> Result<Map<String, Value>, NodeFailure> {
    params
        .iter()
        .map(|(key, value)| {
            let resolved = resolve_value(value, scope, strict)
                .map_err(|e| template_failure(e, "template_error", &format!("In param '{key}'")))?;
            Ok((key.clone(), resolved))
        })
        .collect()
}

/// The list a batch runs over: an array, or text holding a JSON array (a command's stdout).
fn batch_items(batch: &BatchConfig, store: &Map<String, Value>) -> Result<Vec<Value>, NodeFailure> {
    let value = resolve_value(&batch.items, store, true)
        .map_err(|e| template_failure(e, "template_error", "In batch.items"))?;
    if let Value::String(text) = &value {
        if let Ok(items) = serde_json::from_str::<Vec<Value>>(text) {
            return Ok(items);
        }
    }
    match value {
        Value::Array(items) => Ok(items),
        other => Err(NodeFailure {
            fixable: true,
            ..NodeFailure::new(
                "template",
                "batch_items",
                format!("batch.items must resolve to a list, got: {other}"),
            )
        }),
    }
}

/// A template that did not resolve, as a fixable failure saying where it was.
fn template_failure(unresolved: Unresolved, category: &str, place: &str) -> NodeFailure {
    NodeFailure {
        fixable: true,
        attempted: vec![unresolved.template],
        available: unresolved.available,
        ..NodeFailure::new(
            "template",
            category,
            format!("{place}: {}", unresolved.message),
        )
    }
}

fn write_outputs(
    store: &mut Map<String, Value>,
    node_id: &str,
    outputs: Map<String, Value>,
    namespaced: bool,
) {
    if namespaced {
        store.insert(node_id.to_string(), Value::Object(outputs));
    } else {
        store.extend(outputs);
    }
}

/// Declared inputs from what was given, defaults and the declared types.
fn resolve_inputs(
    declared: &indexmap::IndexMap<String, InputSpec>,
    given: Map<String, Value>,
) -> Result<Map<String, Value>, StartError> {
    for name in given.keys() {
        if !declared.contains_key(name) {
            let names = declared.keys().map(String::as_str);
            return Err(StartError::UnknownInput {
                name: name.clone(),
                suggestions: pflow_ir::closest(name, names)
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
                declared: declared.keys().cloned().collect(),
            });
        }
    }
    let mut given = given;
    let mut store = Map::new();
    let mut missing = Vec::new();
    for (name, spec) in declared {
        let value = match given.remove(name) {
            Some(value) => convert_input(name, spec, value)?,
            None => match &spec.default {
                Some(default) => default.clone(),
                None if spec.required => {
                    missing.push((name.clone(), spec.description.clone()));
                    continue;
                }
                None => Value::Null,
            },
        };
        store.insert(name.clone(), value);
    }
    if missing.is_empty() {
        Ok(store)
    } else {
        Err(StartError::MissingInputs(missing))
    }
}

/// Text from a command line becomes the declared type; values that already have a JSON type
/// are checked against it.
fn convert_input(name: &str, spec: &InputSpec, value: Value) -> Result<Value, StartError> {
    let type_name = spec.type_name.as_deref().unwrap_or("string");
    let bad = |expected: &str, problem: String| StartError::BadInputValue {
        name: name.to_string(),
        expected: expected.to_string(),
        problem,
    };
    let text = match value {
        Value::String(text) => text,
        other => return Ok(other),
    };
    match type_name {
        "string" | "str" => Ok(Value::String(text)),
        "integer" | "int" => text
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| bad("an integer", format!("'{text}' is not one"))),
        "number" | "float" => text
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
            .ok_or_else(|| bad("a number", format!("'{text}' is not one"))),
        "boolean" | "bool" => match text.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Ok(Value::Bool(true)),
            "false" | "0" | "no" => Ok(Value::Bool(false)),
            _ => Err(bad("true or false", format!("got '{text}'"))),
        },
        "object" | "dict" | "array" | "list" => {
            let want_object = matches!(type_name, "object" | "dict");
            let expected = if want_object {
                "a JSON object"
            } else {
                "a JSON array"
            };
            match serde_json::from_str::<Value>(&text) {
                Ok(v @ Value::Object(_)) if want_object => Ok(v),
                Ok(v @ Value::Array(_)) if !want_object => Ok(v),
                Ok(_) => Err(bad(expected, format!("got '{text}'"))),
                Err(e) => Err(bad(expected, e.to_string())),
            }
        }
        _ => Ok(Value::String(text)),
    }
}

fn collect_outputs(
    workflow: &Workflow,
    store: &Map<String, Value>,
    strict: bool,
) -> Result<Map<String, Value>, NodeFailure> {
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

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
