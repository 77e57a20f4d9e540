//! pflow's `shell` node. The command runs through `sh -c` on the host via the `process`
//! capability; this component only shapes params and results, so the host's process policy and
//! limits apply to every command a workflow runs.

use pflow_sdk::process::Command;
use pflow_sdk::{json, Node, NodeError, NodeSpec, Outcome, Params, Value};

/// pflow's default: 30 seconds per command.
const DEFAULT_TIMEOUT_SECONDS: f64 = 30.0;
/// How much of stderr an error message quotes.
const ERROR_EXCERPT_CHARS: usize = 500;

struct Shell;

impl Node for Shell {
    fn describe() -> NodeSpec {
        NodeSpec::new(
            "shell",
            "Run a shell command. stdin may be text or data (dicts and lists are passed as JSON); \
             a non-zero exit fails the node unless ignore_errors is true.",
        )
        .param("command", "string", "Command line, run with sh -c", true)
        .param("stdin", "any", "Standard input; dicts and lists become JSON", false)
        .param("cwd", "string", "Working directory", false)
        .param("env", "dict", "Extra environment variables", false)
        .param("timeout", "int", "Seconds before the command is killed (default 30)", false)
        .param("ignore_errors", "bool", "Succeed even when the command exits non-zero", false)
        .param(
            "strip_newline",
            "bool",
            "Strip trailing newlines from stdout (default true; stderr is never stripped)",
            false,
        )
        .output("stdout", "str", "Standard output (base64 when not UTF-8 text)", true)
        .output("stdout_is_binary", "bool", "Whether stdout is base64 of binary data", true)
        .output("stderr", "str", "Standard error (base64 when not UTF-8 text)", true)
        .output("stderr_is_binary", "bool", "Whether stderr is base64 of binary data", true)
        .output("exit_code", "int", "Exit status (128 + N when killed by signal N)", true)
        .output("command", "str", "The command that ran", true)
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        let script = params.str("command")?;
        let mut command = Command::shell(script);
        command.stdin = params.get("stdin").map(stdin_bytes);
        command.cwd = params.opt_str("cwd")?.map(str::to_string);
        command.env = env_pairs(&params)?;
        let seconds = params.f64_opt("timeout")?.unwrap_or(DEFAULT_TIMEOUT_SECONDS);
        command.timeout_ms = Some((seconds * 1000.0).min(u32::MAX as f64) as u32);
        let ignore_errors = params.bool_or("ignore_errors", false)?;
        let strip_newline = params.bool_or("strip_newline", true)?;

        let output = command.run()?;
        let (mut stdout, stdout_is_binary) = text_or_base64(&output.stdout);
        let (stderr, stderr_is_binary) = text_or_base64(&output.stderr);
        if strip_newline && !stdout_is_binary {
            stdout.truncate(stdout.trim_end_matches('\n').len());
        }
        // The host stops reading (and the command gets SIGPIPE) once stdout and stderr together
        // pass the node's output limit: what was kept is not the command's output, so it is
        // not handed on as if it were.
        if output.stdout_truncated || output.stderr_truncated {
            let streams = match (output.stdout_truncated, output.stderr_truncated) {
                (true, true) => "stdout and stderr",
                (true, false) => "stdout",
                _ => "stderr",
            };
            return Err(NodeError::new(
                "output_limit",
                format!(
                    "The command wrote more than the node's output limit ({} bytes kept, cut off in {}); raise sandbox.output_mb or make it print less.",
                    output.stdout.len() + output.stderr.len(),
                    streams
                ),
            )
            .attempted(vec![script.to_string()]));
        }
        if output.exit_code != 0 && !ignore_errors {
            let mut error = NodeError::new(
                "command_failed",
                match excerpt(stderr.trim_end(), "") {
                    excerpt if excerpt.is_empty() => {
                        format!("Command failed with exit code {}", output.exit_code)
                    }
                    excerpt => format!(
                        "Command failed with exit code {}: {}",
                        output.exit_code, excerpt
                    ),
                },
            )
            .fixable(true)
            .attempted(vec![script.to_string()]);
            if !stdout.is_empty() {
                error = error.sample(excerpt(&stdout, ""));
            }
            return Err(error);
        }
        Ok(json!({
            "stdout": stdout,
            "stdout_is_binary": stdout_is_binary,
            "stderr": stderr,
            "stderr_is_binary": stderr_is_binary,
            "exit_code": output.exit_code,
            "command": script,
        })
        .into())
    }
}

/// Output as text, or as base64 (and true) when it is not UTF-8, as pflow does.
fn text_or_base64(bytes: &[u8]) -> (String, bool) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_string(), false),
        Err(_) => (pflow_sdk::base64::encode(bytes), true),
    }
}

/// Text goes in as is; structured data as JSON, as pflow does.
fn stdin_bytes(value: &Value) -> Vec<u8> {
    match value {
        Value::String(text) => text.clone().into_bytes(),
        other => pflow_sdk::python_json::to_string(other).into_bytes(),
    }
}

fn env_pairs(params: &Params) -> Result<Vec<(String, String)>, NodeError> {
    let map = match params.get("env") {
        None => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(NodeError::bad_params(format!(
                "Parameter 'env' must be an object of variable names to values, got {}",
                other
            )))
        }
    };
    Ok(map
        .iter()
        .map(|(key, value)| {
            let value = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (key.clone(), value)
        })
        .collect())
}

fn excerpt(text: &str, when_empty: &str) -> String {
    if text.is_empty() {
        return when_empty.to_string();
    }
    match text.char_indices().nth(ERROR_EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

pflow_sdk::export_node!(Shell);
