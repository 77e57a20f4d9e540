//! pflow's `batch`: a node once per item, each in its own sandbox instance, one after another
//! or `parallel` on up to `max_concurrent` threads. Results come back in item order whatever
//! the order they finished in.

use crate::attempt::{self, template_failure, Layered, RunOnce};
use crate::error::NodeFailure;
use crate::registry::CacheUse;
use crate::sandbox::{Execution, Outcome};
use pflow_ir::template::{resolve_value, Scope};
use pflow_ir::{BatchConfig, BatchErrorHandling, RetryConfig};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// pflow's bounds on `max_concurrent`.
const MAX_CONCURRENT: u32 = 100;

pub struct Batch<'a> {
    pub runner: &'a dyn RunOnce,
    pub exec: &'a Execution<'a>,
    pub params: &'a Map<String, Value>,
    pub config: &'a BatchConfig,
    pub retry: Option<&'a RetryConfig>,
    pub strict: bool,
}

type ItemResult = (Result<Outcome, NodeFailure>, Option<CacheUse>);
/// An item's result, or None for an item never started (after a fail-fast failure).
type Slot = (Option<Result<Outcome, NodeFailure>>, Option<CacheUse>);

impl Batch<'_> {
    /// Runs every item (stopping early under `fail_fast`) and builds pflow's batch outputs:
    /// `results` (successful items, each its outputs plus `item` and `original_index`),
    /// `count`, `success_count`, `error_count` and `errors`.
    pub fn run(&self, store: &Map<String, Value>) -> ItemResult {
        let exec = self.exec;
        let items = match items(self.config, store) {
            Ok(items) => items,
            Err(failure) => return (Err(failure.at(exec.node_id, exec.node_type)), None),
        };
        let workers = if self.config.parallel {
            (self.config.max_concurrent.clamp(1, MAX_CONCURRENT) as usize).min(items.len())
        } else {
            1
        };
        let finished = if workers <= 1 {
            self.sequential(&items, store)
        } else {
            self.parallel(&items, store, workers)
        };

        let mut cache = None;
        let mut results = Vec::with_capacity(items.len());
        let mut errors = Vec::new();
        for (index, (result, used)) in finished.into_iter().enumerate() {
            cache = cache.or(used);
            let Some(result) = result else { continue };
            match result {
                Ok(outcome) => {
                    let mut outputs = outcome.outputs;
                    outputs.insert("item".to_string(), items[index].clone());
                    outputs.insert("original_index".to_string(), json!(index));
                    results.push(Value::Object(outputs));
                }
                Err(failure) if self.config.error_handling == BatchErrorHandling::FailFast => {
                    let message = format!(
                        "Batch '{}' failed at item [{index}]: {}\n  item: {}",
                        exec.node_id,
                        failure.message,
                        pflow_ir::template::render(&items[index])
                    );
                    return (Err(NodeFailure { message, ..failure }), cache);
                }
                Err(failure) => {
                    errors.push(
                        json!({"index": index, "item": items[index], "error": failure.message}),
                    );
                }
            }
        }
        let outputs = Map::from_iter([
            ("results".to_string(), json!(results)),
            ("count".to_string(), json!(items.len())),
            ("success_count".to_string(), json!(results.len())),
            ("error_count".to_string(), json!(errors.len())),
            ("errors".to_string(), Value::Array(errors)),
        ]);
        let outcome = Outcome {
            outputs,
            action: pflow_ir::default_action(),
        };
        (Ok(outcome), cache)
    }

    /// Items in order; None for those never started because an earlier one failed fast.
    fn sequential(&self, items: &[Value], store: &Map<String, Value>) -> Vec<Slot> {
        let mut finished = Vec::with_capacity(items.len());
        let mut stopped = false;
        for (index, item) in items.iter().enumerate() {
            if stopped || self.exec.cancel.is_cancelled() {
                finished.push((None, None));
                continue;
            }
            let (result, cache) = self.item(index, item, store);
            stopped = result.is_err() && self.fails_fast();
            finished.push((Some(result), cache));
        }
        finished
    }

    /// Workers take the next item until none is left, a fail-fast item failed, or the run was
    /// cancelled; each writes its result into the item's slot.
    fn parallel(&self, items: &[Value], store: &Map<String, Value>, workers: usize) -> Vec<Slot> {
        let slots: Vec<Mutex<Slot>> = items.iter().map(|_| Mutex::new((None, None))).collect();
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|threads| {
            for _ in 0..workers {
                threads.spawn(|| loop {
                    if stop.load(Ordering::Relaxed) || self.exec.cancel.is_cancelled() {
                        return;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(index) else { return };
                    let (result, cache) = self.item(index, item, store);
                    if result.is_err() && self.fails_fast() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    if let Ok(mut slot) = slots[index].lock() {
                        *slot = (Some(result), cache);
                    }
                });
            }
        });
        slots
            .into_iter()
            .map(|slot| slot.into_inner().unwrap_or((None, None)))
            .collect()
    }

    fn fails_fast(&self) -> bool {
        self.config.error_handling == BatchErrorHandling::FailFast
    }

    /// One item, with `max_retries` attempts `retry_wait` apart (each attempt under the node's
    /// own `retry:`).
    fn item(&self, index: usize, item: &Value, store: &Map<String, Value>) -> ItemResult {
        let exec = self.exec;
        let scope = Layered::over(store as &dyn Scope)
            .with(&self.config.alias, item.clone())
            .with("__index__", json!(index));
        let params = match attempt::prepare_params(
            self.runner,
            self.params,
            &scope,
            &Map::new(),
            self.strict,
        ) {
            Ok(params) => params,
            Err(e) => return (Err(e.at(exec.node_id, exec.node_type)), None),
        };
        let attempts = self.config.max_retries.max(1);
        let mut attempt = 1;
        loop {
            let (result, cache) = attempt::run_with_retry(self.runner, exec, &params, self.retry);
            if result.is_ok() || attempt >= attempts || exec.cancel.is_cancelled() {
                return (result, cache);
            }
            let wait = Duration::from_secs_f64(self.config.retry_wait.clamp(0.0, 60.0));
            if !attempt::sleep_unless_cancelled(wait, &exec.cancel) {
                return (result, cache);
            }
            attempt += 1;
        }
    }
}

/// The list a batch runs over: an array, or text holding a JSON array (a command's stdout).
pub fn items(batch: &BatchConfig, store: &Map<String, Value>) -> Result<Vec<Value>, NodeFailure> {
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
