//! `pflow-host registry list|describe`.

use crate::OutputFormat;
use anyhow::Result;
use clap::Subcommand;
use pflow_runtime::capabilities::Capability;
use pflow_runtime::registry::Plugin;
use pflow_runtime::Host;
use serde_json::json;

#[derive(Subcommand)]
pub enum RegistryCommand {
    /// Every node type: installed components and the tools of configured MCP servers.
    List {
        /// Only types whose name or description contains every one of these words
        /// (case-insensitive), e.g. `--filter "github issue"`.
        #[arg(long)]
        filter: Option<String>,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output_format: OutputFormat,
    },
    /// The node types that match what a step should do, best first (ranked locally, as
    /// `find` ranks saved workflows).
    Find {
        query: String,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output_format: OutputFormat,
    },
    /// One node type: params, outputs, capabilities, where it comes from.
    Describe {
        #[arg(value_name = "TYPE")]
        node_type: String,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output_format: OutputFormat,
    },
}

pub fn run(host: &Host, command: RegistryCommand) -> Result<u8> {
    match command {
        RegistryCommand::List {
            filter,
            output_format,
        } => list(host, filter.as_deref(), output_format),
        RegistryCommand::Find {
            query,
            limit,
            output_format,
        } => find(host, &query, limit, output_format),
        RegistryCommand::Describe {
            node_type,
            output_format,
        } => match described(host, &node_type) {
            Ok((document, capabilities)) => describe(&document, &capabilities, output_format),
            Err(message) => {
                eprintln!("error: {message}");
                Ok(crate::exit::CANNOT_START)
            }
        },
    }
}

/// One node type as `registry describe` shows it: the JSON document and its capabilities in
/// words; or, for an unknown type, the error with the closest names.
pub fn described(host: &Host, node_type: &str) -> Result<(serde_json::Value, String), String> {
    let Some(resolved) = host.registry.resolve(node_type) else {
        let close = pflow_ir::closest(node_type, host.registry.types());
        let hint = if close.is_empty() {
            String::new()
        } else {
            format!(" Did you mean: {}?", close.join(", "))
        };
        return Err(format!("Unknown node type: '{node_type}'.{hint}"));
    };
    if let Some(plugin) = resolved
        .component()
        .filter(|_| resolved.mcp_tool().is_none())
    {
        let capabilities = capabilities_text(&plugin.spec.capabilities, &plugin.denied);
        return Ok((plugin_json(plugin), capabilities));
    }
    let Some(tool) = resolved.mcp_tool() else {
        let spec = host.registry.native_specs().find(|s| s.name == node_type);
        return Ok((native_json(spec), NATIVE.to_string()));
    };
    let document = json!({
        "type": tool.spec.name,
        "description": tool.spec.description,
        "params": tool.spec.params,
        "outputs": tool.spec.outputs,
        "capabilities": tool.spec.capabilities,
        "origin": "mcp",
        "server": tool.server,
        "tool": tool.tool,
        "annotations": tool.annotations,
    });
    Ok((document, capabilities_text(&tool.spec.capabilities, &[])))
}

/// One line of `registry list`: a component or an MCP tool.
struct Listed {
    name: String,
    origin: String,
    capabilities: String,
    description: String,
    document: serde_json::Value,
}

