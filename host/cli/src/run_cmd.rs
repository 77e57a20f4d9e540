//! `pflow-host run FILE.json [key=value ...]` and `pflow-host run --resume RUN_ID`: every run
//! keeps its checkpoint in `~/.pflow/runs/<run-id>/`.

use crate::display::{self, Progress};
use crate::run_repair::{self, describe, repair, write_repaired, Broken};
use crate::{exit, OutputFormat};
use anyhow::{bail, Context, Result};
use clap::Args;
use pflow_ir::Workflow;
use pflow_llm::Client;
use pflow_planner::repair::RepairStatus;
use pflow_runtime::dry::DryRun;
use pflow_runtime::home::PflowHome;
use pflow_runtime::runs::{self, Checkpoint, Recorder, RunMeta, RunStatus, RunTrace, Runs};
use pflow_runtime::{CancelToken, Event, Host, RunReport, StartError};
use serde_json::{json, Map, Value};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Args)]
pub struct RunArgs {
    /// The workflow, in pflow's JSON IR (or a saved one). With --resume, the run's own
    /// workflow is used unless a file is given.
    #[arg(required_unless_present = "resume")]
    file: Option<PathBuf>,
    /// Workflow inputs as key=value (converted to each input's declared type).
    #[arg(value_name = "KEY=VALUE")]
    inputs: Vec<String>,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
    /// Go on with an earlier run (its id, or `last`): nodes that completed with the same
    /// params are not run again. Its inputs are reused; key=value ones replace them.
    #[arg(long, value_name = "RUN_ID")]
    resume: Option<String>,
    /// Do not repair a failed run with the LLM (no LLM call is made).
    #[arg(long)]
    no_repair: bool,
    /// Write a repaired saved workflow over the original (keeping it as .bak) instead of
    /// beside it as NAME.repaired.json.
    #[arg(long)]
    save_repair: bool,
}

impl RunArgs {
    /// The run that `pflow-host NAME key=value ...` means, when NAME is a saved workflow or a
    /// workflow file and everything after it is `key=value`.
    pub fn for_named(home: &PflowHome, plan: &crate::plan_cmd::PlanArgs) -> Option<RunArgs> {
        let name = plan.request.as_deref()?;
        if plan.inputs.iter().any(|a| !a.contains('=')) {
            return None;
        }
        let file = crate::workflow_file::saved_or_file(home, Path::new(name))?;
        Some(RunArgs {
            file: Some(file),
            inputs: plan.inputs.clone(),
            output_format: plan.output_format,
            resume: None,
            no_repair: false,
            save_repair: false,
        })
    }
}

/// What to run: the workflow, the inputs as given, and the earlier run it goes on from.
struct Plan {
    workflow: Workflow,
    workflow_path: Option<PathBuf>,
    inputs: Map<String, Value>,
    resumed: Option<Checkpoint>,
}

