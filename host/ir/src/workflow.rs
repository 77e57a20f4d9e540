//! pflow's JSON workflow IR, parsed with errors that name the line, column and JSON path.

use crate::template::{too_deeply_nested, MAX_NESTING};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// A workflow as pflow's JSON IR describes it, plus the optional `sandbox` limits of this host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    /// pflow's loader defaults a missing version (LLM-written workflows often leave it out).
    #[serde(default = "default_ir_version")]
    pub ir_version: String,
    #[serde(default)]
    pub inputs: IndexMap<String, InputSpec>,
    #[serde(default)]
    pub outputs: IndexMap<String, OutputSpec>,
    pub nodes: Vec<Node>,
    #[serde(default)]
    pub edges: Vec<Edge>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_node: Option<String>,
    #[serde(default = "yes")]
    pub enable_namespacing: bool,
    #[serde(default)]
    pub template_resolution_mode: TemplateMode,
    /// Sandbox limits for every node of this workflow (an extension of pflow's IR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxOverrides>,
    /// pflow's provider prompt-cache chunks (`## Cache`); read and kept, not used here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<Value>,
    /// pflow's legacy proxy mappings; read and kept, not used here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mappings: Option<Value>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default = "yes")]
    pub required: bool,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(default)]
    pub stdin: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
    /// A template such as `${node.field}`; without one the output is read from the store's
    /// root under its own name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The one output that text mode prints to stdout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stdout: bool,
    /// The `.pflow.md` line of `source`, for errors.
    #[serde(
        default,
        rename = "_source_line",
        skip_serializing_if = "Option::is_none"
    )]
    pub source_line: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    pub id: String,
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(default, alias = "parameters")]
    pub params: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchConfig>,
    /// Repeat the node while (or until) its own output says so.
    #[serde(default, rename = "loop", skip_serializing_if = "Option::is_none")]
    pub loop_config: Option<LoopConfig>,
    /// Re-attempts after a transient failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryConfig>,
    /// pflow's memo cache opt-in or opt-out; read and kept (this host caches by checkpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<bool>,
    /// pflow's provider prompt-cache fields; read and kept, not used here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prewarm: Option<bool>,
    /// pflow's human approval gate (`required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// Sandbox limits for this node alone (an extension of pflow's IR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxOverrides>,
    /// The `### id` line in the `.pflow.md` it came from, for errors.
    #[serde(
        default,
        rename = "_source_line",
        skip_serializing_if = "Option::is_none"
    )]
    pub source_line: Option<usize>,
    /// The first line of each fenced param's content in the `.pflow.md`.
    #[serde(
        default,
        rename = "_source_lines",
        skip_serializing_if = "Option::is_none"
    )]
    pub source_lines: Option<Map<String, Value>>,
    #[serde(
        default,
        rename = "_source_files",
        skip_serializing_if = "Option::is_none"
    )]
    pub source_files: Option<Map<String, Value>>,
    /// The author wrote `- next: end` (a success route with no edge).
    #[serde(
        default,
        rename = "_routes_to_end",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub routes_to_end: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    pub from: String,
    pub to: String,
    /// None for pflow's document-order edges, which never form a loop; an edge with an action
    /// may go back to an earlier node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

impl Edge {
    /// The action that takes this edge (`default` when none is written).
    pub fn action(&self) -> &str {
        self.action.as_deref().unwrap_or("default")
    }
}

/// pflow's `loop:`: the node runs, then its condition over its own latest output decides
/// whether it runs again (a do-while), at most `max_iterations` times.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopConfig {
    /// `${node.field}`: run again while it is truthy.
    #[serde(default, rename = "while", skip_serializing_if = "Option::is_none")]
    pub while_condition: Option<String>,
    /// `${node.field}`: run again until it is truthy.
    #[serde(default, rename = "until", skip_serializing_if = "Option::is_none")]
    pub until_condition: Option<String>,
    /// Body input name to `${node.field}`: overrides that input from the second iteration on.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub carry: IndexMap<String, String>,
    /// A positive integer or a `${template}` resolving to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<Value>,
}

/// pflow's `retry:`: `max` total attempts, `wait` seconds apart, fixed or doubling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    #[serde(default = "default_retry_max")]
    pub max: u32,
    #[serde(default)]
    pub wait: f64,
    #[serde(default)]
    pub backoff: Backoff,
}

