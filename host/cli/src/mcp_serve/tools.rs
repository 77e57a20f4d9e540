//! The tools `mcp serve` offers, one entry each: name, description, argument schema,
//! annotations and what it does. They mirror the CLI commands and share their code.
//!
//! Every failure is a tool result in the one error shape (`source`, `category`, `fixable`,
//! `message`, ...), so an agent reads it as it reads a node's error and can fix its call.

use crate::workflow_file::Source;
use pflow_runtime::dry::DryRun;
use pflow_runtime::runtime_validation::{validate_runtime, RuntimeRoute};
use pflow_runtime::{CancelToken, Event, Host, Status};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::sync::Arc;

/// One call of a tool, on a blocking thread.
pub struct Call<'a> {
    pub host: &'a Host,
    pub arguments: &'a JsonObject,
    /// Cancelled when the client cancels the call, goes away, or the server stops.
    pub cancel: &'a CancelToken,
    /// `settings.mcp_serve.allow_live`: when false every execution and probe is dry.
    pub allow_live: bool,
    /// Progress of a long call: (done, total, what is happening).
    pub progress: &'a mut dyn FnMut(u32, Option<u32>, String),
}

/// What a tool gives back: a structured result, plain text, or an error in the one shape.
pub enum Outcome {
    Done(Value),
    Text(String),
    Failed(Value),
}

/// A tool: its definition for `tools/list` and its implementation.
pub struct ToolEntry {
    pub name: &'static str,
    description: &'static str,
    schema: fn() -> Value,
    kind: Kind,
    /// `Err` is an error outcome, returned as early as `?` allows.
    pub run: fn(&mut Call<'_>) -> Result<Outcome, Outcome>,
}

/// How a tool touches the world, for its annotations.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Reads files or runs nothing that changes anything.
    ReadOnly,
    /// Writes the library (`~/.pflow/workflows`).
    Writes,
    /// Runs nodes: dry unless asked for live, and live can change anything.
    Runs,
}

