//! The host side of one node instance: what its store holds. The sandbox builds it from an
//! `Execution`; each capability reads its own context from it.

use super::{CapabilityContexts, Grants};
use crate::cancel::CancelToken;
use crate::dry::DryRun;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::ResourceTable;
use wasmtime::ResourceLimiter;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Timeout,
    Cancelled,
}

/// Everything a store holds for one execution.
pub struct HostState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) grants: Grants,
    pub(crate) node_id: String,
    pub(crate) node_type: String,
    /// When this execution's wall time runs out; host calls are bounded by it too.
    pub(crate) deadline: Instant,
    pub(crate) cancel: CancelToken,
    pub(crate) output_cap: u64,
    pub(crate) capabilities: CapabilityContexts,
    pub(crate) dry: Option<Arc<DryRun>>,
    pub(crate) log_messages: u32,
    pub(crate) stopped_by: Option<Stop>,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Caps linear memory and remembers that the cap was hit, so that whatever the guest does next
/// (trap, abort, panic) is reported as `memory_limit`.
pub(crate) struct MemoryLimiter {
    pub(crate) cap: usize,
    pub(crate) exceeded: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            self.exceeded = true;
            return Err(wasmtime::Error::msg("memory limit exceeded"));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}
