//! One engine for the process, and one fresh store and instance per node execution, under fuel,
//! memory, wall-time and output limits. Whatever a node does, the host gets a result or a
//! `NodeFailure` with a category of its own, and carries on.

use crate::bindings::{Node, NodePre};
use crate::cancel::CancelToken;
use crate::capabilities::state::{MemoryLimiter, Stop};
use crate::capabilities::{CapabilityContexts, Grants, HostState};
use crate::dry::DryRun;
use crate::error::{category, NodeFailure};
use crate::limits::{human_bytes, Limits};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, Trap, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::WasiCtxBuilder;

/// How often the engine's epoch advances: the resolution of wall-time limits and Ctrl-C.
const EPOCH_TICK: Duration = Duration::from_millis(5);
/// How much of a node's stderr (where a Rust panic message goes) is kept for error messages.
const STDERR_CAPTURE: usize = 16 * 1024;

/// The wasmtime engine, the linker with every capability, and the clock that bounds wall time.
pub struct Sandbox {
    engine: Engine,
    linker: Linker<HostState>,
}

impl Sandbox {
    pub fn new() -> anyhow::Result<Self> {
        let mut config = Config::new();
        config.consume_fuel(true).epoch_interruption(true);
        let engine = Engine::new(&config).map_err(anyhow::Error::from)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(anyhow::Error::from)?;
        crate::bounded_clock::add_to_linker(&mut linker).map_err(anyhow::Error::from)?;
        Node::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state)
            .map_err(anyhow::Error::from)?;
        start_epoch_clock(&engine);
        Ok(Sandbox { engine, linker })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Resolves a component's imports against the linker once, so that each execution only
    /// instantiates.
    pub fn prepare(&self, component: &Component) -> Result<NodePre<HostState>, String> {
        let pre = self
            .linker
            .instantiate_pre(component)
            .map_err(|e| format!("{e:#}"))?;
        NodePre::new(pre).map_err(|e| format!("{e:#}"))
    }

    fn new_store(&self, exec: &Execution<'_>) -> (Store<HostState>, MemoryOutputPipe) {
        let stderr = MemoryOutputPipe::new(STDERR_CAPTURE);
        let deadline = Instant::now() + exec.limits.timeout;
        let state = HostState {
            wasi: WasiCtxBuilder::new().stderr(stderr.clone()).build(),
            table: ResourceTable::new(),
            limiter: MemoryLimiter {
                cap: usize::try_from(exec.limits.memory_bytes).unwrap_or(usize::MAX),
                exceeded: false,
            },
            grants: exec.grants,
            node_id: exec.node_id.to_string(),
            node_type: exec.node_type.to_string(),
            deadline,
            cancel: exec.cancel.clone(),
            output_cap: exec.limits.output_bytes,
            capabilities: exec.capabilities.clone(),
            dry: exec.dry.clone(),
            log_messages: 0,
            stopped_by: None,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        // Fuel only fails to set when fuel is off, and it is always on here.
        let _ = store.set_fuel(exec.limits.fuel);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|mut context| {
            let state = context.data_mut();
            if state.cancel.is_cancelled() {
                state.stopped_by = Some(Stop::Cancelled);
                return Ok(UpdateDeadline::Interrupt);
            }
            if Instant::now() >= state.deadline {
                state.stopped_by = Some(Stop::Timeout);
                return Ok(UpdateDeadline::Interrupt);
            }
            Ok(UpdateDeadline::Continue(1))
        });
        (store, stderr)
    }

    /// Describes a component: instantiates it once and calls `describe`.
    pub fn describe(
        &self,
        pre: &NodePre<HostState>,
    ) -> Result<crate::bindings::pflow::node::types::NodeSpec, String> {
        let exec = Execution {
            node_id: "describe",
            node_type: "describe",
            limits: Limits::default(),
            grants: Grants::default(),
            capabilities: Default::default(),
            dry: None,
            cancel: CancelToken::new(),
        };
        let (mut store, stderr) = self.new_store(&exec);
        let result = pre
            .instantiate(&mut store)
            .and_then(|node| node.call_describe(&mut store));
        result.map_err(|e| classify_trap(&e, store.data(), &stderr, &exec.limits).message)
    }

    /// Runs one node execution in a fresh instance.
    pub fn run(
        &self,
        pre: &NodePre<HostState>,
        exec: &Execution<'_>,
        params: &Map<String, Value>,
    ) -> Result<Outcome, NodeFailure> {
        let params = serde_json::to_string(params).expect("a JSON map always serializes");
        let (mut store, stderr) = self.new_store(exec);
        let result = pre
            .instantiate(&mut store)
            .and_then(|node| node.call_run(&mut store, &params));
        let failure = match result {
            Ok(Ok(output)) => {
                return parse_outputs(output, &exec.limits)
                    .map_err(|failure| failure.at(exec.node_id, exec.node_type))
            }
            Ok(Err(error)) => NodeFailure {
                source: "node".to_string(),
                node_id: String::new(),
                node_type: String::new(),
                category: error.category,
                fixable: error.fixable,
                message: error.message,
                attempted: error.attempted,
                available: error.available,
                sample: error.sample,
            },
            Err(error) => classify_trap(&error, store.data(), &stderr, &exec.limits),
        };
        Err(failure.at(exec.node_id, exec.node_type))
    }
}

