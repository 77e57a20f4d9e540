//! `pflow-host "request" [key=value ...]`: plan a workflow with an LLM, show what its dry run did
//! not do, run it for real (after a yes), and save it. `pflow-host plan "request"` stops after
//! planning.

use crate::plan_display::{undone_by_dry_run, PlanProgress};
use crate::run_cmd::parse_inputs;
use crate::{display, exit, OutputFormat};
use anyhow::Result;
use clap::Args;
use pflow_ir::Workflow;
use pflow_llm::{Client, LlmConfig};
use pflow_planner::trace::Trace;
use pflow_planner::{PlanStatus, Planner, PlannerOutput, WorkflowLibrary};
use pflow_runtime::{Host, RunReport, Status};
use serde_json::{json, Value};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

#[derive(Args, Default)]
pub struct PlanArgs {
    /// What the workflow should do, in plain words.
    #[arg(value_name = "REQUEST")]
    pub request: Option<String>,
    /// Input values as key=value; they win over the values the model took from the request.
    #[arg(value_name = "KEY=VALUE")]
    pub inputs: Vec<String>,
    /// The model (`claude-*` goes to Anthropic, other names to an OpenAI-compatible API).
    /// Default: $PFLOW_MODEL, then settings.json llm.model.
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// Run for real without asking. Without a terminal, nothing runs unless this is given.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Only plan: validate and dry-run the workflow, save it, and stop.
    #[arg(long)]
    pub no_run: bool,
}

/// Exit code when planning failed (the last candidate and its errors are printed).
pub const PLANNING_FAILED: u8 = 3;

pub fn run(host: &Host, mut args: PlanArgs) -> Result<u8> {
    let json_output = args.output_format == OutputFormat::Json;
    // `pflow-host count the words` without quotes: the words before the first key=value are
    // the request too.
    let words = args.inputs.iter().take_while(|a| !a.contains('=')).count();
    let mut request = args.request.clone().unwrap_or_default();
    for word in args.inputs.drain(..words) {
        request.push(' ');
        request.push_str(&word);
    }
    if request.trim().is_empty() {
        eprintln!(
            "error: say what the workflow should do: pflow-host \"count the words in README.md\""
        );
        return Ok(exit::CANNOT_START);
    }
    let cli_params = match parse_inputs(&args.inputs) {
        Ok(params) => params,
        Err(error) => {
            eprintln!("error: {error:#}");
            return Ok(exit::CANNOT_START);
        }
    };
    let llm = match LlmConfig::resolve(args.model.as_deref(), &host.settings.llm, |name| {
        std::env::var(name).ok()
    })
    .and_then(Client::new)
    {
        Ok(llm) => llm,
        Err(error) => return Ok(planning_failed(json_output, None, &error.to_string())),
    };
    let library = crate::library_cmd::library(&host.home);
    let mut trace = match Trace::create(&host.home.root().join("traces")) {
        Ok(trace) => Some(trace),
        Err(error) => {
            tracing::warn!("no trace of this plan: {error}");
            None
        }
    };
    let cancel = crate::signals::cancel_on_interrupt();

    let mut progress = PlanProgress::new(!json_output);
    let planner = Planner {
        host,
        llm: &llm,
        library: &library,
        cancel: &cancel,
    };
    let shared = planner.plan(&request, cli_params, &mut |event| {
        progress.event(event);
        if let Some(trace) = trace.as_mut() {
            trace.record(event);
        }
    });
    progress.stop();
    let trace_path = trace.as_ref().map(|t| t.path().to_path_buf());
    let Some(output) = shared.planner_output.clone() else {
        return Ok(planning_failed(
            json_output,
            None,
            "the planner ended without a result",
        ));
    };

    match output.status {
        PlanStatus::Cancelled => {
            if json_output {
                print_json(&json!({"status": "cancelled", "planner": output}));
            } else {
                eprintln!("cancelled: planning stopped");
            }
            return Ok(exit::CANCELLED);
        }
        PlanStatus::Failed => {
            return Ok(report_failure(json_output, &output, trace_path.as_ref()));
        }
        PlanStatus::Planned => {}
    }

    let workflow_json = output.workflow.clone().unwrap_or_default();
    let saved_path = save_plan(&library, &output, &workflow_json, &request);
    let undone = shared
        .runtime_validation
        .as_ref()
        .map(undone_by_dry_run)
        .unwrap_or_default();

    if !json_output {
        print_plan_summary(&output, saved_path.as_ref(), &undone);
    }
    let run_decision = if args.no_run {
        Decision::NotAsked("planned only (--no-run)")
    } else {
        decide(args.yes, &undone)
    };
    let summary = |report: Option<&RunReport>, ran: bool| {
        json!({
            "status": match report.map(|r| r.status) {
                Some(Status::Succeeded) => "succeeded",
                Some(Status::Failed) => "failed",
                Some(Status::Cancelled) => "cancelled",
                None => "planned",
            },
            "ran": ran,
            "saved": saved_path,
            "trace": trace_path,
            "planner": output,
            "dry_run": {"not_done": undone},
            "run": report,
        })
    };
    if let Decision::NotAsked(why) | Decision::Declined(why) = run_decision {
        if json_output {
            print_json(&summary(None, false));
        } else {
            eprintln!("Not run: {why}.");
            if let Some(path) = &saved_path {
                eprintln!(
                    "Run it with: pflow-host run {}{}",
                    path.display(),
                    params_text(&output)
                );
            }
        }
        return Ok(0);
    }

    let workflow = match Workflow::from_json(&workflow_json.to_string()) {
        Ok(workflow) => workflow,
        Err(error) => {
            return Ok(planning_failed(
                json_output,
                Some(&output),
                &error.to_string(),
            ))
        }
    };
    let mut run_progress = display::Progress::new(!json_output);
    let recorded = crate::run_cmd::run_recorded(
        host,
        crate::run_cmd::Recorded {
            inputs: output.execution_params.clone(),
            ..crate::run_cmd::Recorded::new(&workflow, saved_path.clone())
        },
        &cancel,
        &mut |event| run_progress.event(event),
    );
    run_progress.finish();
    let (report, run_id) = match recorded {
        Ok(recorded) => recorded,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(exit::FAILED);
        }
    };
    if json_output {
        let mut document = summary(Some(&report), true);
        document["run_id"] = json!(run_id);
        print_json(&document);
    } else {
        display::print_report(&report);
        crate::run_cmd::print_resume_hint(&report, &run_id);
    }
    Ok(exit::of(report.status))
}

