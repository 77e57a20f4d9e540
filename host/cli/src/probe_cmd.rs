//! `pflow-host probe TYPE key=value ...`: one node, run in the sandbox (dry unless `--live`),
//! to learn what it really returns: the template paths of its output with their types and
//! sizes, under an execution id that `read-fields` reads values from.

use crate::run_cmd::{run_recorded, Recorded};
use crate::{exit, OutputFormat};
use anyhow::{bail, Result};
use clap::Args;
use pflow_ir::template::Template;
use pflow_ir::Workflow;
use pflow_runtime::dry::{DryRun, Effect, Skipped};
use pflow_runtime::home::PflowHome;
use pflow_runtime::runs::{Runs, RunsError};
use pflow_runtime::{CancelToken, Host, NodeFailure, Status};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The node's id in the probe's one-node workflow: its paths read `${probe.field}`.
const NODE_ID: &str = "probe";
/// Paths listed at most; deeper or longer structure is summarised.
const MAX_PATHS: usize = 60;
const MAX_DEPTH: usize = 6;

#[derive(Args)]
pub struct ProbeArgs {
    /// The node type, e.g. `http` or `mcp-github-list-issues`.
    node_type: String,
    /// Params as key=value; a value that is JSON (`5`, `true`, `{"a": 1}`) keeps its type.
    #[arg(value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// Run for real: commands, writes, requests and tools take effect.
    #[arg(long)]
    live: bool,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
}

#[derive(Args)]
pub struct ReadFieldsArgs {
    /// A probe's execution id or a run id (`last` for the latest).
    execution: String,
    /// Paths such as `probe.response.items[0].name` (a run's: `node.field`).
    #[arg(required = true)]
    paths: Vec<String>,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
}

/// `key=value` params: a value that is JSON keeps its type, unless the node declares the param
/// as text (`command=true` is the command `true`, not a boolean).
fn params_of(host: &Host, node_type: &str, pairs: &[String]) -> Result<Map<String, Value>> {
    use pflow_validate::NodeCatalog;
    let declared = host.registry.params(node_type).unwrap_or_default();
    let mut params = Map::new();
    for pair in pairs {
        let Some((key, text)) = pair.split_once('=') else {
            bail!("Param '{pair}' must be written key=value");
        };
        let is_text = declared
            .iter()
            .any(|port| port.name == key && matches!(port.type_name.as_str(), "str" | "string"));
        let value = match serde_json::from_str(text) {
            Ok(value) if !is_text => value,
            _ => Value::String(text.into()),
        };
        params.insert(key.to_string(), value);
    }
    Ok(params)
}

/// What a probe saw: the node's real output as template paths, and what a dry probe did not do.
#[derive(Serialize)]
pub struct Probe {
    pub execution_id: String,
    pub mode: &'static str,
    pub status: Status,
    pub error: Option<NodeFailure>,
    pub paths: Vec<OutputPath>,
    pub not_done: Vec<Skipped>,
    pub would_change: Vec<Effect>,
}

#[derive(Serialize)]
pub struct OutputPath {
    pub path: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// Characters, items or keys.
    pub size: Option<usize>,
}

/// Why a probe did not run.
pub enum ProbeRefused {
    /// The node and its params fail static validation.
    Invalid(pflow_validate::Report),
    /// It could not start: the message says why.
    Cannot(String),
}

/// Runs `node_type` with `params` as a one-node workflow, recorded like a run.
pub fn run_probe(
    host: &Host,
    node_type: &str,
    params: Map<String, Value>,
    live: bool,
    cancel: &CancelToken,
) -> Result<Probe, ProbeRefused> {
    let ir = json!({"nodes": [{"id": NODE_ID, "type": node_type, "params": params}]});
    let checked = pflow_validate::validate(&ir, &host.registry, None);
    if !checked.valid {
        return Err(ProbeRefused::Invalid(checked));
    }
    let workflow = Workflow::from_value(ir).map_err(|e| ProbeRefused::Cannot(e.to_string()))?;
    let dry = (!live).then(|| Arc::new(DryRun::default()));
    let recorded = Recorded {
        dry: dry.clone(),
        ..Recorded::new(&workflow, None)
    };
    let (report, execution_id) = run_recorded(host, recorded, cancel, &mut |_| {})
        .map_err(|e| ProbeRefused::Cannot(e.to_string()))?;
    let outputs = report.state.store.get(NODE_ID).unwrap_or(&Value::Null);
    let mut paths = Vec::new();
    walk(outputs, NODE_ID, 0, &mut paths);
    Ok(Probe {
        execution_id,
        mode: if live { "live" } else { "dry" },
        status: report.status,
        error: report.error,
        paths,
        not_done: dry.as_ref().map(|d| d.skipped()).unwrap_or_default(),
        would_change: dry.as_ref().map(|d| d.effects()).unwrap_or_default(),
    })
}