pub const TOOLS: &[ToolEntry] = &[
    ToolEntry {
        name: "workflow_find",
        description: "Saved workflows ranked for what they do (local BM25, no LLM), best first: name, description, score. Look here before building a new workflow.",
        schema: || object(json!({"query": {"type": "string", "description": "What the workflow should do, in a few words"}, "limit": {"type": "integer", "minimum": 1, "default": 10}}), &["query"]),
        kind: Kind::ReadOnly,
        run: workflow_find,
    },
    ToolEntry {
        name: "workflow_list",
        description: "Every saved workflow: name, description, inputs, outputs, node types, run count. Keywords narrow the list.",
        schema: || object(json!({"keywords": {"type": "string", "description": "Words the name or description must all contain"}}), &[]),
        kind: Kind::ReadOnly,
        run: workflow_list,
    },
    ToolEntry {
        name: "workflow_describe",
        description: "One workflow (saved name, file path or IR): its inputs, outputs, node types and an example command.",
        schema: || object(json!({"workflow": workflow_schema()}), &["workflow"]),
        kind: Kind::ReadOnly,
        run: workflow_describe,
    },
    ToolEntry {
        name: "workflow_validate",
        description: "Check a workflow without running it: every problem with its path, message and fix. With runtime: true it also runs once, dry (no files written, no remote changes), and reports what fails at run time, such as a wrong extract path with the keys that are available.",
        schema: || object(json!({"workflow": workflow_schema(), "params": params_schema(), "runtime": {"type": "boolean", "default": false, "description": "Also run it once, dry, and report run-time errors"}}), &["workflow"]),
        kind: Kind::ReadOnly,
        run: workflow_validate,
    },
    ToolEntry {
        name: "workflow_execute",
        description: "Run a workflow and return its outputs, each node's status and the run id (for read_fields and `pflow-host report`). Dry unless live: true: a dry run writes no files and changes no remote state, and lists what it would have done.",
        schema: || object(json!({"workflow": workflow_schema(), "params": params_schema(), "live": {"type": "boolean", "default": false, "description": "Run for real: commands, writes, requests and tools take effect"}}), &["workflow"]),
        kind: Kind::Runs,
        run: workflow_execute,
    },
    ToolEntry {
        name: "workflow_save",
        description: "Save a valid workflow to the library under a name, to find it and run it by name later (`pflow-host NAME key=value`).",
        schema: || object(json!({"workflow": workflow_schema(), "name": {"type": "string", "description": "kebab-case name"}, "description": {"type": "string", "description": "What it does (default: the workflow's own)"}, "force": {"type": "boolean", "default": false, "description": "Replace a saved workflow of the same name"}}), &["workflow", "name"]),
        kind: Kind::Writes,
        run: workflow_save,
    },
    ToolEntry {
        name: "registry_find",
        description: "Node types (MCP tools included) ranked for what a step should do, best first.",
        schema: || object(json!({"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "default": 10}}), &["query"]),
        kind: Kind::ReadOnly,
        run: registry_find,
    },
    ToolEntry {
        name: "registry_describe",
        description: "One node type: its params, outputs and the capabilities it is granted.",
        schema: || object(json!({"type": {"type": "string", "description": "A node type, e.g. http or shell"}}), &["type"]),
        kind: Kind::ReadOnly,
        run: registry_describe,
    },
    ToolEntry {
        name: "probe",
        description: "Run one node in the sandbox to learn what it really returns: the template paths of its output with types and sizes, and an execution id for read_fields. Dry unless live: true.",
        schema: || object(json!({"type": {"type": "string", "description": "The node type"}, "params": {"type": "object", "description": "The node's params"}, "live": {"type": "boolean", "default": false}}), &["type"]),
        kind: Kind::Runs,
        run: probe,
    },
    ToolEntry {
        name: "read_fields",
        description: "Values at paths of a probe's or a run's output, e.g. probe.response.items[0].name.",
        schema: || object(json!({"execution_id": {"type": "string", "description": "A probe's execution id or a run id (`last` for the latest)"}, "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1}}), &["execution_id", "paths"]),
        kind: Kind::ReadOnly,
        run: read_fields,
    },
    ToolEntry {
        name: "guide",
        description: "How to build workflows, for an agent: topics core, batch, control-flow, dry-and-live, fix-loop (all when none is named). Read core first.",
        schema: || object(json!({"topics": {"type": "array", "items": {"type": "string", "enum": crate::guide_cmd::TOPICS.iter().map(|(name, _)| *name).collect::<Vec<_>>()}}}), &[]),
        kind: Kind::ReadOnly,
        run: guide,
    },
];

/// The tool list; with live runs off, the running tools are read-only too.
pub fn definitions(allow_live: bool) -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|entry| {
            let schema = (entry.schema)().as_object().cloned().unwrap_or_default();
            let annotations = match entry.kind {
                Kind::Runs if allow_live => ToolAnnotations::new()
                    .read_only(false)
                    .destructive(true)
                    .open_world(true),
                Kind::Writes => ToolAnnotations::new()
                    .read_only(false)
                    .destructive(false)
                    .idempotent(true),
                Kind::ReadOnly | Kind::Runs => ToolAnnotations::new().read_only(true),
            };
            Tool::new(entry.name, entry.description, Arc::new(schema)).with_annotations(annotations)
        })
        .collect()
}

pub fn find(name: &str) -> Option<&'static ToolEntry> {
    TOOLS.iter().find(|entry| entry.name == name)
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn workflow_schema() -> Value {
    json!({
        "description": "The IR as an object, or a string: a file path, a saved workflow's name, or the document's text (.pflow.md or JSON)",
        "anyOf": [{"type": "object"}, {"type": "string"}],
    })
}

fn params_schema() -> Value {
    json!({"type": "object", "description": "The workflow's input values"})
}

/// An error in the one shape; `fixable` says whether changing the call or workflow can help.
fn failed(category: &str, fixable: bool, message: impl Into<String>) -> Outcome {
    Outcome::Failed(json!({
        "source": "host", "category": category, "fixable": fixable, "message": message.into(),
    }))
}

fn text<'a>(call: &'a Call<'_>, key: &str) -> Result<&'a str, Outcome> {
    call.arguments
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            failed(
                "bad_request",
                true,
                format!("'{key}' must be a non-empty string"),
            )
        })
}

fn flag(call: &Call<'_>, key: &str) -> bool {
    call.arguments
        .get(key)
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn limit(call: &Call<'_>) -> usize {
    call.arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(10, |n| n.clamp(1, 1000) as usize)
}

fn params(call: &Call<'_>) -> Result<Map<String, Value>, Outcome> {
    match call.arguments.get("params") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(params)) => Ok(params.clone()),
        Some(_) => Err(failed("bad_request", true, "'params' must be an object")),
    }
}

fn source(call: &Call<'_>) -> Result<Source, Outcome> {
    Source::resolve(&call.host.home, call.arguments.get("workflow"))
        .map_err(|e| failed("bad_request", true, format!("{e:#}")))
}

/// Live only when asked and allowed; a note when it was asked and not allowed.
fn live(call: &Call<'_>) -> (bool, Option<&'static str>) {
    match (flag(call, "live"), call.allow_live) {
        (true, false) => (
            false,
            Some("live runs are off for this server (settings.json: mcp_serve.allow_live); this one was dry"),
        ),
        (asked, _) => (asked, None),
    }
}

fn workflow_find(call: &mut Call<'_>) -> Result<Outcome, Outcome> {
    let query = text(call, "query")?;
    let matches = crate::find_cmd::matches(&call.host.home, query, limit(call));
    Ok(Outcome::Done(json!({ "matches": matches })))
}

fn workflow_list(call: &mut Call<'_>) -> Result<Outcome, Outcome> {
    let keywords = call
        .arguments
        .get("keywords")
        .and_then(Value::as_str)
        .unwrap_or("");
    let words: Vec<String> = keywords.split_whitespace().map(str::to_string).collect();
    let listed: Vec<Value> = crate::library_cmd::listed(&call.host.home, &words)
        .iter()
        .map(crate::library_cmd::summary)
        .collect();
    Ok(Outcome::Done(json!({ "workflows": listed })))
}

fn workflow_describe(call: &mut Call<'_>) -> Result<Outcome, Outcome> {
    let source = source(call)?;
    if let Some(saved) = source.path().and_then(|path| {
        let library = crate::library_cmd::library(&call.host.home);
        library
            .name_of(path)
            .and_then(|name| library.load(&name).ok())
    }) {
        return Ok(Outcome::Done(crate::library_cmd::described(&saved)));
    }
    let workflow = source
        .parse()
        .map_err(|e| failed("invalid_workflow", true, e.to_string()))?;
    let (name, path, text) = match &source {
        Source::Text {
            text,
            path: Some(path),
        } => (
            path.display().to_string(),
            path.clone(),
            Some(text.as_str()),
        ),
        Source::Text { text, path: None } => {
            ("WORKFLOW".to_string(), PathBuf::new(), Some(text.as_str()))
        }
        Source::Ir(_) => ("WORKFLOW".to_string(), PathBuf::new(), None),
    };
    let saved = crate::library_cmd::unsaved(name, path, text, &workflow);
    Ok(Outcome::Done(crate::library_cmd::described(&saved)))
}

fn workflow_validate(call: &mut Call<'_>) -> Result<Outcome, Outcome> {
    let source = source(call)?;
    let inputs = params(call)?;
    let given = call.arguments.contains_key("params").then_some(&inputs);
    let report = source.validate(&call.host.registry, given);
    let mut document = serde_json::to_value(&report).unwrap_or_default();
    if !flag(call, "runtime") || !report.valid {
        return Ok(Outcome::Done(document));
    }
    let workflow = source
        .parse()
        .map_err(|e| failed("invalid_workflow", true, e.to_string()))?;
    (call.progress)(0, None, "running once, dry".to_string());
    let mut executor = call.host.executor(call.cancel);
    executor.nesting = std::mem::take(&mut executor.nesting).run_of(source.path());
    let runtime = validate_runtime(executor, &workflow, inputs, false, 0);
    document["valid"] = json!(runtime.route == RuntimeRoute::Default);
    document["runtime"] = serde_json::to_value(&runtime).unwrap_or_default();
    Ok(Outcome::Done(document))
}

/// Static errors as the one error shape, with the whole report beside them.
fn invalid(report: &pflow_validate::Report) -> Outcome {
    Outcome::Failed(json!({
        "source": "host", "category": crate::validate_cmd::refused_category(report),
        "fixable": true, "message": crate::validate_cmd::refused_message(report),
        "validation": report,
    }))
}

fn workflow_execute(call: &mut Call<'_>) -> Result<Outcome, Outcome> {
    let source = source(call)?;
    let inputs = params(call)?;
    let report = source.validate(&call.host.registry, Some(&inputs));
    if !report.valid {
        return Err(invalid(&report));
    }
    let workflow = source
        .parse()
        .map_err(|e| failed("invalid_workflow", true, e.to_string()))?;
    let (live, note) = live(call);
    let dry = (!live).then(|| Arc::new(DryRun::default()));
    crate::library_cmd::count_run(&call.host.home, source.path());
    let total = workflow.nodes.len() as u32;
    let mut done = 0;
    let progress = &mut *call.progress;
    let recorded = crate::run_cmd::Recorded {
        inputs,
        dry: dry.clone(),
        ..crate::run_cmd::Recorded::new(&workflow, source.path().map(Into::into))
    };
    let ran =
        crate::run_cmd::run_recorded(call.host, recorded, call.cancel, &mut |event| match event {
            Event::NodeStarted { id, node_type } => {
                progress(done, Some(total), format!("{id} ({node_type}) started"))
            }
            Event::NodeFinished(node) => {
                done += 1;
                let message = format!("{} {:?} in {} ms", node.id, node.status, node.duration_ms);
                progress(done.min(total), Some(total), message)
            }
        });
    let (report, run_id) = ran.map_err(|e| failed("cannot_start", true, e.to_string()))?;
    let mut document = crate::display::report_document(&report);
    document["run_id"] = json!(run_id);
    document["mode"] = json!(if live { "live" } else { "dry" });
    if let Some(dry) = &dry {
        document["not_done"] = serde_json::to_value(dry.skipped()).unwrap_or_default();
        document["would_change"] = serde_json::to_value(dry.effects()).unwrap_or_default();
    }
    Ok(finished(document, report.status, note))
}

/// A run's or a probe's document, with the note on why it was dry when it was asked to be
/// live: an error result unless it succeeded.
fn finished(mut document: Value, status: Status, note: Option<&str>) -> Outcome {
    if let Some(note) = note {
        document["note"] = json!(note);
    }
    match status {
        Status::Succeeded => Outcome::Done(document),
        Status::Failed | Status::Cancelled => Outcome::Failed(document),
    }
}

fn workflow_save(call: &mut Call<'_>) -> Result<Outcome, Outcome> {
    let name = text(call, "name")?;
    if !pflow_planner::library::valid_name(name) {
        return Err(failed(
            "bad_request",
            true,
            format!(
                "'{name}' is not a workflow name: use lowercase letters, digits and '-' (e.g. {})",
                pflow_planner::library::kebab(name)
            ),
        ));
    }
    let source = source(call)?;
    let report = source.validate(&call.host.registry, None);
    if !report.valid {
        return Err(invalid(&report));
    }
    let workflow = source
        .parse()
        .map_err(|e| failed("invalid_workflow", true, e.to_string()))?;
    let (text, as_json) = match &source {
        Source::Ir(ir) => (serde_json::to_string_pretty(ir).unwrap_or_default(), true),
        Source::Text { text, path } => {
            let as_json = path.as_deref().is_some_and(crate::workflow_file::is_json)
                || !pflow_ir::markdown::looks_like_markdown(text);
            (text.clone(), as_json)
        }
    };
    let document = crate::library_cmd::Document {
        text: &text,
        as_json,
        workflow: &workflow,
    };
    let description = call
        .arguments
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_string);
    let path = crate::library_cmd::save_document(
        &call.host.home,
        document,
        name,
        description,
        flag(call, "force"),
    )
    .map_err(|e| failed("save_failed", true, format!("{e:#}")))?;
    let saved = crate::library_cmd::library(&call.host.home)
        .load(name)
        .map_err(|e| failed("save_failed", false, e.to_string()))?;
    let mut document = crate::library_cmd::described(&saved);
    document["path"] = json!(path);
    Ok(Outcome::Done(document))
}

