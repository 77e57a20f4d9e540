//! One run's cancellation. Set by Ctrl-C or by the caller; the executor checks it between
//! nodes, the sandbox at the next epoch tick (every 10 ms), and capabilities while they wait on
//! commands, requests and servers, which they then kill or abort. Each run gets its own token:
//! cancelling one run never cancels a later one (a repair loop, a server handling many runs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        CancelToken::default()
    }

    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Cancels and says whether it already was (a second Ctrl-C).
    pub fn cancel_again(&self) -> bool {
        self.0.swap(true, Ordering::SeqCst)
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl CancelToken {
    /// Runs `work` with a flag that is set when this token is cancelled or `timeout` passes,
    /// for waits that know only one flag (the LLM client).
    pub fn with_deadline<T>(
        &self,
        timeout: std::time::Duration,
        work: impl FnOnce(&AtomicBool) -> T,
    ) -> T {
        let deadline = std::time::Instant::now() + timeout;
        let flag = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (parent, flag, done) = (self.0.clone(), flag.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if parent.load(Ordering::Relaxed) || std::time::Instant::now() >= deadline {
                        flag.store(true, Ordering::SeqCst);
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            })
        };
        let result = work(&flag);
        done.store(true, Ordering::SeqCst);
        let _ = watcher.join();
        result
    }
}

/// For the waits that poll a flag (commands, HTTP, MCP, the LLM client).
impl std::ops::Deref for CancelToken {
    type Target = AtomicBool;
    fn deref(&self) -> &AtomicBool {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_independent_and_clones_share() {
        let (first, second) = (CancelToken::new(), CancelToken::new());
        let shared = first.clone();
        assert!(!shared.cancel_again());
        assert!(first.is_cancelled() && shared.cancel_again());
        assert!(!second.is_cancelled());
    }
}
