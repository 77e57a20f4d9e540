//! WASI's monotonic clock with every sleep cut at the node's deadline.
//!
//! Wall-time limits work by epoch interruption, which stops a node only while it runs
//! WebAssembly. A sleep (`time.sleep`, `std::thread::sleep`, `setTimeout`) is a host call that
//! blocks the thread instead, so without this a node asking to sleep for an hour would hold its
//! run for that hour, past its limit and past Ctrl-C. Here a sleep never outlasts the node's
//! deadline; when it returns, the next epoch tick stops the node as timed out.

use crate::capabilities::HostState;
use std::time::{Duration, Instant};
use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::clocks::{WasiClocksCtxView, WasiClocksView};
use wasmtime_wasi::p2::bindings::clocks::monotonic_clock::{self, Host};
use wasmtime_wasi::p2::DynPollable;

/// Replaces the linker's `wasi:clocks/monotonic-clock` with the bounded one.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let added = monotonic_clock::add_to_linker::<HostState, BoundedClock>(linker, |state| {
        let remaining = state.deadline.saturating_duration_since(Instant::now());
        BoundedClockView {
            clocks: state.clocks(),
            remaining,
        }
    });
    linker.allow_shadowing(false);
    added
}

struct BoundedClock;

impl HasData for BoundedClock {
    type Data<'a> = BoundedClockView<'a>;
}

struct BoundedClockView<'a> {
    clocks: WasiClocksCtxView<'a>,
    /// Time left before the node's deadline.
    remaining: Duration,
}

impl BoundedClockView<'_> {
    /// A wait of `nanos`, cut at the deadline (plus one epoch tick, so the node is past it when
    /// it wakes).
    fn bounded(&self, nanos: u64) -> u64 {
        let cap = self.remaining + Duration::from_millis(10);
        nanos.min(u64::try_from(cap.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl Host for BoundedClockView<'_> {
    fn now(&mut self) -> wasmtime::Result<monotonic_clock::Instant> {
        self.clocks.now()
    }

    fn resolution(&mut self) -> wasmtime::Result<monotonic_clock::Duration> {
        self.clocks.resolution()
    }

    fn subscribe_instant(
        &mut self,
        when: monotonic_clock::Instant,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        let now = self.clocks.now()?;
        let wait = self.bounded(when.saturating_sub(now));
        self.clocks.subscribe_duration(wait)
    }

    fn subscribe_duration(
        &mut self,
        duration: monotonic_clock::Duration,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        let wait = self.bounded(duration);
        self.clocks.subscribe_duration(wait)
    }
}