fn registry_find(call: &mut Call<'_>) -> Result<Outcome, Outcome> {
    let query = text(call, "query")?;
    let matches = crate::registry_cmd::matches(call.host, query, limit(call));
    Ok(Outcome::Done(json!({ "matches": matches })))
}

fn registry_describe(call: &mut Call<'_>) -> Result<Outcome, Outcome> {
    let node_type = text(call, "type")?;
    crate::registry_cmd::described(call.host, node_type)
        .map(|(document, _)| Outcome::Done(document))
        .map_err(|message| failed("unknown_node_type", true, message))
}

fn probe(call: &mut Call<'_>) -> Result<Outcome, Outcome> {
    let node_type = text(call, "type")?.to_string();
    let params = params(call)?;
    let (live, note) = live(call);
    (call.progress)(0, None, format!("probing {node_type}"));
    let probe = crate::probe_cmd::run_probe(call.host, &node_type, params, live, call.cancel)
        .map_err(|refused| match refused {
            crate::probe_cmd::ProbeRefused::Invalid(report) => invalid(&report),
            crate::probe_cmd::ProbeRefused::Cannot(message) => {
                failed("cannot_start", true, message)
            }
        })?;
    let document = serde_json::to_value(&probe).unwrap_or_default();
    Ok(finished(document, probe.status, note))
}

