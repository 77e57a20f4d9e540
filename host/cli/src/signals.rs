//! Ctrl-C, SIGTERM and SIGHUP, the same for every command that runs nodes or servers: the first
//! one sets the cancellation flag, the running node stops and everything it started is killed,
//! and the command reports what finished; a second one quits at once, after killing every
//! process the host still confines.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub fn cancel_on_interrupt(cancel: Arc<AtomicBool>) {
    let installed = ctrlc::set_handler(move || {
        if cancel.swap(true, Ordering::SeqCst) {
            pflow_runtime::confine::kill_everything();
            std::process::exit(crate::exit::CANCELLED.into());
        }
        eprintln!("\ncancelling: stopping the running node (Ctrl-C again to quit at once)");
    });
    if let Err(e) = installed {
        tracing::warn!("cannot handle Ctrl-C: {e}");
    }
}
