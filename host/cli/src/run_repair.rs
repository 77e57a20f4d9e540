//! Repair for `pflow-host run`: when a workflow fails at run time, or fails static validation
//! when it is loaded, and an LLM is configured, the planner's repair loop fixes it and the fix
//! runs from the run's checkpoint. The repaired workflow is written beside the original (or over
//! a saved one with `--save-repair`, keeping a backup) and the diff is shown.

use crate::display::Progress;
use crate::plan_display::PlanProgress;
use crate::run_cmd::{run_recorded, Recorded};
use pflow_ir::Workflow;
use pflow_llm::{Client, LlmConfig};
use pflow_planner::repair::{Failure, RepairOutcome, RepairStatus, Repairer};
use pflow_planner::PlannerEvent;
use pflow_planner::SavedWorkflow;
use pflow_runtime::runs::{RunTrace, Runs};
use pflow_runtime::{CancelToken, Host, NodeFailure};
use serde_json::json;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// What failed and where its run stands.
pub struct Broken {
    pub workflow: Value,
    pub workflow_path: Option<PathBuf>,
    pub inputs: Map<String, Value>,
    pub errors: Vec<NodeFailure>,
    pub completed_nodes: Vec<String>,
    /// The run to resume from; None when the workflow never started (it failed validation).
    pub run_id: Option<String>,
}

/// The LLM a repair would use, from the environment and the settings; why there is none
/// otherwise.
pub fn llm(host: &Host) -> Result<Client, String> {
    LlmConfig::resolve(None, &host.settings.llm, |name| std::env::var(name).ok())
        .and_then(Client::new)
        .map_err(|e| e.to_string())
}

/// Says how to turn repair on, to a person (a terminal) only: scripts get the error alone.
pub fn hint_unavailable(why: &str) {
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!(
            "Repair is off: {why}. With a model and its API key set, a failed run is repaired; \
             --no-repair keeps it off."
        );
    }
}

/// Repairs `broken` with `llm`: the outcome and the id of the run the repairs ran as.
pub fn repair(
    host: &Host,
    llm: &Client,
    cancel: &CancelToken,
    broken: Broken,
    show_progress: bool,
) -> (RepairOutcome, Option<String>) {
    let request = broken.workflow_path.as_deref().and_then(saved_request);
    let runs = Runs::new(host.home.runs_dir());
    let mut run_id = broken.run_id.clone();
    let mut plan_progress = PlanProgress::new(show_progress);
    let mut run = |candidate: &Value| {
        let workflow = Workflow::from_json(&candidate.to_string()).map_err(|e| e.to_string())?;
        let checkpoint = match &run_id {
            Some(id) => Some(runs.load(id).map_err(|e| e.to_string())?),
            None => None,
        };
        let mut progress = Progress::new(show_progress);
        let result = run_recorded(
            host,
            Recorded {
                inputs: broken.inputs.clone(),
                resumed: checkpoint.as_ref(),
                ..Recorded::new(&workflow, broken.workflow_path.clone())
            },
            cancel,
            &mut |event| progress.event(event),
        );
        progress.finish();
        let (report, id) = result.map_err(|e| e.to_string())?;
        run_id = Some(id);
        Ok(report)
    };
    let repairer = Repairer { host, llm, cancel };
    let failure = Failure {
        workflow: &broken.workflow,
        request: request.as_deref(),
        errors: broken.errors,
        completed_nodes: broken.completed_nodes,
    };
    // Kept until the run id is certain (a workflow that failed validation gets one on its first
    // run), then written to that run's trace.
    let now = pflow_runtime::runs::now;
    let mut events = vec![(
        "repair_started",
        json!({"errors": failure.errors, "completed_nodes": failure.completed_nodes, "ts": now()}),
    )];
    let outcome = repairer.repair(failure, &mut run, &mut |event| {
        plan_progress.event(event);
        if let PlannerEvent::Validation { valid, errors, .. } = event {
            events.push((
                "validation_complete",
                json!({"valid": valid, "errors": errors}),
            ));
        }
    });
    plan_progress.stop();
    events.push((
        "repair_complete",
        json!({
            "status": outcome.status, "repairs": outcome.repairs, "reason": outcome.reason,
            "llm_calls": outcome.llm_calls, "usage": outcome.usage, "ts": now(),
        }),
    ));
    if let Some(id) = &run_id {
        let mut trace = RunTrace::open(&runs, id);
        for (event, fields) in events {
            trace.record(event, fields);
        }
    }
    (outcome, run_id)
}

/// The request a saved workflow was planned from.
fn saved_request(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<SavedWorkflow>(&text).ok()?.request
}

/// The problems of a workflow that failed validation, in the one error shape.
pub fn validation_errors(report: &pflow_validate::Report) -> Vec<NodeFailure> {
    report
        .errors
        .iter()
        .map(|issue| NodeFailure {
            fixable: true,
            ..NodeFailure::new(
                "validation",
                pflow_validate::issue_category(issue),
                issue.to_string(),
            )
        })
        .collect()
}

/// Writes the repaired workflow: over a saved workflow with `save_over` (the old one kept as
/// `.bak`), else beside the original as `<name>.repaired.json`. Returns the path and the diff.
pub fn write_repaired(
    original_path: Option<&Path>,
    original: &Value,
    repaired: &Value,
    save_over: bool,
) -> std::io::Result<(PathBuf, String)> {
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    let diff = similar::TextDiff::from_lines(&pretty(original), &pretty(repaired))
        .unified_diff()
        .context_radius(2)
        .header("before", "repaired")
        .to_string();
    let saved = original_path
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|text| serde_json::from_str::<SavedWorkflow>(&text).ok());
    let path = match (original_path, save_over) {
        (Some(path), true) => {
            std::fs::copy(path, path.with_extension("json.bak"))?;
            path.to_path_buf()
        }
        (Some(path), false) => path.with_extension("repaired.json"),
        (None, _) => PathBuf::from("workflow.repaired.json"),
    };
    let text = match saved {
        // A saved workflow stays one: its name, description and request go with the new IR.
        Some(mut saved) => {
            saved.ir = repaired.clone();
            serde_json::to_string_pretty(&saved).unwrap_or_default()
        }
        None => pretty(repaired),
    };
    std::fs::write(&path, text)?;
    Ok((path, diff))
}

pub fn describe(outcome: &RepairOutcome) -> String {
    match outcome.status {
        RepairStatus::Repaired => format!(
            "Repaired: {} repair(s) ran, {} LLM call(s), {} tokens.",
            outcome.repairs,
            outcome.llm_calls,
            outcome.usage.total()
        ),
        RepairStatus::Failed | RepairStatus::Cancelled => format!(
            "Repair stopped after {} repair(s) and {} LLM call(s): {}.",
            outcome.repairs,
            outcome.llm_calls,
            outcome.reason.as_deref().unwrap_or("cancelled")
        ),
    }
}
