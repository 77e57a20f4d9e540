//! The `process` capability: run a native program on the host, under the node's time limit and
//! the host's process policy.

use crate::abi::{read_node_error, read_u32, read_u8, take_bytes};
use crate::NodeError;

#[link(wasm_import_module = "pflow:node/process@0.1.0")]
extern "C" {
    // `run: func(command: command) -> result<output, node-error>` with `command` flattened
    // field by field and a pointer to the return area last.
    #[link_name = "run"]
    fn import_run(
        argv_ptr: *const [usize; 2],
        argv_len: usize,
        stdin_present: i32,
        stdin_ptr: *const u8,
        stdin_len: usize,
        cwd_present: i32,
        cwd_ptr: *const u8,
        cwd_len: usize,
        env_ptr: *const [usize; 4],
        env_len: usize,
        timeout_present: i32,
        timeout_ms: u32,
        return_area: *mut u8,
    );
}

/// A command to run: a program and its arguments, no shell unless you ask for one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Command {
    pub argv: Vec<String>,
    pub stdin: Option<Vec<u8>>,
    pub cwd: Option<String>,
    pub env: Vec<(String, String)>,
    pub timeout_ms: Option<u32>,
}

impl Command {
    pub fn new(program: impl Into<String>) -> Self {
        Command {
            argv: vec![program.into()],
            ..Command::default()
        }
    }

    /// `sh -c script`, as pflow's shell node runs its `command`.
    pub fn shell(script: impl Into<String>) -> Self {
        Command::new("sh").arg("-c").arg(script)
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.argv.push(arg.into());
        self
    }

    /// Runs the command to completion; see [`run`].
    pub fn run(&self) -> Result<Output, NodeError> {
        run(self)
    }
}

/// What a finished process left behind.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The exit status; 128 + N when killed by signal N.
    pub exit_code: i32,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

/// Runs `command` to completion. A non-zero exit is not an error here; a process that outlives
/// its timeout is, with category `timeout`, and so is a command the policy refuses
/// (`policy_denied`).
pub fn run(command: &Command) -> Result<Output, NodeError> {
    let argv: Vec<[usize; 2]> = command
        .argv
        .iter()
        .map(|a| [a.as_ptr() as usize, a.len()])
        .collect();
    let env: Vec<[usize; 4]> = command
        .env
        .iter()
        .map(|(k, v)| [k.as_ptr() as usize, k.len(), v.as_ptr() as usize, v.len()])
        .collect();
    let (stdin_present, stdin_ptr, stdin_len) = match &command.stdin {
        Some(bytes) => (1, bytes.as_ptr(), bytes.len()),
        None => (0, std::ptr::null(), 0),
    };
    let (cwd_present, cwd_ptr, cwd_len) = match &command.cwd {
        Some(cwd) => (1, cwd.as_ptr(), cwd.len()),
        None => (0, std::ptr::null(), 0),
    };
    let (timeout_present, timeout_ms) = match command.timeout_ms {
        Some(ms) => (1, ms),
        None => (0, 0),
    };
    // result<output, node-error>: discriminant @0, payload @4; node-error is the larger case.
    let mut area = [0u32; 13];
    let base = area.as_mut_ptr() as *mut u8;
    unsafe {
        import_run(
            argv.as_ptr(),
            argv.len(),
            stdin_present,
            stdin_ptr,
            stdin_len,
            cwd_present,
            cwd_ptr,
            cwd_len,
            env.as_ptr(),
            env.len(),
            timeout_present,
            timeout_ms,
            base,
        );
        let payload = base.add(4);
        if read_u8(base, 0) == 0 {
            // output { stdout @0, stderr @8, exit-code @16, stdout-truncated @20,
            //          stderr-truncated @21 }
            Ok(Output {
                stdout: take_bytes(
                    read_u32(payload, 0) as *mut u8,
                    read_u32(payload, 4) as usize,
                ),
                stderr: take_bytes(
                    read_u32(payload, 8) as *mut u8,
                    read_u32(payload, 12) as usize,
                ),
                exit_code: read_u32(payload, 16) as i32,
                stdout_truncated: read_u8(payload, 20) != 0,
                stderr_truncated: read_u8(payload, 21) != 0,
            })
        } else {
            Err(read_node_error(payload))
        }
    }
}
