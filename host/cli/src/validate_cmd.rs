//! `pflow-host validate FILE.json [key=value ...]`: every static problem, without running.

use crate::run_cmd::parse_inputs;
use crate::{exit, OutputFormat};
use anyhow::{Context, Result};
use clap::Args;
use pflow_runtime::Host;
use pflow_validate::{validate_text, Issue};
use std::path::PathBuf;

#[derive(Args)]
pub struct ValidateArgs {
    /// The workflow, in pflow's JSON IR.
    file: PathBuf,
    /// Input values as key=value; when given, required inputs without a value are errors.
    #[arg(value_name = "KEY=VALUE")]
    inputs: Vec<String>,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
}

pub fn run(host: &Host, args: ValidateArgs) -> Result<u8> {
    let text = match std::fs::read_to_string(&args.file)
        .with_context(|| format!("Cannot read workflow file '{}'", args.file.display()))
    {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: {error:#}");
            return Ok(exit::CANNOT_START);
        }
    };
    let inputs = if args.inputs.is_empty() {
        None
    } else {
        match parse_inputs(&args.inputs) {
            Ok(inputs) => Some(inputs),
            Err(error) => {
                eprintln!("error: {error:#}");
                return Ok(exit::CANNOT_START);
            }
        }
    };
    let report = validate_text(&text, &host.registry, inputs.as_ref());
    if args.output_format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for issue in report.errors.iter().chain(&report.warnings) {
            print_issue(issue);
        }
        let summary = match (report.errors.len(), report.warnings.len()) {
            (0, 0) => "Workflow is valid.".to_string(),
            (0, w) => format!("Workflow is valid, with {w} warning(s)."),
            (e, w) => format!("Workflow is invalid: {e} error(s), {w} warning(s)."),
        };
        println!("{summary}");
    }
    Ok(if report.valid { 0 } else { exit::FAILED })
}

fn print_issue(issue: &Issue) {
    let mut lines = issue.to_string();
    lines = lines.replace('\n', "\n  ");
    println!("{lines}\n");
}
