//! The saved-workflow library: `save`, `list`, `describe`, `delete` and `history`. These read
//! and write files only: no engine, no plugins.

use crate::{exit, OutputFormat};
use anyhow::{bail, Result};
use clap::Args;
use pflow_planner::library::{kebab, SavedWorkflow, WorkflowLibrary};
use pflow_runtime::home::PflowHome;
use pflow_runtime::runs::Runs;
use serde_json::{json, Value};
use std::path::PathBuf;

#[derive(Args)]
pub struct SaveArgs {
    /// The workflow file (`.pflow.md` or JSON IR).
    file: PathBuf,
    /// The name to save it under (default: the file's name, in kebab-case).
    #[arg(long)]
    name: Option<String>,
    /// What it does (default: the workflow's own description).
    #[arg(long)]
    description: Option<String>,
    /// Replace a saved workflow of the same name.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
pub struct ListArgs {
    /// Only workflows whose name or description holds every one of these words.
    keywords: Vec<String>,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
}

#[derive(Args)]
pub struct NameArgs {
    /// A saved workflow's name (or, for describe, a workflow file).
    name: String,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
}

pub fn library(home: &PflowHome) -> WorkflowLibrary {
    WorkflowLibrary::new(home.workflows_dir())
}

pub fn save(home: &PflowHome, args: SaveArgs) -> Result<u8> {
    let text = crate::workflow_file::read(&args.file)?;
    // Checked as `run` would read it: a broken workflow is not saved.
    let workflow = crate::workflow_file::parse(&args.file, &text)?;
    let file_name = args.file.file_name().unwrap_or_default().to_string_lossy();
    let stem = file_name
        .strip_suffix(".pflow.md")
        .or_else(|| file_name.strip_suffix(".json"))
        .or_else(|| file_name.strip_suffix(".md"))
        .unwrap_or(&file_name);
    let name = args.name.clone().unwrap_or_else(|| kebab(stem));
    let as_json = crate::workflow_file::is_json(&args.file)
        || !pflow_ir::markdown::looks_like_markdown(&text);
    let document = Document {
        text: &text,
        as_json,
        workflow: &workflow,
    };
    let path = save_document(home, document, &name, args.description, args.force)?;
    eprintln!("Saved '{name}': {}", path.display());
    eprintln!(
        "Run it with: pflow-host {name}{}",
        example_inputs(&serde_json::to_value(&workflow)?)
    );
    Ok(0)
}

/// A workflow to save: its text as written, and the workflow read from it.
pub struct Document<'a> {
    pub text: &'a str,
    /// JSON (saved as the IR) rather than `.pflow.md` (saved as written).
    pub as_json: bool,
    pub workflow: &'a pflow_ir::Workflow,
}

/// Saves `document` as `name`; the description defaults to the document's own.
pub fn save_document(
    home: &PflowHome,
    document: Document<'_>,
    name: &str,
    description: Option<String>,
    force: bool,
) -> Result<PathBuf> {
    let library = library(home);
    let exists = library.load(name).is_ok();
    if exists && !force {
        bail!("a workflow named '{name}' is already saved: choose another name, or force to replace it");
    }
    if !document.as_json {
        return Ok(library.save_document(name, document.text, description.as_deref(), force)?);
    }
    if exists {
        library.delete(name)?;
    }
    let description = description
        .or_else(|| {
            serde_json::from_str::<Value>(document.text)
                .ok()
                .and_then(|v| v["description"].as_str().map(str::to_string))
        })
        .unwrap_or_default();
    let ir = serde_json::to_value(document.workflow)?;
    Ok(library.save(name, &description, &ir, None)?.1)
}

/// ` input=...` for each required input without a default.
fn example_inputs(ir: &Value) -> String {
    ir["inputs"]
        .as_object()
        .map(|inputs| {
            inputs
                .iter()
                .filter(|(_, spec)| spec["required"] != false && spec.get("default").is_none())
                .map(|(name, _)| format!(" {name}=..."))
                .collect()
        })
        .unwrap_or_default()
}

/// A workflow that is not in the library, described as if it were: a `.pflow.md` text's own
/// description (or title) is its description.
pub fn unsaved(
    name: String,
    path: PathBuf,
    text: Option<&str>,
    workflow: &pflow_ir::Workflow,
) -> SavedWorkflow {
    let description = text
        .and_then(|text| pflow_ir::markdown::parse_markdown(text).ok())
        .and_then(|document| document.description.or(document.title))
        .unwrap_or_default();
    SavedWorkflow {
        name,
        description,
        ir: serde_json::to_value(workflow).unwrap_or_default(),
        path,
        ..Default::default()
    }
}

/// Counts a run of the workflow at `path` when it is a saved one.
pub fn count_run(home: &PflowHome, path: Option<&std::path::Path>) {
    let library = library(home);
    if let Some(name) = path.and_then(|path| library.name_of(path)) {
        library.record_run(&name);
    }
}

/// What `describe` tells: the summary and an example command.
pub fn described(saved: &SavedWorkflow) -> Value {
    let mut document = summary(saved);
    document["example"] = json!(format!(
        "pflow-host {}{}",
        saved.name,
        example_inputs(&saved.ir)
    ));
    document
}

