//! `pflow-host validate FILE.json [key=value ...]`: every static problem, without running.

use crate::run_cmd::parse_inputs;
use crate::{exit, OutputFormat};
use anyhow::Result;
use clap::Args;
use pflow_runtime::runtime_validation::{validate_runtime, RuntimeRoute, RuntimeValidation};
use pflow_runtime::Host;
use pflow_validate::{validate_json_text, validate_text, Issue};
use std::path::PathBuf;

#[derive(Args)]
pub struct ValidateArgs {
    /// The workflow: a `.pflow.md` file or pflow's JSON IR.
    file: PathBuf,
    /// Input values as key=value; when given, required inputs without a value are errors.
    #[arg(value_name = "KEY=VALUE")]
    inputs: Vec<String>,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
    /// Run the workflow once and report what goes wrong at run time (dry: side effects are
    /// contained or skipped, and listed).
    #[arg(long)]
    runtime: bool,
    /// With --runtime: run everything for real.
    #[arg(long, requires = "runtime")]
    live: bool,
    /// With --runtime: how many runtime fixes were already tried (for the planner's routing).
    #[arg(long, default_value_t = 0, requires = "runtime")]
    attempts: u32,
}

pub fn run(host: &Host, args: ValidateArgs) -> Result<u8> {
    let text = match crate::workflow_file::read(&args.file) {
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
    if args.runtime {
        return runtime(host, &args, &text, inputs.unwrap_or_default());
    }
    let report = if crate::workflow_file::is_json(&args.file) {
        validate_json_text(text, &host.registry, inputs.as_ref())
    } else {
        validate_text(text, &host.registry, inputs.as_ref())
    };
    if args.output_format == OutputFormat::Json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for issue in report.errors.iter().chain(&report.warnings) {
            print_issue(issue);
        }
        let summary = match (report.errors.len(), report.warnings.len()) {
            (0, 0) => "Workflow is valid.".to_string(),
            (0, w) => format!("Workflow is valid, with {w} warning(s)."),
            (e, w) => format!("Workflow is invalid: {e} error(s), {w} warning(s)."),
        };
        outln!("{summary}");
    }
    Ok(if report.valid { 0 } else { exit::FAILED })
}

/// The error category of a refused workflow: an unknown node type, or any other problem.
pub(crate) fn refused_category(report: &pflow_validate::Report) -> &'static str {
    match report.errors.first().map(|issue| issue.kind) {
        Some(pflow_validate::IssueKind::NodeType) => "unknown_node_type",
        _ => "invalid_workflow",
    }
}

/// Every error of a refused workflow, in the words of `validate`.
pub(crate) fn refused_message(report: &pflow_validate::Report) -> String {
    report
        .errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A refused workflow's errors, for `run`: the words of `validate`, on stderr.
pub(crate) fn print_issues(report: &pflow_validate::Report) {
    eprintln!(
        "error: the workflow is invalid ({} error(s)); nothing ran. `pflow-host validate` shows the same:",
        report.errors.len()
    );
    for issue in &report.errors {
        eprintln!("  {}", issue.to_string().replace('\n', "\n    "));
    }
}

fn print_issue(issue: &Issue) {
    let mut lines = issue.to_string();
    lines = lines.replace('\n', "\n  ");
    outln!("{lines}\n");
}

fn runtime(
    host: &Host,
    args: &ValidateArgs,
    text: &str,
    inputs: serde_json::Map<String, serde_json::Value>,
) -> Result<u8> {
    let workflow = match crate::workflow_file::parse(&args.file, text) {
        Ok(workflow) => workflow,
        Err(error) => {
            // A workflow that cannot be parsed cannot be fixed at run time.
            let issue =
                pflow_runtime::NodeFailure::new("compile", "invalid_workflow", error.to_string());
            if args.output_format == OutputFormat::Json {
                let document = serde_json::json!({
                    "route": RuntimeRoute::FailedRuntime,
                    "runtime_attempts": args.attempts,
                    "runtime_errors": [issue],
                });
                outln!("{}", serde_json::to_string_pretty(&document)?);
            } else {
                eprintln!("error: {error}");
            }
            return Ok(exit::FAILED);
        }
    };
    let cancel = crate::signals::cancel_on_interrupt();
    let validation = validate_runtime(
        {
            let mut executor = host.executor(&cancel);
            executor.nesting = std::mem::take(&mut executor.nesting).run_of(Some(&args.file));
            executor
        },
        &workflow,
        inputs,
        args.live,
        args.attempts,
    );
    if cancel.is_cancelled() {
        eprintln!("cancelled: runtime validation stopped before it finished");
        return Ok(exit::CANCELLED);
    }
    if args.output_format == OutputFormat::Json {
        outln!("{}", serde_json::to_string_pretty(&validation)?);
    } else {
        print_runtime(&validation);
    }
    Ok(if validation.route == RuntimeRoute::Default {
        0
    } else {
        exit::FAILED
    })
}

fn print_runtime(validation: &RuntimeValidation) {
    let mode = if validation.live { "live" } else { "dry" };
    outln!("Runtime validation ({mode} run): {:?}", validation.route);
    if !validation.executed.is_empty() {
        outln!("  ran: {}", validation.executed.join(", "));
    }
    for unverified in &validation.unverified {
        outln!(
            "  not run for real: {} ({})",
            unverified.node_id,
            unverified.reason
        );
    }
    for effect in &validation.effects {
        outln!(
            "  {} would be {:?}: {}",
            effect.node_id,
            effect.change,
            effect.path.display()
        );
    }
    for template in &validation.unverified_templates {
        outln!("  unverified template: {template}");
    }
    for error in &validation.runtime_errors {
        let fixable = if error.fixable {
            "fixable"
        } else {
            "not fixable"
        };
        outln!(
            "  {} ({}) [{}, {fixable}]: {}",
            error.node_id,
            error.node_type,
            error.category,
            error.message
        );
    }
}