/// Where the planned workflow is kept: the reused one's file, or a new one in the library.
fn save_plan(
    library: &WorkflowLibrary,
    output: &PlannerOutput,
    workflow: &Value,
    request: &str,
) -> Option<PathBuf> {
    if let Some(name) = &output.reused {
        return Some(library.path_of(name));
    }
    let saved = library.save(
        output.name.as_deref().unwrap_or("workflow"),
        output.description.as_deref().unwrap_or_default(),
        workflow,
        Some(request),
    );
    match saved {
        Ok((_, path)) => Some(path),
        Err(error) => {
            eprintln!("warning: {error}");
            None
        }
    }
}

enum Decision {
    Run,
    NotAsked(&'static str),
    Declined(&'static str),
}

/// `--yes` runs; on a terminal the user is asked once when the real run will do something the
/// dry run did not; without a terminal nothing runs unless `--yes` is given.
fn decide(yes: bool, undone: &[String]) -> Decision {
    if yes {
        return Decision::Run;
    }
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !terminal {
        return Decision::NotAsked("no terminal to ask on; pass --yes to run without asking");
    }
    if undone.is_empty() {
        return Decision::Run;
    }
    eprint!("Run it for real? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        Decision::Run
    } else {
        Decision::Declined("you said no")
    }
}

fn print_plan_summary(output: &PlannerOutput, saved: Option<&PathBuf>, undone: &[String]) {
    let name = output.name.as_deref().unwrap_or("workflow");
    match &output.reused {
        Some(_) => eprintln!("Reusing saved workflow '{name}'."),
        None => eprintln!(
            "Planned '{name}': {}",
            output.description.as_deref().unwrap_or_default()
        ),
    }
    let cost = output
        .cost_usd
        .map(|c| format!(", about ${c:.4}"))
        .unwrap_or_default();
    eprintln!(
        "  {} LLM call(s), {} tokens{cost}",
        output.llm_calls,
        output.usage.total()
    );
    if let Some(path) = saved {
        eprintln!("  saved: {}", path.display());
    }
    if !undone.is_empty() {
        eprintln!("The dry run did not do these; the real run will:");
        for line in undone {
            eprintln!("  - {line}");
        }
    }
}

fn params_text(output: &PlannerOutput) -> String {
    output
        .execution_params
        .iter()
        .map(|(k, v)| {
            let value = pflow_ir::template::render(v);
            format!(" {}", shell_quote(&format!("{k}={value}")))
        })
        .collect()
}

fn shell_quote(text: &str) -> String {
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "=-_./:,".contains(c))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Prints the last candidate and why it was not accepted; exit code 3.
fn report_failure(json_output: bool, output: &PlannerOutput, trace: Option<&PathBuf>) -> u8 {
    if json_output {
        print_json(&json!({"status": "failed", "planner": output, "trace": trace}));
        return PLANNING_FAILED;
    }
    eprintln!(
        "error: planning failed after {} LLM call(s)",
        output.llm_calls
    );
    if let Some(workflow) = &output.workflow {
        eprintln!("The last candidate:");
        eprintln!(
            "{}",
            serde_json::to_string_pretty(workflow).unwrap_or_default()
        );
    }
    eprintln!("Its problems:");
    for error in &output.errors {
        eprintln!("  - {}", error.replace('\n', "\n    "));
    }
    if let Some(path) = trace {
        eprintln!("Trace: {}", path.display());
    }
    PLANNING_FAILED
}

fn planning_failed(json_output: bool, output: Option<&PlannerOutput>, message: &str) -> u8 {
    if json_output {
        print_json(&json!({"status": "failed", "error": message, "planner": output}));
    } else {
        eprintln!("error: {message}");
    }
    PLANNING_FAILED
}

fn print_json(document: &Value) {
    outln!(
        "{}",
        serde_json::to_string_pretty(document).unwrap_or_default()
    );
}
