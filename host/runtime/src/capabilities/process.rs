//! Running a native process for a node: its own cgroup (see [`crate::confine`]), capped capture
//! of stdout and stderr, a deadline, and no survivors: when the command ends, times out or the
//! run is cancelled, everything it started is killed, and the node returns at once even if a
//! process it started still holds the output pipes.

use crate::bindings::pflow::node::types::NodeError;
use crate::confine::Confinement;
use crate::error::category;
use crate::spawn::{Prelude, Spec};
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How often a waiting command checks for Ctrl-C.
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// How long output is still read once the command has ended and been killed. Its pipes close
/// at once unless a process escaped the kill (no cgroup here), and that one must not hold up
/// the node; generous, so that a busy machine still drains what a command wrote.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

pub struct Request {
    pub argv: Vec<String>,
    pub stdin: Option<Vec<u8>>,
    pub cwd: Option<String>,
    pub env: Vec<(String, String)>,
    /// The command's own timeout, if it has one.
    pub timeout: Option<Duration>,
    /// When the node's wall time runs out.
    pub deadline: Instant,
    /// Cap on the captured output, stdout and stderr together.
    pub capture_bytes: u64,
    /// What the child sets up before it execs (a dry command's launcher).
    pub prelude: Option<Prelude>,
}

#[derive(Debug)]
pub struct Finished {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

#[derive(Debug)]
pub enum CommandFailure {
    BadRequest(String),
    Spawn {
        program: String,
        error: std::io::Error,
    },
    TimedOut {
        after: Duration,
        node_limit: bool,
        program: String,
    },
    Cancelled,
}

impl CommandFailure {
    pub fn into_node_error(self) -> NodeError {
        let (category, message, fixable) = match self {
            CommandFailure::BadRequest(message) => ("bad_params", message, true),
            CommandFailure::Spawn { program, error } => (
                "command_failed",
                format!("Cannot start '{program}': {error}"),
                true,
            ),
            CommandFailure::TimedOut {
                after,
                node_limit,
                program,
            } => (
                category::TIMEOUT,
                format!(
                    "'{program}' was still running after {:.1} s and was killed ({}).",
                    after.as_secs_f64(),
                    if node_limit {
                        "the node's wall-time limit; raise sandbox.timeout_seconds"
                    } else {
                        "the command's timeout"
                    }
                ),
                false,
            ),
            CommandFailure::Cancelled => (
                category::CANCELLED,
                "The run was cancelled; the command was killed.".to_string(),
                false,
            ),
        };
        NodeError::new(category, message, fixable)
    }
}

pub fn run_command(request: Request, cancel: &AtomicBool) -> Result<Finished, CommandFailure> {
    let Some(program) = request.argv.first().cloned() else {
        return Err(CommandFailure::BadRequest(
            "A command needs at least a program name.".to_string(),
        ));
    };
    let started = Instant::now();
    let own_deadline = request.timeout.map(|t| started + t);
    let (deadline, node_limit) = match own_deadline {
        Some(own) if own < request.deadline => (own, false),
        _ => (request.deadline, true),
    };

    let confinement = Confinement::new();
    let spec = Spec {
        argv: &request.argv,
        env: &request.env,
        cwd: request.cwd.as_deref(),
        piped_stdin: request.stdin.is_some(),
        // Should the host be killed outright, the command goes with it. The thread that
        // spawns it waits for it, so "the parent thread exited" means the host is gone.
        die_with_parent: true,
        prelude: request.prelude.as_ref(),
    };
    let mut child = confinement
        .spawn(&spec)
        .map_err(|error| CommandFailure::Spawn {
            program: program.clone(),
            error,
        })?;
    let leader = child.pid;

    if let (Some(bytes), Some(mut pipe)) = (request.stdin, child.stdin.take()) {
        // A command that does not read its input closes the pipe early; that is not an error.
        // Not joined: a writer blocked on a pipe that an escaped process holds must not hold
        // up the node; it ends when the pipe closes.
        thread::spawn(move || drop(pipe.write_all(&bytes)));
    }
    let output = Capture::start(child.stdout, child.stderr, request.capture_bytes);

    let waited = wait(leader, deadline, cancel);
    // Whatever the command left running goes with it, wherever it moved itself.
    confinement.kill(leader);
    let output = output.finish(Instant::now() + DRAIN_AFTER_EXIT);
    let status = match waited {
        Waited::Exited(status) => status,
        Waited::TimedOut => {
            return Err(CommandFailure::TimedOut {
                after: started.elapsed(),
                node_limit,
                program,
            })
        }
        Waited::Cancelled => return Err(CommandFailure::Cancelled),
    };
    Ok(Finished {
        stdout: output.stdout,
        stderr: output.stderr,
        exit_code: exit_code(status),
        stdout_truncated: output.stdout_truncated,
        stderr_truncated: output.stderr_truncated,
    })
}

enum Waited {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

/// Waits on another thread, so that the exit is seen the moment it happens, while this one
/// watches the deadline and Ctrl-C.
fn wait(pid: libc::pid_t, deadline: Instant, cancel: &AtomicBool) -> Waited {
    let (sender, receiver) = mpsc::channel();
    let waiter = thread::spawn(move || {
        let mut status = 0;
        // SAFETY: waitpid(2) on our own child, which nothing else reaps.
        let reaped = loop {
            let result = unsafe { libc::waitpid(pid, &mut status, 0) };
            if result >= 0
                || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                break result;
            }
        };
        let _ = sender.send((reaped == pid).then_some(ExitStatus::from_raw(status)));
    });
    let outcome = loop {
        if cancel.load(Ordering::Relaxed) {
            break Waited::Cancelled;
        }
        let now = Instant::now();
        if now >= deadline {
            break Waited::TimedOut;
        }
        match receiver.recv_timeout((deadline - now).min(CANCEL_POLL)) {
            Ok(Some(status)) => break Waited::Exited(status),
            // waitpid itself failing leaves nothing to wait for; report it as a kill.
            Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Waited::Exited(ExitStatus::from_raw(libc::SIGKILL))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
        }
    };
    if !matches!(outcome, Waited::Exited(_)) {
        // SAFETY: kill(2) on the command's own process group, so that waitpid returns.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = waiter.join();
    outcome
}

fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

/// Both output streams, read on threads of their own into one budget: together they keep at
/// most `cap` bytes. A stream that would pass it is closed, so that a command that floods its
/// output gets SIGPIPE rather than running on until its deadline.
struct Capture {
    shared: Arc<Mutex<Captured>>,
    done: mpsc::Receiver<()>,
}

#[derive(Default)]
struct Captured {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    stdout_truncated: bool,
    stderr_truncated: bool,
    budget: u64,
}

impl Capture {
    fn start(
        stdout: impl Read + Send + 'static,
        stderr: impl Read + Send + 'static,
        cap: u64,
    ) -> Capture {
        let shared = Arc::new(Mutex::new(Captured {
            budget: cap,
            ..Captured::default()
        }));
        let (sender, done) = mpsc::channel();
        read_into(stdout, shared.clone(), sender.clone(), true);
        read_into(stderr, shared.clone(), sender, false);
        Capture { shared, done }
    }

