//! One execution of a node in a scope: its `inputs:` mapping and params resolved against the
//! store plus what the scope adds (a batch item, a loop's iteration and carried values), then
//! attempts under its `retry:` policy.

use crate::cancel::CancelToken;
use crate::error::{category, NodeFailure};
use crate::registry::{CacheUse, Plugin};
use crate::sandbox::{Execution, Outcome, Sandbox};
use pflow_ir::template::{resolve_inputs, resolve_value, Scope, Unresolved};
use pflow_ir::RetryConfig;
use serde_json::{Map, Value};
use std::time::{Duration, Instant};

/// The store with names layered over it (the later layer wins): `${item}`, `${__index__}`,
/// `${__iteration__}`, and a node's own `inputs:` names.
pub struct Layered<'a> {
    pub base: &'a dyn Scope,
    pub names: Map<String, Value>,
}

impl<'a> Layered<'a> {
    pub fn over(base: &'a dyn Scope) -> Self {
        Layered {
            base,
            names: Map::new(),
        }
    }

    pub fn with(mut self, name: &str, value: Value) -> Self {
        self.names.insert(name.to_string(), value);
        self
    }
}

impl Scope for Layered<'_> {
    fn lookup(&self, name: &str) -> Option<&Value> {
        self.names.get(name).or_else(|| self.base.lookup(name))
    }
}

/// How one execution of a node happens: its component in a fresh sandbox instance, or, for a
/// nested workflow, a child run.
pub trait RunOnce: Sync {
    /// Whether the node takes `inputs` as a param (rather than only as names for the others).
    fn declares_inputs(&self) -> bool;
    fn run(
        &self,
        exec: &Execution<'_>,
        params: &Map<String, Value>,
    ) -> (Result<Outcome, NodeFailure>, Option<CacheUse>);
}

/// A component, run in a fresh instance.
pub struct ComponentRun<'a> {
    pub sandbox: &'a Sandbox,
    pub plugin: &'a Plugin,
}

impl RunOnce for ComponentRun<'_> {
    fn declares_inputs(&self) -> bool {
        self.plugin.spec.params.iter().any(|p| p.name == "inputs")
    }

    fn run(
        &self,
        exec: &Execution<'_>,
        params: &Map<String, Value>,
    ) -> (Result<Outcome, NodeFailure>, Option<CacheUse>) {
        let limits = exec
            .limits
            .narrowed_by_params(&self.plugin.spec.params, params);
        let narrowed;
        let exec = if limits == exec.limits {
            exec
        } else {
            narrowed = Execution {
                limits,
                ..exec.clone()
            };
            &narrowed
        };
        match self.plugin.prepared(self.sandbox) {
            Ok((pre, cache)) => (self.sandbox.run(pre, exec, params), Some(cache)),
            Err(e) => (Err(e.at(exec.node_id, exec.node_type)), None),
        }
    }
}

/// The params a node runs with in `scope`. pflow's `- inputs:` works on any node: its entries
/// (after `overrides`, a loop's carried values) become names the other params can use. It
/// stays a param only for node types that declare one.
pub fn prepare_params(
    runner: &dyn RunOnce,
    params: &Map<String, Value>,
    scope: &dyn Scope,
    overrides: &Map<String, Value>,
    strict: bool,
) -> Result<Map<String, Value>, NodeFailure> {
    let mut names = Map::new();
    if let Some(inputs) = params.get("inputs") {
        match resolve_inputs(inputs, scope, strict)
            .map_err(|e| template_failure(e, "template_error", "In param 'inputs'"))?
        {
            Value::Object(map) => names = map,
            other if overrides.is_empty() => {
                // Not a mapping (a whole-object template that gave something else): passed on
                // as written for the node to judge.
                let mut resolved = resolve_all(params, scope, strict, "inputs")?;
                resolved.insert("inputs".to_string(), other);
                return Ok(resolved);
            }
            _ => {}
        }
    }
    names.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
    let layered = Layered { base: scope, names };
    let mut resolved = resolve_all(params, &layered, strict, "inputs")?;
    if runner.declares_inputs() && (params.contains_key("inputs") || !overrides.is_empty()) {
        resolved.insert("inputs".to_string(), Value::Object(layered.names));
    }
    Ok(resolved)
}

fn resolve_all(
    params: &Map<String, Value>,
    scope: &dyn Scope,
    strict: bool,
    skip: &str,
) -> Result<Map<String, Value>, NodeFailure> {
    params
        .iter()
        .filter(|(key, _)| key.as_str() != skip)
        .map(|(key, value)| {
            let resolved = resolve_value(value, scope, strict)
                .map_err(|e| template_failure(e, "template_error", &format!("In param '{key}'")))?;
            Ok((key.clone(), resolved))
        })
        .collect()
}

/// A template that did not resolve, as a fixable failure saying where it was.
pub fn template_failure(unresolved: Unresolved, category: &str, place: &str) -> NodeFailure {
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

/// Failures a second attempt can cure: the call did not complete. A node that ran and
/// reported failure (a command's non-zero exit, an HTTP error status) is not retried, as in
/// pflow.
pub fn is_transient(failure: &NodeFailure) -> bool {
    matches!(
        failure.category.as_str(),
        category::TIMEOUT | category::NETWORK | category::MCP_UNAVAILABLE | "rate_limited"
    )
}

/// Runs the node with `params`, again after a transient failure while `retry` allows.
pub fn run_with_retry(
    runner: &dyn RunOnce,
    exec: &Execution<'_>,
    params: &Map<String, Value>,
    retry: Option<&RetryConfig>,
) -> (Result<Outcome, NodeFailure>, Option<CacheUse>) {
    let attempts = retry.map_or(1, |r| r.max.max(1));
    let mut attempt = 1;
    loop {
        let (result, cache) = runner.run(exec, params);
        match (&result, retry) {
            (Err(failure), Some(retry))
                if attempt < attempts && is_transient(failure) && !exec.cancel.is_cancelled() =>
            {
                tracing::info!(
                    node = exec.node_id,
                    attempt,
                    "transient failure, retrying: {}",
                    failure.message
                );
                if !sleep_unless_cancelled(retry.wait_after(attempt), &exec.cancel) {
                    return (result, cache);
                }
                attempt += 1;
            }
            _ => return (result, cache),
        }
    }
}

/// Waits `duration`; false when the run was cancelled meanwhile.
pub fn sleep_unless_cancelled(duration: Duration, cancel: &CancelToken) -> bool {
    let deadline = Instant::now() + duration;
    loop {
        if cancel.is_cancelled() {
            return false;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(10)));
    }
}
