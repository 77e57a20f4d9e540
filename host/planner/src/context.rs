//! What the generator is told about the world: the node types it may use (params and
//! outputs) and the saved workflows it may reuse. A large catalog is narrowed locally, by the
//! words the request shares with each entry, so that the prompt stays small without an LLM call.

use crate::library::SavedWorkflow;
use pflow_runtime::registry::{Origin, PluginSpec};
use pflow_validate::Port;
use std::fmt::Write;

/// Beyond this many node types, only the built-ins and the most relevant others are listed.
pub const MAX_TYPES: usize = 30;
/// Beyond this many saved workflows, only the most relevant are listed.
pub const MAX_SAVED: usize = 10;

/// The catalog text and how much of it was left out.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub text: String,
    pub types_listed: usize,
    pub types_total: usize,
    pub saved_listed: usize,
    pub saved_total: usize,
}

pub fn build<'a>(
    request: &str,
    specs: impl Iterator<Item = (&'a PluginSpec, Origin)>,
    saved: &[SavedWorkflow],
) -> Catalog {
    let specs: Vec<(&PluginSpec, Origin)> = specs.collect();
    let types_total = specs.len();
    let mut chosen: Vec<&PluginSpec> = if types_total <= MAX_TYPES {
        specs.iter().map(|(s, _)| *s).collect()
    } else {
        let mut builtin: Vec<&PluginSpec> = specs
            .iter()
            .filter(|(_, o)| *o == Origin::Builtin)
            .map(|(s, _)| *s)
            .collect();
        let room = MAX_TYPES.saturating_sub(builtin.len());
        let others = specs
            .iter()
            .filter(|(_, o)| *o != Origin::Builtin)
            .map(|(s, _)| *s);
        builtin.extend(most_relevant(others, room, request, |s| {
            format!("{} {}", s.name, s.description)
        }));
        builtin
    };
    chosen.sort_by(|a, b| a.name.cmp(&b.name));
    let saved_chosen = most_relevant(saved.iter(), MAX_SAVED, request, |s| {
        format!("{} {}", s.name, s.description)
    });

    let mut text = String::from("## Node types\n\n");
    for spec in &chosen {
        write_spec(&mut text, spec);
    }
    if chosen.len() < types_total {
        let _ = writeln!(
            text,
            "({} more node types are installed; those above matched the request best.)\n",
            types_total - chosen.len()
        );
    }
    text.push_str("## Saved workflows\n\n");
    if saved_chosen.is_empty() {
        text.push_str("None.\n");
    }
    for saved in &saved_chosen {
        write_saved(&mut text, saved);
    }
    Catalog {
        text,
        types_listed: chosen.len(),
        types_total,
        saved_listed: saved_chosen.len(),
        saved_total: saved.len(),
    }
}

fn write_spec(text: &mut String, spec: &PluginSpec) {
    let _ = writeln!(text, "### {}\n{}", spec.name, spec.description.trim());
    let ports = |ports: &[Port]| -> String {
        if ports.is_empty() {
            return " none".to_string();
        }
        ports
            .iter()
            .map(|p| {
                let required = if p.required { ", required" } else { "" };
                let description = p.description.trim();
                if description.is_empty() {
                    format!("\n- `{}` ({}{required})", p.name, p.type_name)
                } else {
                    format!(
                        "\n- `{}` ({}{required}): {description}",
                        p.name, p.type_name
                    )
                }
            })
            .collect()
    };
    let _ = writeln!(text, "params:{}", ports(&spec.params));
    let _ = writeln!(text, "outputs:{}\n", ports(&spec.outputs));
}

fn write_saved(text: &mut String, saved: &SavedWorkflow) {
    let inputs: Vec<String> = saved.ir["inputs"]
        .as_object()
        .map(|inputs| {
            inputs
                .iter()
                .map(|(name, spec)| {
                    let required =
                        spec["required"].as_bool().unwrap_or(true) && spec.get("default").is_none();
                    format!("`{name}`{}", if required { " (required)" } else { "" })
                })
                .collect()
        })
        .unwrap_or_default();
    let inputs = if inputs.is_empty() {
        "none".to_string()
    } else {
        inputs.join(", ")
    };
    let _ = writeln!(
        text,
        "- `{}`: {} Inputs: {inputs}.",
        saved.name,
        saved.description.trim()
    );
}

/// Lower-case words of three letters or more, without the commonest English ones.
/// The `limit` items that rank best for the request (BM25, see `rank`); when fewer match,
/// the rest follow in their order.
fn most_relevant<'a, T>(
    items: impl Iterator<Item = &'a T>,
    limit: usize,
    request: &str,
    text_of: impl Fn(&T) -> String,
) -> Vec<&'a T>
where
    T: 'a,
{
    let items: Vec<&T> = items.collect();
    let texts: Vec<String> = items.iter().map(|item| text_of(item)).collect();
    let ranker = crate::rank::Ranker::new(texts.iter().map(|t| vec![(t.as_str(), 1.0)]));
    let mut order: Vec<usize> = ranker.rank(request).into_iter().map(|(i, _)| i).collect();
    let ranked: std::collections::HashSet<usize> = order.iter().copied().collect();
    order.extend((0..items.len()).filter(|i| !ranked.contains(i)));
    order.into_iter().take(limit).map(|i| items[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, description: &str) -> PluginSpec {
        PluginSpec {
            name: name.to_string(),
            description: description.to_string(),
            params: vec![Port {
                name: "url".into(),
                type_name: "str".into(),
                description: "Where".into(),
                required: true,
                schema: None,
            }],
            outputs: vec![],
            capabilities: vec![],
        }
    }

    #[test]
    fn a_small_catalog_is_listed_whole() {
        let specs = [
            spec("http", "Send an HTTP request"),
            spec("shell", "Run a command"),
        ];
        let catalog = build("x", specs.iter().map(|s| (s, Origin::Builtin)), &[]);
        assert!(catalog
            .text
            .contains("### http\nSend an HTTP request\nparams:\n- `url` (str, required): Where"));
        assert!(catalog.text.contains("### shell"));
        assert!(catalog.text.contains("## Saved workflows\n\nNone."));
    }

    #[test]
    fn a_large_catalog_keeps_builtins_and_what_the_request_is_about() {
        let mut specs = vec![(spec("shell", "Run a command"), Origin::Builtin)];
        for n in 0..100 {
            specs.push((
                spec(&format!("mcp-s-tool{n}"), "Does something"),
                Origin::User,
            ));
        }
        specs.push((
            spec("mcp-github-create-issue", "Create a GitHub issue"),
            Origin::User,
        ));
        let catalog = build(
            "open a github issue",
            specs.iter().map(|(s, o)| (s, *o)),
            &[],
        );
        assert_eq!(catalog.types_listed, MAX_TYPES);
        assert_eq!(catalog.types_total, 102);
        assert!(catalog.text.contains("### shell"));
        assert!(catalog.text.contains("### mcp-github-create-issue"));
        assert!(catalog.text.contains("72 more node types"));
    }

    #[test]
    fn saved_workflows_show_their_inputs() {
        let saved = SavedWorkflow {
            name: "count-words".into(),
            description: "Counts words.".into(),
            ir: json!({"inputs": {"file": {"type": "string"}, "top": {"default": 3}}, "nodes": []}),
            ..Default::default()
        };
        let catalog = build("x", std::iter::empty(), &[saved]);
        assert!(
            catalog
                .text
                .contains("- `count-words`: Counts words. Inputs: `file` (required), `top`."),
            "{}",
            catalog.text
        );
    }
}
