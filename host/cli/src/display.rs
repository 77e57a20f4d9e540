//! What a person sees: per-node progress on a terminal, results and errors.

use indicatif::{ProgressBar, ProgressStyle};
use pflow_runtime::{Event, RunReport, Status};
use serde_json::Value;
use std::io::IsTerminal;
use std::time::Duration;

pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("PFLOW_LOG")
        // rmcp logs transport failures that the node error already reports.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp=off"));
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .without_time()
        .init();
}

/// A spinner per running node and a line per finished one, on stderr, only on a terminal.
pub struct Progress {
    enabled: bool,
    spinner: Option<ProgressBar>,
}

impl Progress {
    pub fn new(wanted: bool) -> Self {
        Progress {
            enabled: wanted && std::io::stderr().is_terminal(),
            spinner: None,
        }
    }

    pub fn event(&mut self, event: Event<'_>) {
        if !self.enabled {
            return;
        }
        match event {
            Event::NodeStarted { id, node_type } => {
                let spinner = ProgressBar::new_spinner();
                spinner.set_style(
                    ProgressStyle::with_template("  {spinner} {msg} {elapsed}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                spinner.set_message(format!("{id} ({node_type})"));
                spinner.enable_steady_tick(Duration::from_millis(100));
                self.spinner = Some(spinner);
            }
            Event::NodeFinished(report) => {
                let mark = match report.status {
                    _ if report.cached => "↻",
                    Status::Succeeded => "✓",
                    Status::Failed => "✗",
                    Status::Cancelled => "■",
                };
                let time = if report.cached {
                    "cached".to_string()
                } else {
                    format_ms(report.duration_ms)
                };
                let line = format!("  {mark} {} ({}) {time}", report.id, report.node_type);
                if let Some(spinner) = self.spinner.take() {
                    spinner.finish_and_clear();
                }
                eprintln!("{line}");
            }
        }
    }

    pub fn finish(&mut self) {
        if let Some(spinner) = self.spinner.take() {
            spinner.finish_and_clear();
        }
    }
}

fn format_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

/// The JSON document of a run: the report, with each output that is JSON text parsed (as
/// pflow's JSON output does) and every node's outputs under `node_outputs`.
pub fn report_document(report: &RunReport) -> Value {
    let mut document = serde_json::to_value(report).unwrap_or_default();
    let outputs: serde_json::Map<String, Value> = report
        .outputs
        .iter()
        .map(|(name, value)| (name.clone(), parsed_if_json(value)))
        .collect();
    document["outputs"] = Value::Object(outputs);
    let mut node_outputs = serde_json::Map::new();
    for node in &report.nodes {
        if let Some(written) = report.state.store.get(&node.id) {
            node_outputs.insert(node.id.clone(), written.clone());
        }
    }
    document["node_outputs"] = Value::Object(node_outputs);
    document
}

fn parsed_if_json(value: &Value) -> Value {
    match value {
        Value::String(text) => serde_json::from_str(text.trim()).unwrap_or_else(|_| value.clone()),
        other => other.clone(),
    }
}

/// Outputs on stdout (a single output as plain text); errors on stderr.
pub fn print_report(report: &RunReport) {
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    match report.status {
        Status::Succeeded => match report.outputs.len() {
            0 => {}
            1 => {
                let value = report.outputs.values().next().expect("one output");
                match value {
                    Value::String(text) => outln!("{}", text.trim_end_matches('\n')),
                    other => outln!(
                        "{}",
                        serde_json::to_string_pretty(other).unwrap_or_default()
                    ),
                }
            }
            _ => outln!(
                "{}",
                serde_json::to_string_pretty(&report.outputs).unwrap_or_default()
            ),
        },
        Status::Failed | Status::Cancelled => {
            let verb = if report.status == Status::Cancelled {
                "cancelled"
            } else {
                "failed"
            };
            match &report.error {
                Some(error) => {
                    eprintln!(
                        "error: workflow {verb} at node '{}' ({}) [{}]: {}",
                        error.node_id, error.node_type, error.category, error.message
                    );
                    if !error.available.is_empty() {
                        eprintln!("  available: {}", error.available.join(", "));
                    }
                    if let Some(sample) = &error.sample {
                        eprintln!("  sample: {sample}");
                    }
                }
                None => eprintln!("error: workflow {verb}"),
            }
        }
    }
}