pub fn run(host: &Host, mut args: RunArgs) -> Result<u8> {
    let json_output = args.output_format == OutputFormat::Json;
    // `run NAME`: a saved workflow, when no such file exists.
    if let Some(file) = args.file.as_deref().filter(|f| !f.exists()) {
        if let Some(saved) = crate::workflow_file::saved_or_file(&host.home, file) {
            args.file = Some(saved);
        }
    }
    // `run --resume last key=value`: the first input lands where the file would.
    if args.resume.is_some() {
        if let Some(file) = args
            .file
            .take_if(|f| !f.exists() && f.to_string_lossy().contains('='))
        {
            args.inputs.insert(0, file.to_string_lossy().into_owned());
        }
    }
    let runs = Runs::new(host.home.runs_dir());
    let plan = match plan_run(&runs, &args) {
        Ok(plan) => plan,
        Err((category, error)) => {
            if let Some((llm, broken)) = repairable(host, &args, category) {
                let cancel = crate::signals::cancel_on_interrupt();
                return finish_with_repair(host, &llm, &cancel, &args, broken, None, &error);
            }
            return Ok(cannot_start(json_output, category, &error));
        }
    };
    let Plan {
        workflow,
        workflow_path,
        mut inputs,
        resumed,
    } = plan;
    read_piped_stdin(&workflow, &mut inputs)?;

    // The run refuses what `validate` refuses, with the same messages.
    let checked = pflow_validate::validate(&serde_json::to_value(&workflow)?, &host.registry, None);
    if !checked.valid {
        let message = crate::validate_cmd::refused_message(&checked);
        if let Some((llm, broken)) = repairable(host, &args, "invalid_workflow") {
            let cancel = crate::signals::cancel_on_interrupt();
            return finish_with_repair(host, &llm, &cancel, &args, broken, None, &message);
        }
        if json_output {
            let category = crate::validate_cmd::refused_category(&checked);
            let document = json!({
                "status": "failed",
                "outputs": {},
                "nodes": [],
                "error": {"source": "host", "category": category, "fixable": true,
                          "message": message},
                "validation": checked,
            });
            outln!("{}", serde_json::to_string_pretty(&document)?);
        } else {
            crate::validate_cmd::print_issues(&checked);
        }
        return Ok(exit::CANNOT_START);
    }

    let cancel = crate::signals::cancel_on_interrupt();

    let original_path = workflow_path.clone();
    let mut progress = Progress::new(!json_output);
    crate::library_cmd::count_run(&host.home, workflow_path.as_deref());
    let recorded = run_recorded(
        host,
        Recorded {
            inputs,
            resumed: resumed.as_ref(),
            ..Recorded::new(&workflow, workflow_path)
        },
        &cancel,
        &mut |event| progress.event(event),
    );
    progress.finish();
    let (report, run_id) = match recorded {
        Ok(recorded) => recorded,
        Err(error) => {
            // An unknown node type fails static validation too: the model can fix it.
            let unknown_type = matches!(error, StartError::UnknownNodeType { .. });
            if let Some((llm, broken)) = unknown_type
                .then(|| repairable(host, &args, "invalid_workflow"))
                .flatten()
            {
                let message = error.to_string();
                return finish_with_repair(host, &llm, &cancel, &args, broken, None, &message);
            }
            return Ok(cannot_start(
                json_output,
                start_error_category(&error),
                &error.to_string(),
            ));
        }
    };
    let run_id = &run_id;
    let mut repair_off = None;
    if report.status == pflow_runtime::Status::Failed && !args.no_repair {
        match run_repair::llm(host) {
            Err(why) => repair_off = Some(why),
            Ok(llm) => {
                let broken = Broken {
                    workflow: serde_json::to_value(&workflow).unwrap_or_default(),
                    workflow_path: original_path,
                    inputs: recorded_inputs(&runs, run_id),
                    errors: report.error.iter().cloned().collect(),
                    completed_nodes: report.state.execution.completed_nodes.clone(),
                    run_id: Some(run_id.clone()),
                };
                let message = report
                    .error
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                let original = Some(&report);
                return finish_with_repair(host, &llm, &cancel, &args, broken, original, &message);
            }
        }
    }

    if json_output {
        let mut document = display::report_document(&report);
        document["run_id"] = json!(run_id);
        outln!("{}", serde_json::to_string_pretty(&document)?);
    } else {
        display::print_report(&report);
        print_resume_hint(&report, run_id);
        if let Some(why) = repair_off {
            run_repair::hint_unavailable(&why);
        }
    }
    Ok(exit::of(report.status))
}

/// One recorded run: what to run, from which file, and how.
pub(crate) struct Recorded<'a> {
    pub workflow: &'a Workflow,
    pub workflow_path: Option<PathBuf>,
    pub inputs: Map<String, Value>,
    /// The earlier run this one goes on from: its id is kept and what it completed with the
    /// same params is skipped.
    pub resumed: Option<&'a Checkpoint>,
    /// Set for a dry run: side effects are contained or skipped.
    pub dry: Option<Arc<DryRun>>,
}

impl<'a> Recorded<'a> {
    pub fn new(workflow: &'a Workflow, workflow_path: Option<PathBuf>) -> Self {
        Recorded {
            workflow,
            workflow_path,
            inputs: Map::new(),
            resumed: None,
            dry: None,
        }
    }
}