fn default_retry_max() -> u32 {
    1
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backoff {
    #[default]
    Fixed,
    Exponential,
}

impl RetryConfig {
    /// The wait before attempt `attempt + 1` (attempts count from 1): exponential waits double
    /// and stop at 60 s, as pflow's do.
    pub fn wait_after(&self, attempt: u32) -> std::time::Duration {
        let seconds = match self.backoff {
            Backoff::Fixed => self.wait,
            Backoff::Exponential => {
                (self.wait * 2f64.powi(attempt.saturating_sub(1).min(30) as i32)).min(60.0)
            }
        };
        std::time::Duration::from_secs_f64(seconds.max(0.0))
    }
}

pub fn default_action() -> String {
    "default".to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchConfig {
    pub items: Value,
    #[serde(default = "default_item_alias", rename = "as")]
    pub alias: String,
    #[serde(default)]
    pub error_handling: BatchErrorHandling,
    #[serde(default)]
    pub parallel: bool,
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent: u32,
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    #[serde(default)]
    pub retry_wait: f64,
}

fn default_item_alias() -> String {
    "item".to_string()
}
fn default_max_concurrent() -> u32 {
    10
}
fn default_max_retries() -> u32 {
    1
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchErrorHandling {
    #[default]
    FailFast,
    Continue,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateMode {
    #[default]
    Strict,
    Permissive,
}

/// Limits that override the host's defaults for a workflow or one node. Absent fields keep the
/// value from the level above.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxOverrides {
    /// WebAssembly fuel (roughly, instructions) one execution may burn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    /// Linear-memory cap in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// Wall-clock limit of one execution, host calls (such as a shell command) included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
    /// Cap on the JSON a node returns, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_mb: Option<f64>,
    /// Narrows the HTTP policy of the settings; it can never widen it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpOverrides>,
    /// Widens where the file nodes may read and write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<FileOverrides>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileOverrides {
    /// Directories (relative to the working directory, or absolute) whose trees the file nodes
    /// may use, besides the working directory and the settings' `files.allowed_paths`.
    #[serde(default)]
    pub allowed_paths: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpOverrides {
    /// Hosts (`api.example.com`, `*.example.com`) this workflow or node may reach, on top of
    /// those the settings allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_hosts: Option<Vec<String>>,
}

/// Types pflow accepts for inputs, aliases included.
pub const INPUT_TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "str", "int", "float", "bool",
    "dict", "list",
];

/// Why a workflow document could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("invalid workflow at {path} (line {line}, column {column}): {message}")]
    Shape {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("invalid workflow: {}", .0.join("; "))]
    Structure(Vec<String>),
    #[error("invalid .pflow.md: {0}")]
    Markdown(Box<crate::markdown::MarkdownError>),
}

impl ParseError {
    /// The same error, its path prefixed with where the IR sits in a wrapper.
    fn within(self, prefix: &str) -> ParseError {
        match self {
            ParseError::Shape {
                path,
                line,
                column,
                message,
            } => ParseError::Shape {
                path: if path == "the top level" {
                    prefix.to_string()
                } else {
                    format!("{prefix}.{path}")
                },
                line,
                column,
                message,
            },
            other => other,
        }
    }
}

fn default_ir_version() -> String {
    "0.1.0".to_string()
}

impl Workflow {
    /// Parses and checks the structure a run depends on: non-empty unique node ids, edges and
    /// `start_node` that name existing nodes, a well-formed `ir_version`, known input types.
    pub fn from_json(text: &str) -> Result<Workflow, ParseError> {
        if let Some(duplicate) = crate::find_duplicate_key(text) {
            return Err(ParseError::Syntax {
                line: duplicate.line,
                column: duplicate.column,
                message: format!(
                    "duplicate key '{}': an object may name a key only once",
                    duplicate.key
                ),
            });
        }
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let workflow: Workflow = serde_path_to_error::deserialize(&mut deserializer)
            .map_err(|e| shape_error(e.path().to_string(), e.into_inner()))?;
        deserializer
            .end()
            .map_err(|e| shape_error(String::new(), e))?;
        let problems = workflow.structural_problems();
        if problems.is_empty() {
            Ok(workflow)
        } else {
            Err(ParseError::Structure(problems))
        }
    }

    /// Reads either form a user may hand over: a `.pflow.md` document, JSON IR, or pflow's
    /// saved-workflow wrapper `{name, description, ir, ...}`.
    pub fn from_text(text: &str) -> Result<Workflow, ParseError> {
        if crate::markdown::looks_like_markdown(text) {
            return crate::markdown::workflow_from_markdown(text);
        }
        Workflow::from_json_document(text)
    }

    /// JSON IR, or pflow's saved-workflow wrapper around it.
    pub fn from_json_document(text: &str) -> Result<Workflow, ParseError> {
        Workflow::from_json(text).or_else(|error| {
            // Only a document that is not plain IR pays for the second parse.
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(mut wrapper))
                    if !wrapper.contains_key("nodes")
                        && wrapper.get("ir").is_some_and(Value::is_object) =>
                {
                    Workflow::from_value(wrapper.remove("ir").unwrap_or_default())
                        .map_err(|e| e.within("ir"))
                }
                _ => Err(error),
            }
        })
    }

    /// The IR as an already-parsed JSON value (its errors carry paths but no positions).
    pub fn from_value(value: Value) -> Result<Workflow, ParseError> {
        let workflow: Workflow = serde_path_to_error::deserialize(value)
            .map_err(|e| shape_error(e.path().to_string(), e.into_inner()))?;
        let problems = workflow.structural_problems();
        if problems.is_empty() {
            Ok(workflow)
        } else {
            Err(ParseError::Structure(problems))
        }
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The node the run starts at: `start_node`, or the first node.
    pub fn start(&self) -> &Node {
        self.start_node
            .as_deref()
            .and_then(|id| self.node(id))
            .unwrap_or(&self.nodes[0])
    }

    /// The groups of nodes that lie on an unintended cycle of edges, each in node order: edges
    /// without an action and edges going forward (in node order). Tarjan's strongly connected
    /// components, iteratively: linear in nodes and edges, whatever the depth.
    pub fn cycles(&self) -> Vec<Vec<&str>> {
        let index: std::collections::HashMap<&str, usize> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.as_str(), i))
            .collect();
        let count = self.nodes.len();
        let mut successors = vec![Vec::new(); count];
        let mut self_loop = vec![false; count];
        for edge in &self.edges {
            if let (Some(&from), Some(&to)) =
                (index.get(edge.from.as_str()), index.get(edge.to.as_str()))
            {
                // An edge with an action that goes back is a loop the author asked for
                // (bounded at run time by the visit cap), as in pflow.
                if edge.action.is_some() && to <= from {
                    continue;
                }
                successors[from].push(to);
                self_loop[from] |= from == to;
            }
        }
        let mut order = vec![usize::MAX; count];
        let mut low = vec![0; count];
        let mut on_stack = vec![false; count];
        let mut stack = Vec::new();
        let mut next = 0;
        let mut groups = Vec::new();
        for root in 0..count {
            if order[root] != usize::MAX {
                continue;
            }
            let mut calls = vec![(root, 0usize)];
            order[root] = next;
            low[root] = next;
            next += 1;
            stack.push(root);
            on_stack[root] = true;
            while let Some(&mut (node, ref mut child)) = calls.last_mut() {
                if let Some(&to) = successors[node].get(*child) {
                    *child += 1;
                    if order[to] == usize::MAX {
                        order[to] = next;
                        low[to] = next;
                        next += 1;
                        stack.push(to);
                        on_stack[to] = true;
                        calls.push((to, 0));
                    } else if on_stack[to] {
                        low[node] = low[node].min(order[to]);
                    }
                    continue;
                }
                calls.pop();
                if let Some(&(caller, _)) = calls.last() {
                    low[caller] = low[caller].min(low[node]);
                }
                if low[node] == order[node] {
                    let mut group = Vec::new();
                    while let Some(member) = stack.pop() {
                        on_stack[member] = false;
                        group.push(member);
                        if member == node {
                            break;
                        }
                    }
                    if group.len() > 1 || self_loop[node] {
                        group.sort_unstable();
                        groups.push(group);
                    }
                }
            }
        }
        groups.sort();
        groups
            .into_iter()
            .map(|group| {
                group
                    .into_iter()
                    .map(|i| self.nodes[i].id.as_str())
                    .collect()
            })
            .collect()
    }

    fn structural_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !is_version(&self.ir_version) {
            problems.push(format!(
                "ir_version '{}' must look like MAJOR.MINOR.PATCH, e.g. 0.1.0",
                self.ir_version
            ));
        }
        if self.nodes.is_empty() {
            problems.push("a workflow needs at least one node".to_string());
        }
        let mut seen = HashSet::new();
        for (i, node) in self.nodes.iter().enumerate() {
            if !is_node_id(&node.id) {
                problems.push(format!(
                    "nodes[{i}].id '{}' may only contain letters, digits, '_' and '-'",
                    node.id
                ));
            }
            if !seen.insert(node.id.as_str()) {
                problems.push(format!("nodes[{i}].id '{}' is used twice", node.id));
            }
        }
        let known = |id: &str| seen.contains(id);
        for (i, edge) in self.edges.iter().enumerate() {
            for (end, id) in [("from", &edge.from), ("to", &edge.to)] {
                if !known(id) {
                    problems.push(format!("edges[{i}].{end} names unknown node '{id}'"));
                }
            }
        }
        if let Some(start) = &self.start_node {
            if !known(start) {
                problems.push(format!("start_node names unknown node '{start}'"));
            }
        }
        for cycle in self.cycles() {
            problems.push(cycle_message(&cycle));
        }
        for (i, node) in self.nodes.iter().enumerate() {
            let params = node
                .params
                .iter()
                .map(|(key, value)| (value, format!("nodes[{i}].params.{key}")));
            let batch_items = node
                .batch
                .iter()
                .map(|batch| (&batch.items, format!("nodes[{i}].batch.items")));
            for (value, path) in params.chain(batch_items) {
                problems.extend(
                    too_deeply_nested(value, &path)
                        .into_iter()
                        .map(|(path, depth)| nesting_message(&path, depth)),
                );
            }
        }
        for (name, output) in &self.outputs {
            if let Some(source) = &output.source {
                let depth = crate::template::nesting_depth(source);
                if depth > MAX_NESTING {
                    problems.push(nesting_message(&format!("outputs.{name}.source"), depth));
                }
            }
        }
        for (name, input) in &self.inputs {
            if let Some(type_name) = &input.type_name {
                if !INPUT_TYPES.contains(&type_name.as_str()) {
                    problems.push(format!(
                        "inputs.{name}.type '{type_name}' is not one of: {}",
                        INPUT_TYPES.join(", ")
                    ));
                }
            }
        }
        let stdin_inputs: Vec<&str> = self
            .inputs
            .iter()
            .filter(|(_, i)| i.stdin)
            .map(|(n, _)| n.as_str())
            .collect();
        if stdin_inputs.len() > 1 {
            problems.push(format!(
                "only one input may set stdin: true, found: {}",
                stdin_inputs.join(", ")
            ));
        }
        problems
    }
}