pub fn probe(host: &Host, args: ProbeArgs) -> Result<u8> {
    let params = params_of(host, &args.node_type, &args.params)?;
    let cancel = crate::signals::cancel_on_interrupt();
    let probe = match run_probe(host, &args.node_type, params, args.live, &cancel) {
        Ok(probe) => probe,
        Err(ProbeRefused::Invalid(checked)) => {
            crate::validate_cmd::print_issues(&checked);
            return Ok(exit::CANNOT_START);
        }
        Err(ProbeRefused::Cannot(error)) => {
            eprintln!("error: {error}");
            return Ok(exit::CANNOT_START);
        }
    };
    if args.output_format == OutputFormat::Json {
        outln!("{}", serde_json::to_string_pretty(&probe)?);
        return Ok(exit::of(probe.status));
    }
    let execution = &probe.execution_id;
    outln!("execution {execution} ({}): {:?}", probe.mode, probe.status);
    if let Some(error) = &probe.error {
        outln!("  error [{}]: {}", error.category, error.message);
    }
    for path in &probe.paths {
        outln!(
            "  ${{{}}}  {}{}",
            path.path,
            path.kind,
            path.size.map(|s| format!(" ({s})")).unwrap_or_default()
        );
    }
    for skip in &probe.not_done {
        outln!("  not done ({}): {}", skip.capability, skip.reason);
    }
    for effect in &probe.would_change {
        outln!("  would be {:?}: {}", effect.change, effect.path.display());
    }
    outln!("Read values with: pflow-host read-fields {execution} {NODE_ID}.<path>");
    Ok(exit::of(probe.status))
}

/// Every path under `value` with its type and size (characters, items or keys), as template
/// paths: objects by field, lists by their first item, JSON held in text walked into.
fn walk(value: &Value, path: &str, depth: usize, out: &mut Vec<OutputPath>) {
    if out.len() >= MAX_PATHS {
        return;
    }
    let (kind, size) = match value {
        Value::Null => ("null", None),
        Value::Bool(_) => ("bool", None),
        Value::Number(n) if n.is_f64() => ("float", None),
        Value::Number(_) => ("int", None),
        Value::String(text) => ("str", Some(text.chars().count())),
        Value::Array(items) => ("list", Some(items.len())),
        Value::Object(map) => ("dict", Some(map.len())),
    };
    if depth > 0 {
        out.push(OutputPath {
            path: path.to_string(),
            kind: kind.to_string(),
            size,
        });
    }
    if depth >= MAX_DEPTH {
        return;
    }
    match value {
        Value::String(text) => {
            if let Ok(parsed @ (Value::Object(_) | Value::Array(_))) =
                serde_json::from_str::<Value>(text.trim())
            {
                if let Some(last) = out.last_mut() {
                    last.kind = "str (JSON)".to_string();
                }
                walk_children(&parsed, path, depth, out);
            }
        }
        other => walk_children(other, path, depth, out),
    }
}

/// The fields of an object, or the first item of a list.
fn walk_children(value: &Value, path: &str, depth: usize, out: &mut Vec<OutputPath>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                walk(child, &format!("{path}.{key}"), depth + 1, out);
            }
        }
        Value::Array(items) => {
            if let Some(first) = items.first() {
                walk(first, &format!("{path}[0]"), depth + 1, out);
            }
        }
        _ => {}
    }
}

/// The values at `paths` (`node.field[0].x`, with or without `${}`) of a probe's or a run's
/// output, and a message for each path that has none.
pub fn read_values(
    home: &PflowHome,
    execution: &str,
    paths: &[String],
) -> Result<(Map<String, Value>, Vec<String>), RunsError> {
    let checkpoint = Runs::new(home.runs_dir()).load(execution)?;
    let store = &checkpoint.state.store;
    let mut values = Map::new();
    let mut missing = Vec::new();
    for path in paths {
        let template = format!(
            "${{{}}}",
            path.trim_start_matches("${").trim_end_matches('}')
        );
        match Template::parse(&template).resolve(store, true) {
            Ok(value) => {
                values.insert(path.clone(), value);
            }
            Err(error) => missing.push(error.message),
        }
    }
    Ok((values, missing))
}

pub fn read_fields(home: &PflowHome, args: ReadFieldsArgs) -> Result<u8> {
    let (values, missing) = match read_values(home, &args.execution, &args.paths) {
        Ok(read) => read,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(exit::CANNOT_START);
        }
    };
    for message in &missing {
        eprintln!("error: {message}");
    }
    if args.output_format == OutputFormat::Json {
        outln!("{}", serde_json::to_string_pretty(&values)?);
    } else {
        for (path, value) in &values {
            match value {
                Value::String(text) => outln!("{path} = {text}"),
                other => outln!("{path} = {}", serde_json::to_string_pretty(other)?),
            }
        }
    }
    Ok(if missing.is_empty() { 0 } else { exit::FAILED })
}
