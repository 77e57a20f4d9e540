//! `pflow-host report RUN_ID`: a run as a readable markdown report (each node's status, time,
//! error and LLM usage), and `pflow-host mermaid FILE`: a workflow as a Mermaid flowchart.
//! Both read files only.

use crate::exit;
use anyhow::Result;
use clap::Args;
use pflow_ir::Workflow;
use pflow_runtime::home::PflowHome;
use pflow_runtime::runs::Runs;
use serde_json::Value;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct ReportArgs {
    /// The run's id, or `last`.
    run_id: String,
}

#[derive(Args)]
pub struct MermaidArgs {
    /// The workflow file (or a saved workflow's name).
    file: PathBuf,
}

pub fn report(home: &PflowHome, args: ReportArgs) -> Result<u8> {
    let checkpoint = match Runs::new(home.runs_dir()).load(&args.run_id) {
        Ok(checkpoint) => checkpoint,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(exit::CANNOT_START);
        }
    };
    let meta = &checkpoint.meta;
    let mut text = String::new();
    let source = meta
        .workflow_path
        .as_ref()
        .map_or("(no file)".to_string(), |p| p.display().to_string());
    let _ = writeln!(text, "# Run {}\n", meta.run_id);
    let _ = writeln!(text, "- workflow: {source}");
    let _ = writeln!(text, "- status: {:?}", meta.status);
    let total: f64 = checkpoint.nodes.iter().map(|n| n.duration_ms).sum();
    let _ = writeln!(
        text,
        "- nodes: {} ({total:.1} ms in nodes)",
        checkpoint.nodes.len()
    );
    if !meta.inputs.is_empty() {
        let _ = writeln!(text, "- inputs: `{}`", Value::Object(meta.inputs.clone()));
    }
    let (mut tokens_in, mut tokens_out, mut cost) = (0u64, 0u64, 0f64);
    text.push_str(
        "\n| node | type | status | time | LLM tokens (in/out) |\n|---|---|---|---|---|\n",
    );
    for node in &checkpoint.nodes {
        let usage = checkpoint
            .state
            .store
            .get(&node.id)
            .map(llm_usage)
            .unwrap_or_default();
        tokens_in += usage.0;
        tokens_out += usage.1;
        cost += usage.2;
        let tokens = if usage.0 + usage.1 > 0 {
            format!("{}/{}", usage.0, usage.1)
        } else {
            String::new()
        };
        let time = if node.cached {
            "cached".to_string()
        } else {
            format!("{:.1} ms", node.duration_ms)
        };
        let _ = writeln!(
            text,
            "| {} | {} | {:?} | {time} | {tokens} |",
            node.id, node.node_type, node.status
        );
    }
    if tokens_in + tokens_out > 0 {
        let _ = writeln!(
            text,
            "\nLLM: {tokens_in} tokens in, {tokens_out} out, about ${cost:.4}."
        );
    }
    let errors: Vec<_> = checkpoint
        .nodes
        .iter()
        .filter(|n| n.error.is_some())
        .collect();
    if !errors.is_empty() {
        text.push_str("\n## Errors\n\n");
        for node in errors {
            let _ = writeln!(
                text,
                "- `{}`: {}",
                node.id,
                node.error.as_deref().unwrap_or("")
            );
        }
    }
    out!("{text}");
    Ok(0)
}

/// (input tokens, output tokens, cost) of a node's `llm_usage`, summed over batch results.
fn llm_usage(outputs: &Value) -> (u64, u64, f64) {
    let one = |usage: &Value| {
        (
            usage["input_tokens"].as_u64().unwrap_or(0),
            usage["output_tokens"].as_u64().unwrap_or(0),
            usage["cost_usd"].as_f64().unwrap_or(0.0),
        )
    };
    let mut total = one(&outputs["llm_usage"]);
    for result in outputs["results"].as_array().into_iter().flatten() {
        let item = one(&result["llm_usage"]);
        total = (total.0 + item.0, total.1 + item.1, total.2 + item.2);
    }
    total
}

pub fn mermaid(args: MermaidArgs) -> Result<u8> {
    let text = crate::workflow_file::read(&args.file)?;
    let workflow = crate::workflow_file::parse(&args.file, &text)?;
    out!("{}", flowchart(&workflow));
    Ok(0)
}

/// A Mermaid `flowchart TD`: a box per node (its type, and batch or loop when it has one), an
/// arrow per edge, labelled with its action unless it is the default.
pub fn flowchart(workflow: &Workflow) -> String {
    let mut text = String::from("flowchart TD\n");
    let id = |node: &str| node.replace('-', "_");
    for node in &workflow.nodes {
        let mut label = format!("{}<br/><i>{}</i>", node.id, node.type_name);
        if node.batch.is_some() {
            label.push_str("<br/>batch");
        }
        if node.loop_config.is_some() {
            label.push_str("<br/>loop");
        }
        let _ = writeln!(text, "    {}[\"{label}\"]", id(&node.id));
    }
    for edge in &workflow.edges {
        match edge.action() {
            "default" => {
                let _ = writeln!(text, "    {} --> {}", id(&edge.from), id(&edge.to));
            }
            action => {
                let _ = writeln!(
                    text,
                    "    {} -->|{action}| {}",
                    id(&edge.from),
                    id(&edge.to)
                );
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flowchart_has_a_box_per_node_and_labels_routing() {
        let workflow = Workflow::from_text(
            "## Steps\n\n### fetch\n\nA.\n\n- type: http\n- url: x\n- on-error: recover\n\n### use\n\nB.\n\n- type: shell\n- command: echo\n- next: end\n\n### recover\n\nC.\n\n- type: shell\n- command: echo\n- next: end\n",
        )
        .unwrap();
        let chart = flowchart(&workflow);
        assert!(
            chart.contains("fetch[\"fetch<br/><i>http</i>\"]"),
            "{chart}"
        );
        assert!(chart.contains("fetch --> use"), "{chart}");
        assert!(chart.contains("fetch -->|error| recover"), "{chart}");
    }
}