/// Node types ranked for `query` over their name (weighted most), description and params,
/// best first, as (type, description, score).
pub fn ranked(host: &Host, query: &str, limit: usize) -> Vec<(String, String, f64)> {
    let specs: Vec<_> = host.registry.specs().map(|(spec, _)| spec).collect();
    let params: Vec<String> = specs
        .iter()
        .map(|spec| {
            spec.params
                .iter()
                .map(|p| format!("{} {}", p.name, p.description))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let ranker =
        pflow_planner::rank::Ranker::new(specs.iter().zip(&params).map(|(spec, params)| {
            vec![
                (spec.name.as_str(), 3.0),
                (spec.description.as_str(), 2.0),
                (params.as_str(), 0.5),
            ]
        }));
    ranker
        .rank(query)
        .into_iter()
        .take(limit)
        .map(|(i, score)| (specs[i].name.clone(), specs[i].description.clone(), score))
        .collect()
}

/// The node types that match `query`, best first, as `registry find --output-format json` and
/// the MCP tool give them.
pub fn matches(host: &Host, query: &str, limit: usize) -> Vec<serde_json::Value> {
    ranked(host, query, limit)
        .into_iter()
        .map(|(name, description, score)| {
            json!({
                "type": name,
                "description": description,
                "score": (score * 1000.0).round() / 1000.0,
            })
        })
        .collect()
}

fn find(host: &Host, query: &str, limit: usize, output_format: OutputFormat) -> Result<u8> {
    if output_format == OutputFormat::Json {
        let list = matches(host, query, limit);
        outln!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(0);
    }
    let matches = ranked(host, query, limit);
    if matches.is_empty() {
        eprintln!("No node type matches '{query}'. `pflow-host registry list` shows them all.");
    }
    let width = matches
        .iter()
        .map(|(name, _, _)| name.len())
        .max()
        .unwrap_or(0);
    for (name, description, score) in &matches {
        outln!("{name:width$}  {score:5.2}  {description}");
    }
    Ok(0)
}

fn list(host: &Host, filter: Option<&str>, output_format: OutputFormat) -> Result<u8> {
    let components = host.registry.plugins().map(|plugin| Listed {
        name: plugin.spec.name.clone(),
        origin: plugin.origin.name().to_string(),
        capabilities: capabilities_text(&plugin.spec.capabilities, &plugin.denied),
        description: plugin.spec.description.clone(),
        document: plugin_json(plugin),
    });
    let natives = host.registry.native_specs().map(|spec| Listed {
        name: spec.name.clone(),
        origin: "builtin".to_string(),
        capabilities: NATIVE.to_string(),
        description: spec.description.clone(),
        document: native_json(Some(spec)),
    });
    let tools = host.registry.mcp_tools().map(|tool| Listed {
        name: tool.spec.name.clone(),
        origin: "mcp".to_string(),
        capabilities: capabilities_text(&tool.spec.capabilities, &[]),
        description: tool.spec.description.clone(),
        document: json!({
            "type": tool.spec.name,
            "description": tool.spec.description,
            "params": tool.spec.params,
            "outputs": tool.spec.outputs,
            "origin": "mcp",
            "server": tool.server,
            "tool": tool.tool,
        }),
    });
    let words: Vec<String> = filter
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    let mut listed: Vec<Listed> = components
        .chain(natives)
        .chain(tools)
        .filter(|entry| {
            let text = format!("{} {}", entry.name, entry.description).to_lowercase();
            words.iter().all(|word| text.contains(word.as_str()))
        })
        .collect();
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    if output_format == OutputFormat::Json {
        let types: Vec<&serde_json::Value> = listed.iter().map(|l| &l.document).collect();
        let document = json!({"plugins": types, "problems": host.registry.problems});
        outln!("{}", serde_json::to_string_pretty(&document)?);
        return Ok(0);
    }
    if listed.is_empty() {
        match filter {
            Some(filter) => eprintln!("No node type matches '{filter}'."),
            None => eprintln!("No node types installed."),
        }
    }
    let width = listed.iter().map(|l| l.name.len()).max().unwrap_or(0);
    for entry in &listed {
        outln!(
            "{:width$}  {:8}  [{}]  {}",
            entry.name,
            entry.origin,
            entry.capabilities,
            entry.description
        );
    }
    for problem in &host.registry.problems {
        eprintln!("warning: {problem}");
    }
    Ok(0)
}

/// One node type's description, as JSON or for a person.
/// `capabilities` is the line `capabilities_text` renders.
fn describe(
    document: &serde_json::Value,
    capabilities: &str,
    output_format: OutputFormat,
) -> Result<u8> {
    if output_format == OutputFormat::Json {
        outln!("{}", serde_json::to_string_pretty(document)?);
        return Ok(0);
    }
    let text = |key: &str| document[key].as_str().unwrap_or_default().to_string();
    outln!("{}: {}", text("type"), text("description"));
    match document.get("server") {
        Some(server) => outln!("  from: MCP server {} (tool {})", server, document["tool"]),
        None => outln!("  from: {} ({})", text("path"), text("origin")),
    }
    outln!("  capabilities: {capabilities}");
    for title in ["params", "outputs"] {
        outln!("  {title}:");
        for port in document[title].as_array().into_iter().flatten() {
            let required = if port["required"] == true {
                ", required"
            } else {
                ""
            };
            outln!(
                "    {} ({}{required}): {}",
                port["name"].as_str().unwrap_or_default(),
                port["type"].as_str().unwrap_or_default(),
                port["description"].as_str().unwrap_or_default()
            );
        }
    }
    Ok(0)
}

/// `log, process (denied)`.
pub fn capabilities_text(capabilities: &[Capability], denied: &[Capability]) -> String {
    let names: Vec<String> = capabilities
        .iter()
        .map(|c| {
            if denied.contains(c) {
                format!("{c} (denied)")
            } else {
                c.to_string()
            }
        })
        .collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// What a node type the host runs itself may do: only what its child nodes may.
const NATIVE: &str = "none: runs in the host; its child's nodes are sandboxed";

fn native_json(spec: Option<&pflow_runtime::registry::PluginSpec>) -> serde_json::Value {
    match spec {
        Some(spec) => json!({
            "type": spec.name,
            "description": spec.description,
            "params": spec.params,
            "outputs": spec.outputs,
            "origin": "builtin",
            "path": "(the host)",
        }),
        None => json!({}),
    }
}

fn plugin_json(plugin: &Plugin) -> serde_json::Value {
    json!({
        "type": plugin.spec.name,
        "description": plugin.spec.description,
        "params": plugin.spec.params,
        "outputs": plugin.spec.outputs,
        "capabilities": plugin.spec.capabilities,
        "denied_capabilities": plugin.denied,
        "origin": plugin.origin,
        "path": plugin.path,
        "sha256": plugin.hash(),
    })
}