fn read_fields(call: &mut Call<'_>) -> Result<Outcome, Outcome> {
    let execution = text(call, "execution_id")?;
    let paths: Vec<String> = call
        .arguments
        .get("paths")
        .and_then(Value::as_array)
        .map(|paths| {
            paths
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .filter(|paths: &Vec<String>| !paths.is_empty())
        .ok_or_else(|| failed("bad_request", true, "'paths' must be a list of paths"))?;
    let (values, missing) = crate::probe_cmd::read_values(&call.host.home, execution, &paths)
        .map_err(|e| failed("unknown_run", true, e.to_string()))?;
    let document = json!({"values": values, "missing": missing});
    Ok(if missing.is_empty() {
        Outcome::Done(document)
    } else {
        Outcome::Failed(json!({
            "source": "host", "category": "missing_field", "fixable": true,
            "message": missing.join("\n"), "values": values,
        }))
    })
}

fn guide(call: &mut Call<'_>) -> Result<Outcome, Outcome> {
    let wanted: Vec<&str> = call
        .arguments
        .get("topics")
        .and_then(Value::as_array)
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let known = crate::guide_cmd::TOPICS;
    if let Some(unknown) = wanted
        .iter()
        .find(|w| !known.iter().any(|(name, _)| name == *w))
    {
        let names: Vec<&str> = known.iter().map(|(name, _)| *name).collect();
        return Err(failed(
            "bad_request",
            true,
            format!(
                "no guide topic '{unknown}'; the topics are {}",
                names.join(", ")
            ),
        ));
    }
    let text: Vec<&str> = known
        .iter()
        .filter(|(name, _)| wanted.is_empty() || wanted.contains(name))
        .map(|(_, text)| *text)
        .collect();
    Ok(Outcome::Text(text.join("\n---\n\n")))
}
