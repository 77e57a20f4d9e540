//! `pflow-host runs list|show`: past runs from their checkpoints in `~/.pflow/runs/`.

use crate::OutputFormat;
use anyhow::Result;
use clap::Subcommand;
use pflow_runtime::runs::{self, Checkpoint, Runs};
use pflow_runtime::PflowHome;
use serde_json::json;

#[derive(Subcommand)]
pub enum RunsCommand {
    /// Past runs, newest first: id, status, workflow, nodes completed, age.
    List {
        /// How many to show.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output_format: OutputFormat,
    },
    /// One run (its id, or `last`): status, each node with its time and error.
    Show {
        #[arg(value_name = "RUN_ID")]
        run_id: String,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output_format: OutputFormat,
    },
}

pub fn run(home: &PflowHome, command: RunsCommand) -> Result<u8> {
    let runs = Runs::new(home.runs_dir());
    match command {
        RunsCommand::List {
            limit,
            output_format,
        } => {
            let list: Vec<Checkpoint> = runs.list().into_iter().take(limit).collect();
            if output_format == OutputFormat::Json {
                let runs: Vec<_> = list.iter().map(summary).collect();
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&json!({ "runs": runs }))?
                );
                return Ok(0);
            }
            if list.is_empty() {
                eprintln!("No runs yet in {}.", runs.dir().display());
            }
            for checkpoint in &list {
                let meta = &checkpoint.meta;
                outln!(
                    "{:<22} {:<9} {:>3}/{:<3} {:>8}  {}",
                    meta.run_id,
                    format!("{:?}", meta.status).to_lowercase(),
                    checkpoint.state.execution.completed_nodes.len(),
                    node_count(checkpoint),
                    age(meta.updated_at),
                    workflow_name(checkpoint)
                );
            }
            Ok(0)
        }
        RunsCommand::Show {
            run_id,
            output_format,
        } => {
            let checkpoint = match runs.load(&run_id) {
                Ok(checkpoint) => checkpoint,
                Err(error) => {
                    eprintln!("error: {error}");
                    return Ok(crate::exit::CANNOT_START);
                }
            };
            if output_format == OutputFormat::Json {
                let mut document = summary(&checkpoint);
                document["nodes"] = json!(checkpoint.nodes);
                document["__execution__"] = json!(checkpoint.state.execution);
                document["next_node"] = json!(checkpoint.state.next_node);
                outln!("{}", serde_json::to_string_pretty(&document)?);
                return Ok(0);
            }
            let meta = &checkpoint.meta;
            outln!("run {} ({})", meta.run_id, workflow_name(&checkpoint));
            outln!(
                "  status: {}, updated {}",
                format!("{:?}", meta.status).to_lowercase(),
                age(meta.updated_at)
            );
            for node in &checkpoint.nodes {
                let mark = match node.status {
                    _ if node.cached => "↻",
                    pflow_runtime::Status::Succeeded => "✓",
                    pflow_runtime::Status::Failed => "✗",
                    pflow_runtime::Status::Cancelled => "■",
                };
                let time = if node.cached {
                    "cached".to_string()
                } else {
                    format!("{:.1} ms", node.duration_ms)
                };
                outln!("  {mark} {} ({}) {time}", node.id, node.node_type);
                if let Some(error) = &node.error {
                    outln!("      {error}");
                }
            }
            if meta.status != runs::RunStatus::Succeeded {
                outln!("Resume with: pflow-host run --resume {}", meta.run_id);
            }
            Ok(0)
        }
    }
}

fn summary(checkpoint: &Checkpoint) -> serde_json::Value {
    let meta = &checkpoint.meta;
    json!({
        "run_id": meta.run_id,
        "status": meta.status,
        "workflow": workflow_name(checkpoint),
        "workflow_path": meta.workflow_path,
        "inputs": meta.inputs,
        "completed_nodes": checkpoint.state.execution.completed_nodes.len(),
        "nodes_total": node_count(checkpoint),
        "failed_node": checkpoint.state.execution.failed_node,
        "started_at": meta.started_at,
        "updated_at": meta.updated_at,
    })
}

fn node_count(checkpoint: &Checkpoint) -> usize {
    checkpoint.meta.workflow["nodes"]
        .as_array()
        .map_or(0, Vec::len)
}

fn workflow_name(checkpoint: &Checkpoint) -> String {
    checkpoint
        .meta
        .workflow_path
        .as_ref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "(workflow)".to_string())
}

fn age(at: f64) -> String {
    let seconds = (runs::now() - at).max(0.0) as u64;
    match seconds {
        0..=59 => format!("{seconds}s ago"),
        60..=3599 => format!("{}m ago", seconds / 60),
        3600..=86399 => format!("{}h ago", seconds / 3600),
        _ => format!("{}d ago", seconds / 86400),
    }
}
