//! `pflow-host run FILE.json [key=value ...]`.

use crate::display::{self, Progress};
use crate::{exit, OutputFormat};
use anyhow::{bail, Context, Result};
use clap::Args;
use pflow_ir::Workflow;
use pflow_runtime::{Host, StartError};
use serde_json::{json, Map, Value};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Args)]
pub struct RunArgs {
    /// The workflow, in pflow's JSON IR.
    file: PathBuf,
    /// Workflow inputs as key=value (converted to each input's declared type).
    #[arg(value_name = "KEY=VALUE")]
    inputs: Vec<String>,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
}

pub fn run(host: &Host, args: RunArgs) -> Result<u8> {
    let json_output = args.output_format == OutputFormat::Json;
    let workflow = match load_workflow(&args.file) {
        Ok(workflow) => workflow,
        Err(error) => {
            return Ok(cannot_start(
                json_output,
                "invalid_workflow",
                &format!("{error:#}"),
            ))
        }
    };
    let mut inputs = match parse_inputs(&args.inputs) {
        Ok(inputs) => inputs,
        Err(error) => {
            return Ok(cannot_start(
                json_output,
                "invalid_input",
                &format!("{error:#}"),
            ))
        }
    };
    read_piped_stdin(&workflow, &mut inputs)?;

    crate::signals::cancel_on_interrupt(host.sandbox.cancel_flag());

    let mut progress = Progress::new(!json_output);
    let report = match host
        .executor()
        .run(&workflow, inputs, &mut |event| progress.event(event))
    {
        Ok(report) => report,
        Err(error) => {
            progress.finish();
            return Ok(cannot_start(
                json_output,
                start_error_category(&error),
                &error.to_string(),
            ));
        }
    };
    progress.finish();

    if json_output {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        display::print_report(&report);
    }
    Ok(exit::of(report.status))
}

/// A workflow file, or a saved workflow (`~/.pflow/workflows/NAME.json`, the IR wrapped with
/// its name and description).
fn load_workflow(path: &std::path::Path) -> Result<Workflow> {
    let text = crate::workflow_file::read(path)?;
    Workflow::from_json(&text)
        .or_else(|error| {
            // Only a file that is not plain IR pays for the second parse.
            match serde_json::from_str::<pflow_planner::SavedWorkflow>(&text) {
                Ok(saved) if saved.ir.is_object() => Workflow::from_json(&saved.ir.to_string()),
                _ => Err(error),
            }
        })
        .with_context(|| format!("{}", path.display()))
}

/// `key=value` pairs; the value stays text until the workflow's declared types convert it.
pub(crate) fn parse_inputs(pairs: &[String]) -> Result<Map<String, Value>> {
    let mut inputs = Map::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("Input '{pair}' must be written key=value");
        };
        if key.is_empty() {
            bail!("Input '{pair}' has no name before '='");
        }
        if inputs
            .insert(key.to_string(), Value::String(value.to_string()))
            .is_some()
        {
            bail!("Input '{key}' is given twice");
        }
    }
    Ok(inputs)
}

/// pflow gives piped stdin to the input declared with `stdin: true`, unless it is given.
fn read_piped_stdin(workflow: &Workflow, inputs: &mut Map<String, Value>) -> Result<()> {
    let Some((name, _)) = workflow.inputs.iter().find(|(_, spec)| spec.stdin) else {
        return Ok(());
    };
    let stdin = std::io::stdin();
    if inputs.contains_key(name) || stdin.is_terminal() {
        return Ok(());
    }
    let text = crate::workflow_file::read_bounded(stdin.lock(), 0, "Standard input")?;
    if !text.is_empty() {
        inputs.insert(name.clone(), Value::String(text));
    }
    Ok(())
}

fn start_error_category(error: &StartError) -> &'static str {
    match error {
        StartError::MissingInputs(_) => "missing_input",
        StartError::UnknownInput { .. } | StartError::BadInputValue { .. } => "invalid_input",
        StartError::UnknownNodeType { .. } => "unknown_node_type",
    }
}

fn cannot_start(json_output: bool, category: &str, message: &str) -> u8 {
    if json_output {
        let document = json!({
            "status": "failed",
            "outputs": {},
            "nodes": [],
            "error": {"source": "host", "category": category, "fixable": false, "message": message},
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&document).unwrap_or_default()
        );
    } else {
        eprintln!("error: {message}");
    }
    exit::CANNOT_START
}