    /// What was read by the time both streams ended, or by `until` if a process that escaped
    /// the kill still holds one open.
    fn finish(self, until: Instant) -> Captured {
        for _ in 0..2 {
            let left = until.saturating_duration_since(Instant::now());
            if self.done.recv_timeout(left).is_err() {
                break;
            }
        }
        let mut captured = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *captured)
    }
}

fn read_into(
    mut stream: impl Read + Send + 'static,
    shared: Arc<Mutex<Captured>>,
    done: mpsc::Sender<()>,
    is_stdout: bool,
) {
    thread::spawn(move || {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            let n = match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut guard = shared.lock().unwrap_or_else(|e| e.into_inner());
            let captured = &mut *guard;
            let keep = n.min(usize::try_from(captured.budget).unwrap_or(usize::MAX));
            captured.budget -= keep as u64;
            let (buffer, truncated) = if is_stdout {
                (&mut captured.stdout, &mut captured.stdout_truncated)
            } else {
                (&mut captured.stderr, &mut captured.stderr_truncated)
            };
            buffer.extend_from_slice(&chunk[..keep]);
            if keep < n {
                *truncated = true;
                break;
            }
        }
        // Dropping the stream closes our end of the pipe.
        drop(stream);
        let _ = done.send(());
    });
}
