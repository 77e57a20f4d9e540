//! Running a native process for a node: its own process group, capped capture of stdout and
//! stderr, a deadline, and no survivors: when the command ends, times out or the run is
//! cancelled, the whole group is killed.

use crate::bindings::pflow::node::types::NodeError;
use crate::error::category;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How often a waiting command checks for Ctrl-C.
const CANCEL_POLL: Duration = Duration::from_millis(50);

pub struct Request {
    pub argv: Vec<String>,
    pub stdin: Option<Vec<u8>>,
    pub cwd: Option<String>,
    pub env: Vec<(String, String)>,
    /// The command's own timeout, if it has one.
    pub timeout: Option<Duration>,
    /// When the node's wall time runs out.
    pub deadline: Instant,
    /// Cap on each captured stream.
    pub capture_bytes: u64,
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

    let mut command = Command::new(&program);
    command
        .args(&request.argv[1..])
        .envs(request.env.iter().map(|(k, v)| (k, v)))
        .stdin(if request.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so that everything it starts can be killed together, and so that the
        // terminal's Ctrl-C reaches the host, which then ends the group itself.
        .process_group(0);
    if let Some(cwd) = &request.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(|error| CommandFailure::Spawn {
        program: program.clone(),
        error,
    })?;
    let group = child.id() as libc::pid_t;

    let stdin_writer = request.stdin.map(|bytes| {
        let mut pipe = child.stdin.take().expect("stdin was piped");
        // A command that does not read its input closes the pipe early; that is not an error.
        thread::spawn(move || drop(pipe.write_all(&bytes)))
    });
    let stdout = capture(child.stdout.take(), request.capture_bytes);
    let stderr = capture(child.stderr.take(), request.capture_bytes);

    let waited = wait(child, deadline, cancel);
    // Whatever the command left running in its group goes with it.
    kill_group(group);
    if let Some(writer) = stdin_writer {
        let _ = writer.join();
    }
    let (stdout, stdout_truncated) = join_capture(stdout);
    let (stderr, stderr_truncated) = join_capture(stderr);
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
        stdout,
        stderr,
        exit_code: exit_code(status),
        stdout_truncated,
        stderr_truncated,
    })
}

enum Waited {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

/// Waits on another thread, so that the exit is seen the moment it happens, while this one
/// watches the deadline and Ctrl-C.
fn wait(mut child: Child, deadline: Instant, cancel: &AtomicBool) -> Waited {
    let group = child.id() as libc::pid_t;
    let (sender, receiver) = mpsc::channel();
    let waiter = thread::spawn(move || {
        let _ = sender.send(child.wait());
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
            Ok(Ok(status)) => break Waited::Exited(status),
            // wait() itself failing leaves nothing to wait for; report it as a kill.
            Ok(Err(_)) => break Waited::Exited(ExitStatus::from_raw(libc::SIGKILL)),
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Waited::Exited(ExitStatus::from_raw(libc::SIGKILL))
            }
        }
    };
    if !matches!(outcome, Waited::Exited(_)) {
        kill_group(group);
    }
    let _ = waiter.join();
    outcome
}

fn kill_group(group: libc::pid_t) {
    // SAFETY: kill(2) with a negative pid signals the process group we created; a group that
    // no longer exists gives ESRCH, which is fine.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}

fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

type Capture = Option<JoinHandle<(Vec<u8>, bool)>>;

/// Reads a stream to its end, keeping the first `cap` bytes.
fn capture(stream: Option<impl Read + Send + 'static>, cap: u64) -> Capture {
    let mut stream = stream?;
    Some(thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut stream).take(cap).read_to_end(&mut kept);
        let mut rest = [0u8; 8192];
        let mut truncated = false;
        while let Ok(n) = stream.read(&mut rest) {
            if n == 0 {
                break;
            }
            truncated = true;
        }
        (kept, truncated)
    }))
}

fn join_capture(capture: Capture) -> (Vec<u8>, bool) {
    capture
        .and_then(|handle| handle.join().ok())
        .unwrap_or_default()
}
