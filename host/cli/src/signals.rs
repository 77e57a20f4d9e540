//! Ctrl-C, SIGTERM and SIGHUP, the same for every command that runs nodes or servers: the first
//! one cancels (the running node stops and everything it started is killed, and the command
//! reports what finished); a second one quits at once, after killing every process the host
//! still confines.

use pflow_runtime::CancelToken;

/// A token that Ctrl-C, SIGTERM and SIGHUP cancel: the command's every run and LLM call share it.
/// Called once per process (the handler can be installed once).
pub fn cancel_on_interrupt() -> CancelToken {
    let token = CancelToken::new();
    let cancel = token.clone();
    on_interrupt(move || {
        cancel.cancel();
        eprintln!("\ncancelling: stopping the running node (Ctrl-C again to quit at once)");
    });
    token
}

/// Calls `first` on the first Ctrl-C, SIGTERM or SIGHUP; the second quits at once. Installed
/// once per process.
pub fn on_interrupt(first: impl Fn() + Send + 'static) {
    let interrupted = std::sync::atomic::AtomicBool::new(false);
    let installed = ctrlc::set_handler(move || {
        if interrupted.swap(true, std::sync::atomic::Ordering::SeqCst) {
            pflow_runtime::confine::kill_everything();
            std::process::exit(crate::exit::CANCELLED.into());
        }
        first();
    });
    if let Err(e) = installed {
        tracing::warn!("cannot handle Ctrl-C: {e}");
    }
}
