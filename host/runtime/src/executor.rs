//! Runs a workflow: inputs in, nodes in edge order with `${...}` resolved against the shared
//! store, each node in its own sandboxed instance, declared outputs out.

use crate::attempt::{self, ComponentRun, Layered, RunOnce};
use crate::batch::{self, Batch};
use crate::cancel::CancelToken;
use crate::capabilities::fs::FilePolicy;
use crate::capabilities::http::HttpPolicy;
use crate::capabilities::llm::LlmAccess;
use crate::capabilities::CapabilityContexts;
use crate::dry::DryRun;
use crate::error::{category, NodeFailure};
use crate::limits::Limits;
use crate::mcp::{McpServersFile, McpSessions};
use crate::outputs;
use crate::registry::{CacheUse, McpToolType, NodeImpl, Plugin, Registry};
use crate::sandbox::{Execution, Outcome, Sandbox};
use crate::subworkflow::{self, Nesting};
use pflow_ir::template::{Scope, Template};
use pflow_ir::{
    BatchConfig, HttpOverrides, InputSpec, LoopConfig, Node, SandboxOverrides, TemplateMode,
    Workflow,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Taken from an earlier run's checkpoint instead of run again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
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
    /// What went wrong without failing the run: a failure an `on-error` edge handled, batch
    /// items that failed under `continue`, a loop stopped by its cap.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub duration_ms: f64,
    /// The state at the end: the shared store (inputs at the root, node outputs by node id),
    /// what completed, and where a resume would go on.
    #[serde(skip)]
    pub state: RunState,
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
    /// This run's cancellation (a fresh token for each run unless the caller shares one).
    pub cancel: CancelToken,
    /// How often one node may run in a run (backward edges and loops), as pflow's
    /// `PFLOW_MAX_NODE_VISITS`.
    pub max_node_visits: u32,
    /// Where file nodes may read and write, before a workflow's `sandbox.files` widens it.
    pub file_policy: FilePolicy,
    /// The LLM that `llm` nodes reach; None when the run may not call one.
    pub llm: Option<Arc<LlmAccess>>,
    /// Where this run sits among nested workflows.
    pub nesting: Nesting,
}

/// A nested workflow's execution: a child run of the same host.
struct ChildRun<'e, 'a> {
    executor: &'e Executor<'a>,
}

impl RunOnce for ChildRun<'_, '_> {
    fn declares_inputs(&self) -> bool {
        true
    }

    fn run(
        &self,
        exec: &Execution<'_>,
        params: &Map<String, Value>,
    ) -> (Result<Outcome, NodeFailure>, Option<CacheUse>) {
        let result = self
            .executor
            .run_child(params)
            .map_err(|failure| failure.at(exec.node_id, exec.node_type));
        (result, None)
    }
}

/// pflow's default cap on visits of one node, and on a loop's iterations.
pub const MAX_NODE_VISITS: u32 = 100;

/// pflow's `__execution__` record: which nodes finished, with which action, and the hash of
/// what each one ran with. A resumed run skips a completed node whose hash is unchanged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionRecord {
    pub completed_nodes: Vec<String>,
    pub node_actions: BTreeMap<String, String>,
    pub node_hashes: BTreeMap<String, String>,
    pub failed_node: Option<String>,
}

impl ExecutionRecord {
    /// Whether `node_id` completed having run with exactly `hash`.
    fn completed_with(&self, node_id: &str, hash: &str) -> bool {
        self.node_hashes.get(node_id).map(String::as_str) == Some(hash)
            && self.completed_nodes.iter().any(|n| n == node_id)
    }
}

/// Everything a run needs to go on from where it is: written as the checkpoint after each node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunState {
    /// The shared store: inputs at the root, node outputs by node id.
    pub store: Map<String, Value>,
    #[serde(rename = "__execution__")]
    pub execution: ExecutionRecord,
    /// The node to run next; None when the run is over.
    pub next_node: Option<String>,
}