/// pflow's words for a cycle, shared with the validator.
pub fn cycle_message(nodes: &[&str]) -> String {
    format!(
        "Data flow error: Circular dependency detected involving nodes: {}",
        nodes.join(", ")
    )
}

/// The error for a string whose templates nest too deeply, shared with the validator.
pub fn nesting_message(path: &str, depth: usize) -> String {
    format!("{path}: templates nested {depth} levels deep; the limit is {MAX_NESTING}")
}

fn shape_error(path: String, error: serde_json::Error) -> ParseError {
    use serde_json::error::Category;
    let (line, column) = (error.line(), error.column());
    // serde_json appends " at line L column C"; we say it ourselves.
    let mut message = error.to_string();
    if let Some(cut) = message.rfind(" at line ") {
        message.truncate(cut);
    }
    match error.classify() {
        Category::Data => ParseError::Shape {
            path: if path.is_empty() || path == "." {
                "the top level".to_string()
            } else {
                path
            },
            line,
            column,
            message: explain_shape(&message),
        },
        Category::Syntax | Category::Eof | Category::Io => ParseError::Syntax {
            line,
            column,
            message,
        },
    }
}

/// Adds the fix for mistakes LLMs make often to serde's message.
fn explain_shape(message: &str) -> String {
    if message.contains("`from_node`") || message.contains("`to_node`") {
        return format!("{message} (edges use `from` and `to`)");
    }
    message.to_string()
}

/// `MAJOR.MINOR.PATCH`, all digits.
pub fn is_version(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

pub fn is_node_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