/// Runs the workflow with a checkpoint after every node in `~/.pflow/runs/<run-id>/` (the
/// resumed run's id, or a new one).
pub(crate) fn run_recorded(
    host: &Host,
    run: Recorded<'_>,
    cancel: &CancelToken,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<(RunReport, String), StartError> {
    let Recorded {
        workflow,
        workflow_path,
        inputs,
        resumed,
        dry,
    } = run;
    let runs = Runs::new(host.home.runs_dir());
    let mut executor = host.executor(cancel);
    executor.dry = dry;
    executor.nesting = std::mem::take(&mut executor.nesting).run_of(workflow_path.as_deref());
    let state = executor.start(workflow, inputs.clone())?;
    let started_at = runs::now();
    let meta = RunMeta {
        run_id: match resumed {
            Some(checkpoint) => checkpoint.meta.run_id.clone(),
            None => Runs::new_id(),
        },
        status: RunStatus::Running,
        workflow_path,
        workflow: serde_json::to_value(workflow).unwrap_or_default(),
        inputs,
        started_at,
        updated_at: started_at,
    };
    let mut trace = RunTrace::open(&runs, &meta.run_id);
    trace.record(
        "run_started",
        json!({"resumed": resumed.is_some(), "workflow_path": meta.workflow_path}),
    );
    let mut recorder = Recorder::start(&runs, meta, &state);
    let report = executor.run_from(
        workflow,
        state,
        resumed.map(|c| &c.state),
        &mut |event| {
            trace.node_event(&event);
            on_event(event)
        },
        &mut |state, report| recorder.step(state, report),
    )?;
    recorder.finish(report.status, &report.state);
    if report.status == pflow_runtime::Status::Cancelled {
        trace.record("cancelled", json!({}));
    }
    trace.record(
        "run_finished",
        json!({"status": report.status, "duration_ms": report.duration_ms}),
    );
    Ok((report, recorder.meta.run_id.clone()))
}

/// The inputs a run was started with, as its checkpoint holds them.
fn recorded_inputs(runs: &Runs, run_id: &str) -> Map<String, Value> {
    runs.load(run_id)
        .map(|checkpoint| checkpoint.meta.inputs)
        .unwrap_or_default()
}

/// A workflow file that is JSON but fails validation, with the LLM to repair it: unless repair
/// is off or no LLM is configured (then a terminal is told how to turn it on).
fn repairable(host: &Host, args: &RunArgs, category: &str) -> Option<(Client, Broken)> {
    if args.no_repair || category != "invalid_workflow" {
        return None;
    }
    let llm = match run_repair::llm(host) {
        Ok(llm) => llm,
        Err(why) => {
            run_repair::hint_unavailable(&why);
            return None;
        }
    };
    let path = args.file.as_ref()?;
    let text = crate::workflow_file::read(path).ok()?;
    // The IR as written when it is JSON (a shape error may keep it from parsing); a
    // `.pflow.md` document as read.
    let workflow: Value = match serde_json::from_str::<Value>(&text) {
        Ok(document) if document.get("nodes").is_some() => document,
        Ok(document) => {
            serde_json::from_value::<pflow_planner::SavedWorkflow>(document)
                .ok()?
                .ir
        }
        Err(_) => serde_json::to_value(crate::workflow_file::parse(path, &text).ok()?).ok()?,
    };
    let report = pflow_validate::validate(&workflow, &host.registry, None);
    let errors = crate::run_repair::validation_errors(&report);
    if errors.is_empty() {
        return None;
    }
    let broken = Broken {
        workflow,
        workflow_path: Some(path.clone()),
        inputs: parse_inputs(&args.inputs).ok()?,
        errors,
        completed_nodes: Vec::new(),
        run_id: None,
    };
    Some((llm, broken))
}

/// Repairs `broken` and reports the result: the repaired run's, or the original error
/// (`original`, or `message` when it never ran) with the attempts made.
fn finish_with_repair(
    host: &Host,
    llm: &Client,
    cancel: &CancelToken,
    args: &RunArgs,
    broken: Broken,
    original: Option<&RunReport>,
    message: &str,
) -> Result<u8> {
    let json_output = args.output_format == OutputFormat::Json;
    let original_workflow = broken.workflow.clone();
    let original_path = broken.workflow_path.clone();
    let failed_code = if original.is_some() {
        exit::FAILED
    } else {
        exit::CANNOT_START
    };
    let print_original = || match original {
        Some(report) => display::print_report(report),
        None => eprintln!("error: {message}"),
    };
    let (outcome, run_id) = repair(host, llm, cancel, broken, !json_output);
    let written = match (&outcome.status, &outcome.workflow) {
        (RepairStatus::Repaired, Some(repaired)) => Some(write_repaired(
            original_path.as_deref(),
            &original_workflow,
            repaired,
            args.save_repair,
        )),
        _ => None,
    };
    if json_output {
        let mut document = match (&outcome.report, original) {
            (Some(report), _) if outcome.status == RepairStatus::Repaired => {
                display::report_document(report)
            }
            (_, Some(report)) => display::report_document(report),
            _ => json!({"status": "failed", "error": {"message": message}}),
        };
        document["run_id"] = json!(run_id);
        document["repair"] = serde_json::to_value(&outcome)?;
        if let Some(Ok((path, _))) = &written {
            document["repair"]["written"] = json!(path);
        }
        outln!("{}", serde_json::to_string_pretty(&document)?);
    } else {
        match (&outcome.status, &outcome.report) {
            (RepairStatus::Repaired, Some(report)) => {
                eprintln!("{}", describe(&outcome));
                match &written {
                    Some(Ok((path, diff))) => {
                        eprintln!("{diff}");
                        eprintln!("The repaired workflow: {}", path.display());
                    }
                    Some(Err(error)) => {
                        eprintln!("warning: cannot write the repaired workflow: {error}")
                    }
                    None => {}
                }
                display::print_report(report);
            }
            _ => {
                print_original();
                eprintln!("{}", describe(&outcome));
            }
        }
    }
    Ok(match outcome.status {
        RepairStatus::Repaired => 0,
        RepairStatus::Cancelled => exit::CANCELLED,
        RepairStatus::Failed => failed_code,
    })
}

/// How to go on with a run that stopped after finishing some work (without any, running it
/// again is the same).
pub(crate) fn print_resume_hint(report: &RunReport, run_id: &str) {
    let finished_some = !report.state.execution.completed_nodes.is_empty();
    if report.status != pflow_runtime::Status::Succeeded && finished_some {
        eprintln!("Resume with: pflow-host run --resume {run_id}");
    }
}

/// The workflow and inputs of a new run, or of the run to resume; (category, message) when
/// there is nothing to run.
fn plan_run(runs: &Runs, args: &RunArgs) -> Result<Plan, (&'static str, String)> {
    let given = parse_inputs(&args.inputs).map_err(|e| ("invalid_input", format!("{e:#}")))?;
    let load =
        |path: &PathBuf| load_workflow(path).map_err(|e| ("invalid_workflow", format!("{e:#}")));
    let Some(id) = &args.resume else {
        let path = args.file.clone().unwrap_or_default();
        return Ok(Plan {
            workflow: load(&path)?,
            workflow_path: Some(path),
            inputs: given,
            resumed: None,
        });
    };
    let checkpoint = runs.load(id).map_err(|e| ("unknown_run", e.to_string()))?;
    let (workflow, workflow_path) = match &args.file {
        Some(path) => (load(path)?, Some(path.clone())),
        None => {
            let workflow = Workflow::from_json(&checkpoint.meta.workflow.to_string())
                .map_err(|e| ("invalid_workflow", format!("the run's workflow: {e}")))?;
            (workflow, checkpoint.meta.workflow_path.clone())
        }
    };
    let mut inputs = checkpoint.meta.inputs.clone();
    inputs.extend(given);
    Ok(Plan {
        workflow,
        workflow_path,
        inputs,
        resumed: Some(checkpoint),
    })
}

/// A workflow file: `.pflow.md`, JSON IR, or a saved workflow (the IR wrapped with its name
/// and description).
pub(crate) fn load_workflow(path: &std::path::Path) -> Result<Workflow> {
    let text = crate::workflow_file::read(path)?;
    crate::workflow_file::parse(path, &text).with_context(|| format!("{}", path.display()))
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
        outln!(
            "{}",
            serde_json::to_string_pretty(&document).unwrap_or_default()
        );
    } else {
        eprintln!("error: {message}");
    }
    exit::CANNOT_START
}