/// What a run looks up once: each node's plugin, the edges, the MCP sessions, the policies.
struct RunContext<'w, 'r> {
    plugins: HashMap<&'w str, NodeImpl<'r>>,
    nodes: HashMap<&'w str, &'w Node>,
    edges: HashMap<(&'w str, &'w str), &'w str>,
    /// Servers start on first use and are shut down when this is dropped, at the end of the run.
    mcp: Option<Arc<McpSessions>>,
    strict: bool,
    namespaced: bool,
    limits: Limits,
    http: HttpPolicy,
    files: Arc<FilePolicy>,
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
        let state = self.start(workflow, given)?;
        self.run_from(workflow, state, None, on_event, &mut |_, _| {})
    }

    /// The state of a run that has not begun: the inputs resolved, the start node next.
    pub fn start(
        &self,
        workflow: &Workflow,
        given: Map<String, Value>,
    ) -> Result<RunState, StartError> {
        Ok(RunState {
            store: resolve_inputs(&workflow.inputs, given)?,
            execution: ExecutionRecord::default(),
            next_node: Some(workflow.start().id.clone()),
        })
    }

    /// Runs from `state` until the run ends, is cancelled, or fails. A node that `earlier`
    /// completed with the same hash (type, component, resolved params) is not run again: its
    /// outputs are taken from `earlier`. `on_step` sees the state after every node, with that
    /// node's report (to write the checkpoint).
    pub fn run_from(
        &self,
        workflow: &Workflow,
        mut state: RunState,
        earlier: Option<&RunState>,
        on_event: &mut dyn FnMut(Event<'_>),
        on_step: &mut dyn FnMut(&RunState, &NodeReport),
    ) -> Result<RunReport, StartError> {
        let started = Instant::now();
        let context = self.context(workflow)?;
        let mut reports = Vec::new();
        let mut failure = None;
        let mut status = Status::Succeeded;
        let mut warnings = Vec::new();
        let mut visits: HashMap<&str, u32> = HashMap::new();
        while let Some(node) = state
            .next_node
            .as_deref()
            .and_then(|id| context.nodes.get(id).copied())
        {
            if self.cancel.is_cancelled() {
                status = Status::Cancelled;
                break;
            }
            let count = visits.entry(node.id.as_str()).or_default();
            *count += 1;
            if *count > self.max_node_visits {
                status = Status::Failed;
                failure = Some(
                    NodeFailure {
                        fixable: true,
                        ..NodeFailure::new(
                            "host",
                            "visit_limit",
                            format!(
                                "Node '{}' was reached more than {} times: a routing loop that does not end. Make the loop's exit reachable, use `loop:` with max_iterations, or raise PFLOW_MAX_NODE_VISITS.",
                                node.id, self.max_node_visits
                            ),
                        )
                    }
                    .at(&node.id, &node.type_name),
                );
                break;
            }
            let (report, mut node_warnings) =
                self.step(&context, node, &mut state, earlier, on_event);
            on_step(&state, &report);
            if report.action == "error" {
                match (&state.next_node, &report.error) {
                    (Some(handler), Some(error)) => node_warnings.push(format!(
                        "Node '{}' failed — on-error → '{handler}': {}",
                        node.id, error.message
                    )),
                    (Some(_), None) => {}
                    (None, _) => {
                        // No edge handles the error: the run fails with it.
                        status = match &report.error {
                            Some(e) if e.category == category::CANCELLED => Status::Cancelled,
                            _ => Status::Failed,
                        };
                        failure = report.error.clone().or_else(|| {
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
            }
            warnings.append(&mut node_warnings);
            reports.push(report);
        }

        let mut outputs = Map::new();
        if status == Status::Succeeded {
            match outputs::collect(workflow, &state.store, context.strict) {
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
            warnings,
            duration_ms: millis(started.elapsed()),
            state,
        })
    }

    fn context<'w>(&self, workflow: &'w Workflow) -> Result<RunContext<'w, '_>, StartError> {
        let plugins = self.plugins_for(workflow)?;
        let mcp = self.mcp_sessions(&plugins);
        // Lookups by id and by (node, action), built once: a run is linear in its nodes.
        let nodes = workflow.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        let mut edges = HashMap::new();
        for edge in &workflow.edges {
            // Of two edges from a node for the same action, the first wins.
            edges
                .entry((edge.from.as_str(), edge.action()))
                .or_insert(edge.to.as_str());
        }
        Ok(RunContext {
            plugins,
            nodes,
            edges,
            mcp,
            strict: workflow.template_resolution_mode == TemplateMode::Strict,
            namespaced: workflow.enable_namespacing,
            limits: self.limits.with(workflow.sandbox.as_ref()),
            http: self
                .http_policy
                .narrowed(http_overrides(workflow.sandbox.as_ref())),
            files: Arc::new(
                match workflow.sandbox.as_ref().and_then(|s| s.files.as_ref()) {
                    Some(files) => self.file_policy.widened(&files.allowed_paths),
                    None => self.file_policy.clone(),
                },
            ),
        })
    }

    /// Runs `node` (or takes it from `earlier`), records it in `state` and sets the next node.
    /// Returns its report and the warnings it leaves.
    fn step(
        &self,
        context: &RunContext<'_, '_>,
        node: &Node,
        state: &mut RunState,
        earlier: Option<&RunState>,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> (NodeReport, Vec<String>) {
        on_event(Event::NodeStarted {
            id: &node.id,
            node_type: &node.type_name,
        });
        let node_started = Instant::now();
        let implementation = context.plugins[node.id.as_str()];
        let (plugin, mcp_tool) = (implementation.component(), implementation.mcp_tool());
        let component_run;
        let child_run;
        let runner: &dyn RunOnce = match plugin {
            Some(plugin) => {
                component_run = ComponentRun {
                    sandbox: self.sandbox,
                    plugin,
                };
                &component_run
            }
            None => {
                child_run = ChildRun { executor: self };
                &child_run
            }
        };
        // Borrowed unless the MCP target has to be added: a large param is not copied.
        let params = match mcp_tool {
            Some(tool) => std::borrow::Cow::Owned(with_mcp_target(&node.params, tool)),
            None => std::borrow::Cow::Borrowed(&node.params),
        };
        // Resolved once: the hash covers what the node really runs with (a loop's first
        // iteration).
        let work = match &node.batch {
            None => {
                let scope = Layered::over(&state.store as &dyn Scope);
                let scope = match node.loop_config {
                    Some(_) => scope.with("__iteration__", json!(1)),
                    None => scope,
                };
                Work::Once(attempt::prepare_params(
                    runner,
                    &params,
                    &scope,
                    &Map::new(),
                    context.strict,
                ))
            }
            Some(batch) => Work::Batch(batch),
        };
        // A nested workflow is never taken from an earlier run: its child's nodes decide.
        let hash = plugin.and_then(|plugin| node_hash(node, plugin, &work, &params, &state.store));
        let reused = match (&hash, earlier) {
            (Some(hash), Some(earlier)) if context.namespaced => earlier
                .execution
                .completed_with(&node.id, hash)
                .then(|| earlier.store.get(&node.id).cloned())
                .flatten()
                .map(|outputs| {
                    let action = earlier.execution.node_actions.get(&node.id).cloned();
                    (outputs, action.unwrap_or_else(pflow_ir::default_action))
                }),
            _ => None,
        };
        let mut warnings = Vec::new();
        let (outputs, action, error, cache, cached) = match reused {
            Some((outputs, action)) => (outputs_of(outputs), action, None, None, true),
            None => {
                let exec = Execution {
                    node_id: &node.id,
                    node_type: &node.type_name,
                    limits: context.limits.with(node.sandbox.as_ref()),
                    grants: plugin.map(|p| p.grants).unwrap_or_default(),
                    capabilities: CapabilityContexts {
                        http: Arc::new(
                            context.http.narrowed(http_overrides(node.sandbox.as_ref())),
                        ),
                        mcp: context.mcp.clone(),
                        mcp_read_only: mcp_tool
                            .is_some_and(|t| t.annotations["readOnlyHint"] == true),
                        files: context.files.clone(),
                        llm: self.llm.clone(),
                    },
                    dry: self.dry.clone(),
                    cancel: self.cancel.clone(),
                };
                let (result, cache) = match work {
                    Work::Once(Err(e)) => (Err(e.at(&node.id, &node.type_name)), None),
                    Work::Once(Ok(resolved)) => match &node.loop_config {
                        None => {
                            attempt::run_with_retry(runner, &exec, &resolved, node.retry.as_ref())
                        }
                        Some(loop_config) => self.run_loop(
                            context,
                            node,
                            runner,
                            &exec,
                            &params,
                            resolved,
                            loop_config,
                            state,
                            &mut warnings,
                        ),
                    },
                    Work::Batch(config) => {
                        let batch = Batch {
                            runner,
                            exec: &exec,
                            params: &params,
                            config,
                            retry: node.retry.as_ref(),
                            strict: context.strict,
                        };
                        batch.run(&state.store)
                    }
                };
                match result {
                    Ok(outcome) => {
                        let errors = outcome.outputs.get("error_count").and_then(Value::as_u64);
                        if let (Some(_), Some(errors @ 1..)) = (&node.batch, errors) {
                            warnings.push(format!(
                                "Batch '{}': {errors} error(s) out of {} items",
                                node.id,
                                outcome.outputs.get("count").unwrap_or(&Value::Null)
                            ));
                        }
                        (outcome.outputs, outcome.action, None, cache, false)
                    }
                    Err(failure) => {
                        let written =
                            Map::from_iter([("error".to_string(), json!(failure.message))]);
                        (written, "error".to_string(), Some(failure), cache, false)
                    }
                }
            }
        };
        // A node that failed, returned `error` or wrote an `error` is never cached.
        let clean = error.is_none() && action != "error" && !outputs.contains_key("error");
        write_outputs(&mut state.store, &node.id, outputs, context.namespaced);
        let record = &mut state.execution;
        if clean {
            record.completed_nodes.retain(|n| n != &node.id);
            record.completed_nodes.push(node.id.clone());
            record.node_actions.insert(node.id.clone(), action.clone());
            match hash {
                Some(hash) => record.node_hashes.insert(node.id.clone(), hash),
                None => record.node_hashes.remove(&node.id),
            };
            if record.failed_node.as_deref() == Some(node.id.as_str()) {
                record.failed_node = None;
            }
        } else {
            record.completed_nodes.retain(|n| n != &node.id);
            record.node_hashes.remove(&node.id);
            record.failed_node = Some(node.id.clone());
        }
        state.next_node = context
            .edges
            .get(&(node.id.as_str(), action.as_str()))
            .map(|id| id.to_string());
        let report = NodeReport {
            id: node.id.clone(),
            node_type: node.type_name.clone(),
            status: if error.is_some() {
                Status::Failed
            } else {
                Status::Succeeded
            },
            action,
            duration_ms: millis(node_started.elapsed()),
            component_cache: cache,
            cached,
            error,
        };
        on_event(Event::NodeFinished(&report));
        (report, warnings)
    }

    /// pflow's `loop:`: the node runs, its output is written, and the condition over it decides
    /// whether it runs again (with `${__iteration__}` one higher and `carry` replacing inputs),
    /// up to the cap. The last iteration's outputs, with `loop_stopped`, are the node's.
    #[allow(clippy::too_many_arguments)]
    fn run_loop(
        &self,
        context: &RunContext<'_, '_>,
        node: &Node,
        runner: &dyn RunOnce,
        exec: &Execution<'_>,
        params: &Map<String, Value>,
        first: Map<String, Value>,
        config: &LoopConfig,
        state: &mut RunState,
        warnings: &mut Vec<String>,
    ) -> (Result<Outcome, NodeFailure>, Option<CacheUse>) {
        let fail = |message: String| {
            let failure = NodeFailure {
                fixable: true,
                ..NodeFailure::new("host", "loop_config", message)
            };
            (Err(failure.at(&node.id, &node.type_name)), None)
        };
        let cap = match loop_cap(config, &state.store, self.max_node_visits) {
            Ok(cap) => cap,
            Err(message) => return fail(format!("Node '{}' loop: {message}", node.id)),
        };
        let Some((condition, until)) = config
            .while_condition
            .as_deref()
            .map(|c| (c, false))
            .or(config.until_condition.as_deref().map(|c| (c, true)))
        else {
            return fail(format!(
                "Node '{}' loop has neither `while:` nor `until:`; declare exactly one.",
                node.id
            ));
        };
        let mut resolved = first;
        let mut iteration = 1u32;
        loop {
            let (result, cache) =
                attempt::run_with_retry(runner, exec, &resolved, node.retry.as_ref());
            let mut outcome = match result {
                Ok(outcome) => outcome,
                Err(failure) => return (Err(failure), cache),
            };
            // The condition and `carry` read the node's own latest output.
            write_outputs(
                &mut state.store,
                &node.id,
                outcome.outputs.clone(),
                context.namespaced,
            );
            let again = match loop_condition(condition, until, &state.store) {
                Ok(again) => again,
                Err(message) => return fail(format!("Node '{}' loop: {message}", node.id)),
            };
            let stopped = if !again {
                Some("condition")
            } else if iteration >= cap {
                let (keyword, still) = if until {
                    ("until", "falsy")
                } else {
                    ("while", "truthy")
                };
                warnings.push(format!(
                    "Loop node '{}' stopped after reaching its max_iterations cap ({cap}) with its `{keyword}:` condition still {still}.",
                    node.id
                ));
                Some("max_iterations")
            } else {
                None
            };
            if let Some(reason) = stopped {
                outcome
                    .outputs
                    .insert("loop_stopped".to_string(), json!(reason));
                return (Ok(outcome), cache);
            }
            if self.cancel.is_cancelled() {
                let failure = NodeFailure::new("host", category::CANCELLED, "Cancelled")
                    .at(&node.id, &node.type_name);
                return (Err(failure), cache);
            }
            let mut carried = Map::new();
            for (name, template) in &config.carry {
                match Template::parse(template).resolve(&state.store, true) {
                    Ok(value) => carried.insert(name.clone(), value),
                    Err(e) => {
                        return fail(format!(
                            "Node '{}' loop: carry '{name}' cannot be resolved: {}",
                            node.id, e.message
                        ))
                    }
                };
            }
            iteration += 1;
            let scope =
                Layered::over(&state.store as &dyn Scope).with("__iteration__", json!(iteration));
            resolved =
                match attempt::prepare_params(runner, params, &scope, &carried, context.strict) {
                    Ok(resolved) => resolved,
                    Err(e) => return (Err(e.at(&node.id, &node.type_name)), cache),
                };
        }
    }

    /// Runs the child workflow a `workflow` node names, over a store of its own; its declared
    /// outputs are the node's.
    fn run_child(&self, params: &Map<String, Value>) -> Result<Outcome, NodeFailure> {
        let (reference, inputs, max_depth) = subworkflow::params_of(params)?;
        let (path, workflow) = subworkflow::load(&self.nesting, &reference)?;
        subworkflow::check_nesting(&self.nesting, &path, max_depth)?;
        let mut stack = self.nesting.stack.clone();
        stack.push(path.clone());
        let child = Executor {
            sandbox: self.sandbox,
            registry: self.registry,
            limits: self.limits,
            http_policy: self.http_policy.clone(),
            mcp_servers: self.mcp_servers.clone(),
            mcp_allowed: self.mcp_allowed.clone(),
            dry: self.dry.clone(),
            cancel: self.cancel.clone(),
            max_node_visits: self.max_node_visits,
            file_policy: self.file_policy.clone(),
            llm: self.llm.clone(),
            nesting: Nesting {
                base_dir: path.parent().map(Path::to_path_buf),
                saved_dir: self.nesting.saved_dir.clone(),
                stack,
            },
        };
        let report = child
            .run(&workflow, inputs, &mut |_| {})
            .map_err(|e| NodeFailure {
                fixable: true,
                ..NodeFailure::new(
                    "host",
                    "invalid_input",
                    format!("Sub-workflow '{reference}' cannot start: {e}"),
                )
            })?;
        match (report.status, report.error) {
            (Status::Succeeded, _) => Ok(subworkflow::outcome(report.outputs)),
            (_, Some(error)) => Err(NodeFailure {
                message: format!(
                    "Sub-workflow '{reference}' failed at node '{}': {}",
                    error.node_id, error.message
                ),
                ..error
            }),
            (status, None) => Err(NodeFailure::new(
                "host",
                if status == Status::Cancelled {
                    category::CANCELLED
                } else {
                    "workflow_failed"
                },
                format!("Sub-workflow '{reference}' did not finish"),
            )),
        }
    }

    /// The plugin of every node, or the first node whose type no plugin provides.
    fn plugins_for<'w>(
        &self,
        workflow: &'w Workflow,
    ) -> Result<std::collections::HashMap<&'w str, NodeImpl<'_>>, StartError> {
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

    /// Sessions for the run when a node may use MCP (a tool, or a component granted `mcp`).
    fn mcp_sessions(
        &self,
        plugins: &std::collections::HashMap<&str, NodeImpl<'_>>,
    ) -> Option<Arc<McpSessions>> {
        let uses_mcp = plugins
            .values()
            .any(|implementation| implementation.uses_mcp());
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

/// What a node is about to do: run once with these params, or once per batch item.
enum Work<'a> {
    Once(Result<Map<String, Value>, NodeFailure>),
    Batch(&'a BatchConfig),
}

/// The namespace a node wrote, as a map (an earlier run's checkpoint holds it as a value).
fn outputs_of(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// What a node runs with: its type, its component and its params after templates were
/// resolved (for a batch, the raw params and the resolved items). None when they cannot be
/// resolved: such a node fails, and is never cached.
fn node_hash(
    node: &Node,
    plugin: &Plugin,
    work: &Work<'_>,
    raw: &Map<String, Value>,
    store: &Map<String, Value>,
) -> Option<String> {
    let material = match work {
        Work::Once(Ok(params)) => json!({"params": params}),
        Work::Once(Err(_)) => return None,
        Work::Batch(batch) => {
            let items = batch::items(batch, store).ok()?;
            json!({"params": raw, "batch": batch, "items": items})
        }
    };
    let mut hasher = Sha256::new();
    hasher.update(node.type_name.as_bytes());
    hasher.update([0]);
    hasher.update(plugin.hash().as_bytes());
    hasher.update([0]);
    // serde_json keeps insertion order, the same for the same workflow and the same values.
    hasher.update(material.to_string().as_bytes());
    Some(format!("{:x}", hasher.finalize()))
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

/// The loop's cap: `max_iterations` (an integer or a template resolving to one), else the
/// visit cap, and never above it.
fn loop_cap(
    config: &LoopConfig,
    store: &Map<String, Value>,
    visit_cap: u32,
) -> Result<u32, String> {
    let value = match &config.max_iterations {
        None => return Ok(visit_cap),
        Some(Value::String(template)) => Template::parse(template)
            .resolve(store, true)
            .map_err(|e| format!("max_iterations cannot be resolved: {}", e.message))?,
        Some(value) => value.clone(),
    };
    let cap = match &value {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    }
    .ok_or_else(|| format!("max_iterations must be a positive integer, got {value}"))?;
    if cap < 1 {
        return Err(format!("max_iterations resolved to {cap}; it must be >= 1"));
    }
    if cap > i64::from(visit_cap) {
        return Err(format!(
            "max_iterations {cap} exceeds the visit cap of {visit_cap}; lower it or raise PFLOW_MAX_NODE_VISITS"
        ));
    }
    Ok(cap as u32)
}

/// Whether the loop runs again: the condition's truthiness (inverted for `until`). A string is
/// refused, as pflow does: "false" and "0\n" would be truthy and the loop would never stop.
fn loop_condition(template: &str, until: bool, store: &Map<String, Value>) -> Result<bool, String> {
    let value = Template::parse(template)
        .resolve(store, true)
        .unwrap_or(Value::Null);
    let truthy = match &value {
        Value::String(text) => {
            let preview: String = text.chars().take(60).collect();
            return Err(format!(
                "condition '{template}' resolved to a string ({preview:?}). String truthiness is unsafe; reference a typed output (a list, a number or a boolean)."
            ));
        }
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    };
    Ok(truthy != until)
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
