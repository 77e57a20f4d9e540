//! `pflow-host probe TYPE key=value ...`: one node, run in the sandbox (dry unless `--live`),
//! to learn what it really returns: the template paths of its output with their types and
//! sizes, under an execution id that `read-fields` reads values from.

use crate::{exit, OutputFormat};
use anyhow::{bail, Result};
use clap::Args;
use pflow_ir::template::Template;
use pflow_ir::Workflow;
use pflow_runtime::dry::DryRun;
use pflow_runtime::runs::{self, Recorder, RunMeta, RunStatus, Runs};
use pflow_runtime::Host;
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

fn params_of(pairs: &[String]) -> Result<Map<String, Value>> {
    let mut params = Map::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("Param '{pair}' must be written key=value");
        };
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
        params.insert(key.to_string(), value);
    }
    Ok(params)
}

pub fn probe(host: &Host, args: ProbeArgs) -> Result<u8> {
    let params = params_of(&args.params)?;
    let ir = json!({"nodes": [{"id": NODE_ID, "type": args.node_type, "params": params}]});
    let checked = pflow_validate::validate(&ir, &host.registry, None);
    if !checked.valid {
        crate::validate_cmd::print_issues(&checked);
        return Ok(exit::CANNOT_START);
    }
    let workflow = Workflow::from_value(ir)?;
    let cancel = crate::signals::cancel_on_interrupt();
    let mut executor = host.executor(&cancel);
    let dry = (!args.live).then(|| Arc::new(DryRun::default()));
    executor.dry = dry.clone();
    let runs = Runs::new(host.home.runs_dir());
    let state = executor.start(&workflow, Map::new())?;
    let started_at = runs::now();
    let meta = RunMeta {
        run_id: Runs::new_id(),
        status: RunStatus::Running,
        workflow_path: None,
        workflow: serde_json::to_value(&workflow)?,
        inputs: Map::new(),
        started_at,
        updated_at: started_at,
    };
    let mut recorder = Recorder::start(&runs, meta, &state);
    let report = executor.run_from(&workflow, state, None, &mut |_| {}, &mut |state, node| {
        recorder.step(state, node)
    })?;
    recorder.finish(report.status, &report.state);
    let execution = recorder.meta.run_id.clone();
    let outputs = report
        .state
        .store
        .get(NODE_ID)
        .cloned()
        .unwrap_or(Value::Null);
    let mut paths = Vec::new();
    walk(&outputs, NODE_ID, 0, &mut paths);
    let skipped = dry.as_ref().map(|d| d.skipped()).unwrap_or_default();
    let effects = dry.as_ref().map(|d| d.effects()).unwrap_or_default();
    if args.output_format == OutputFormat::Json {
        let paths: Vec<Value> = paths
            .iter()
            .map(|(path, kind, size)| json!({"path": path, "type": kind, "size": size}))
            .collect();
        let document = json!({
            "execution_id": execution,
            "mode": if args.live { "live" } else { "dry" },
            "status": report.status,
            "error": report.error,
            "paths": paths,
            "not_done": skipped,
            "would_change": effects,
        });
        println!("{}", serde_json::to_string_pretty(&document)?);
    } else {
        let mode = if args.live { "live" } else { "dry" };
        println!("execution {execution} ({mode}): {:?}", report.status);
        if let Some(error) = &report.error {
            println!("  error [{}]: {}", error.category, error.message);
        }
        for (path, kind, size) in &paths {
            println!(
                "  ${{{path}}}  {kind}{}",
                size.map(|s| format!(" ({s})")).unwrap_or_default()
            );
        }
        for skip in &skipped {
            println!("  not done ({}): {}", skip.capability, skip.reason);
        }
        for effect in &effects {
            println!("  would be {:?}: {}", effect.change, effect.path.display());
        }
        println!("Read values with: pflow-host read-fields {execution} {NODE_ID}.<path>");
    }
    Ok(exit::of(report.status))
}

/// Every path under `value` with its type and size (characters, items or keys), as template
/// paths: objects by field, lists by their first item, JSON held in text walked into.
fn walk(value: &Value, path: &str, depth: usize, out: &mut Vec<(String, String, Option<usize>)>) {
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
        out.push((path.to_string(), kind.to_string(), size));
    }
    if depth >= MAX_DEPTH {
        return;
    }
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
        Value::String(text) => {
            if let Ok(parsed @ (Value::Object(_) | Value::Array(_))) =
                serde_json::from_str::<Value>(text.trim())
            {
                if let Some(last) = out.last_mut() {
                    last.1 = "str (JSON)".to_string();
                }
                match &parsed {
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
        }
        _ => {}
    }
}

pub fn read_fields(host_home: &pflow_runtime::home::PflowHome, args: ReadFieldsArgs) -> Result<u8> {
    let checkpoint = match Runs::new(host_home.runs_dir()).load(&args.execution) {
        Ok(checkpoint) => checkpoint,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(exit::CANNOT_START);
        }
    };
    let store = &checkpoint.state.store;
    let mut values = Map::new();
    let mut missing = false;
    for path in &args.paths {
        let template = format!(
            "${{{}}}",
            path.trim_start_matches("${").trim_end_matches('}')
        );
        match Template::parse(&template).resolve(store, true) {
            Ok(value) => {
                values.insert(path.clone(), value);
            }
            Err(error) => {
                missing = true;
                eprintln!("error: {}", error.message);
            }
        }
    }
    if args.output_format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(&values)?);
    } else {
        for (path, value) in &values {
            match value {
                Value::String(text) => println!("{path} = {text}"),
                other => println!("{path} = {}", serde_json::to_string_pretty(other)?),
            }
        }
    }
    Ok(if missing { exit::FAILED } else { 0 })
}