pub fn summary(saved: &SavedWorkflow) -> Value {
    let mut types: Vec<&str> = Vec::new();
    for node_type in saved.ir["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["type"].as_str())
    {
        if !types.contains(&node_type) {
            types.push(node_type);
        }
    }
    json!({
        "name": saved.name,
        "description": saved.description,
        "inputs": saved.ir.get("inputs").cloned().unwrap_or(json!({})),
        "outputs": saved.ir.get("outputs").cloned().unwrap_or(json!({})),
        "node_types": types,
        "created_at": saved.created_at,
        "updated_at": saved.updated_at,
        "run_count": saved.run_count,
        "last_run": saved.last_run,
        "path": saved.path,
    })
}

/// The saved workflows whose name or description holds every one of `keywords`.
pub fn listed(home: &PflowHome, keywords: &[String]) -> Vec<SavedWorkflow> {
    let words: Vec<String> = keywords.iter().map(|w| w.to_lowercase()).collect();
    library(home)
        .list()
        .into_iter()
        .filter(|s| {
            let text = format!("{} {}", s.name, s.description).to_lowercase();
            words.iter().all(|w| text.contains(w.as_str()))
        })
        .collect()
}

pub fn list(home: &PflowHome, args: ListArgs) -> Result<u8> {
    let saved = listed(home, &args.keywords);
    if args.output_format == OutputFormat::Json {
        let list: Vec<Value> = saved.iter().map(summary).collect();
        outln!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(0);
    }
    if saved.is_empty() {
        eprintln!(
            "No saved workflows{}.",
            if args.keywords.is_empty() {
                ""
            } else {
                " match"
            }
        );
    }
    let width = saved.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for s in &saved {
        outln!(
            "{:width$}  {:>4} runs  {}",
            s.name,
            s.run_count,
            s.description
        );
    }
    Ok(0)
}

pub fn describe(home: &PflowHome, args: NameArgs) -> Result<u8> {
    let given = PathBuf::from(&args.name);
    let saved = if given.is_file() {
        let text = crate::workflow_file::read(&given)?;
        let workflow = crate::workflow_file::parse(&given, &text)?;
        unsaved(args.name.clone(), given, Some(&text), &workflow)
    } else {
        match library(home).load(&args.name) {
            Ok(saved) => saved,
            Err(error) => {
                eprintln!("error: {error}");
                return Ok(exit::CANNOT_START);
            }
        }
    };
    let document = described(&saved);
    if args.output_format == OutputFormat::Json {
        outln!("{}", serde_json::to_string_pretty(&document)?);
        return Ok(0);
    }
    outln!("{}: {}", saved.name, saved.description);
    for (title, field) in [("inputs", "inputs"), ("outputs", "outputs")] {
        let Some(entries) = document[field].as_object().filter(|e| !e.is_empty()) else {
            continue;
        };
        outln!("  {title}:");
        for (name, spec) in entries {
            let mut facts = vec![spec["type"].as_str().unwrap_or("any").to_string()];
            if field == "inputs" {
                match spec.get("default") {
                    Some(default) => facts.push(format!("default {default}")),
                    None if spec["required"] != false => facts.push("required".to_string()),
                    None => facts.push("optional".to_string()),
                }
            }
            outln!(
                "    {name} ({}): {}",
                facts.join(", "),
                spec["description"].as_str().unwrap_or("")
            );
        }
    }
    outln!(
        "  node types: {}",
        document["node_types"]
            .as_array()
            .map(|t| t
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", "))
            .unwrap_or_default()
    );
    outln!(
        "  run: pflow-host {}{}",
        saved.name,
        example_inputs(&saved.ir)
    );
    Ok(0)
}

pub fn delete(home: &PflowHome, args: NameArgs) -> Result<u8> {
    match library(home).delete(&args.name) {
        Ok(path) => {
            eprintln!("Deleted '{}' ({})", args.name, path.display());
            Ok(0)
        }
        Err(error) => {
            eprintln!("error: {error}");
            Ok(exit::CANNOT_START)
        }
    }
}

/// The runs of a saved workflow, newest first.
pub fn history(home: &PflowHome, args: NameArgs) -> Result<u8> {
    let saved = match library(home).load(&args.name) {
        Ok(saved) => saved,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(exit::CANNOT_START);
        }
    };
    let real = saved.path.canonicalize().unwrap_or(saved.path.clone());
    let mut runs: Vec<_> = Runs::new(home.runs_dir())
        .list()
        .into_iter()
        .filter(|c| {
            c.meta
                .workflow_path
                .as_ref()
                .and_then(|p| p.canonicalize().ok())
                .is_some_and(|p| p == real)
        })
        .collect();
    runs.sort_by(|a, b| b.meta.started_at.total_cmp(&a.meta.started_at));
    if args.output_format == OutputFormat::Json {
        let list: Vec<Value> = runs
            .iter()
            .map(|c| {
                json!({
                    "run_id": c.meta.run_id,
                    "status": c.meta.status,
                    "started_at": c.meta.started_at,
                    "inputs": c.meta.inputs,
                    "completed_nodes": c.state.execution.completed_nodes.len(),
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(0);
    }
    if runs.is_empty() {
        eprintln!("'{}' has not run yet.", saved.name);
    }
    for c in &runs {
        outln!(
            "{}  {:?}  {} node(s) completed",
            c.meta.run_id,
            c.meta.status,
            c.state.execution.completed_nodes.len()
        );
    }
    Ok(0)
}