/// What one execution is: who runs, under which limits and grants.
#[derive(Clone)]
pub struct Execution<'a> {
    pub node_id: &'a str,
    pub node_type: &'a str,
    pub limits: Limits,
    pub grants: Grants,
    /// What each capability may do and reach.
    pub capabilities: CapabilityContexts,
    /// Set for a dry run: side effects are contained, skipped and recorded here.
    pub dry: Option<Arc<DryRun>>,
    /// The run's cancellation: the node stops at the next epoch tick once it is set.
    pub cancel: CancelToken,
}

/// A node's successful result: its outputs and the action that picks the next edge.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub outputs: Map<String, Value>,
    pub action: String,
}

fn parse_outputs(
    output: crate::bindings::pflow::node::types::NodeOutput,
    limits: &Limits,
) -> Result<Outcome, NodeFailure> {
    if output.outputs.len() as u64 > limits.output_bytes {
        return Err(NodeFailure::new(
            "sandbox",
            category::OUTPUT_LIMIT,
            format!(
                "The node returned {} of output, over the {} limit; raise sandbox.output_mb or make the node return less.",
                human_bytes(output.outputs.len() as u64),
                human_bytes(limits.output_bytes)
            ),
        ));
    }
    let outputs = match serde_json::from_str::<Value>(&output.outputs) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(NodeFailure::new(
                "sandbox",
                category::BAD_OUTPUT,
                format!(
                    "The node's outputs must be a JSON object, got {}.",
                    pflow_ir::json_kind(&other)
                ),
            ))
        }
        Err(e) => {
            return Err(NodeFailure {
                sample: Some(output.outputs.chars().take(200).collect()),
                ..NodeFailure::new(
                    "sandbox",
                    category::BAD_OUTPUT,
                    format!("The node's outputs are not valid JSON: {e}."),
                )
            })
        }
    };
    Ok(Outcome {
        outputs,
        action: output
            .action
            .filter(|a| !a.is_empty())
            .unwrap_or_else(pflow_ir::default_action),
    })
}

/// Turns an error out of wasmtime into the category of what really happened.
fn classify_trap(
    error: &wasmtime::Error,
    state: &HostState,
    stderr: &MemoryOutputPipe,
    limits: &Limits,
) -> NodeFailure {
    let sandbox = |category: &str, message: String| NodeFailure::new("sandbox", category, message);
    if state.limiter.exceeded {
        return sandbox(
            category::MEMORY_LIMIT,
            format!(
                "The node tried to grow its memory past the {} limit and was stopped; raise sandbox.memory_mb if it really needs more.",
                human_bytes(limits.memory_bytes)
            ),
        );
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => sandbox(
            category::FUEL_EXHAUSTED,
            format!(
                "The node used up its fuel ({} units) and was stopped: it computes too much or loops forever; raise sandbox.fuel if the work is real.",
                limits.fuel
            ),
        ),
        Some(Trap::Interrupt) => match state.stopped_by {
            Some(Stop::Cancelled) => sandbox(category::CANCELLED, "The run was cancelled.".to_string()),
            _ => sandbox(
                category::TIMEOUT,
                format!(
                    "The node was still running after its {:.1} s wall-time limit and was stopped; raise {} if it needs longer.",
                    limits.timeout.as_secs_f64(),
                    if limits.timeout_from_param {
                        "the node's timeout param"
                    } else {
                        "sandbox.timeout_seconds"
                    }
                ),
            ),
        },
        Some(trap) => {
            let said = String::from_utf8_lossy(&stderr.contents()).trim().to_string();
            let mut failure = sandbox(
                category::TRAP,
                if said.is_empty() {
                    format!("The node crashed: {trap}.")
                } else {
                    format!("The node crashed: {trap}. It said: {said}")
                },
            );
            match trap {
                Trap::StackOverflow => failure.message.push_str(" (too deep a recursion)"),
                // Rust and C keep their stack in linear memory: overflowing it shows up as
                // an access below address zero.
                Trap::MemoryOutOfBounds => failure
                    .message
                    .push_str(" (often a stack overflow: too deep a recursion)"),
                _ => {}
            }
            failure
        }
        // Not a trap: the component broke the ABI contract (e.g. a string that is not UTF-8).
        None => sandbox(
            category::BAD_OUTPUT,
            format!("The node returned data the host cannot read: {error:#}."),
        ),
    }
}

/// Advances the engine's epoch on a background thread for as long as the process lives. The
/// thread holds a weak handle, so it never keeps an engine alive.
fn start_epoch_clock(engine: &Engine) {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("pflow-epoch".to_string())
        .spawn(move || loop {
            std::thread::sleep(EPOCH_TICK);
            match weak.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => break,
            }
        })
        .expect("cannot start the epoch clock thread");
}
