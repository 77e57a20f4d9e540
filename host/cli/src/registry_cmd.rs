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
    /// Every installed node type, with its capabilities.
    List {
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
        RegistryCommand::List { output_format } => {
            if output_format == OutputFormat::Json {
                let plugins: Vec<_> = host.registry.plugins().map(plugin_json).collect();
                let document = json!({"plugins": plugins, "problems": host.registry.problems});
                println!("{}", serde_json::to_string_pretty(&document)?);
                return Ok(0);
            }
            let plugins: Vec<&Plugin> = host.registry.plugins().collect();
            if plugins.is_empty() {
                eprintln!("No node types installed. Build the built-in ones with `just plugins`.");
            }
            let width = plugins.iter().map(|p| p.spec.name.len()).max().unwrap_or(0);
            for plugin in plugins {
                println!(
                    "{:width$}  {:8}  [{}]  {}",
                    plugin.spec.name,
                    format!("{:?}", plugin.origin).to_lowercase(),
                    capabilities_text(&plugin.spec.capabilities, &plugin.denied),
                    plugin.spec.description
                );
            }
            for problem in &host.registry.problems {
                eprintln!("warning: {problem}");
            }
            Ok(0)
        }
        RegistryCommand::Describe {
            node_type,
            output_format,
        } => {
            let Some(resolved) = host.registry.resolve(&node_type) else {
                let close = pflow_ir::closest(&node_type, host.registry.types());
                let hint = if close.is_empty() {
                    String::new()
                } else {
                    format!(" Did you mean: {}?", close.join(", "))
                };
                eprintln!("error: Unknown node type: '{node_type}'.{hint}");
                return Ok(crate::exit::CANNOT_START);
            };
            let Some(tool) = resolved.mcp_tool() else {
                let plugin = resolved.component();
                let capabilities = capabilities_text(&plugin.spec.capabilities, &plugin.denied);
                return describe(&plugin_json(plugin), &capabilities, output_format);
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
            describe(
                &document,
                &capabilities_text(&tool.spec.capabilities, &[]),
                output_format,
            )
        }
    }
}

/// One node type's description, as JSON or for a person.
/// `capabilities` is the line `capabilities_text` renders.
fn describe(
    document: &serde_json::Value,
    capabilities: &str,
    output_format: OutputFormat,
) -> Result<u8> {
    if output_format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(document)?);
        return Ok(0);
    }
    let text = |key: &str| document[key].as_str().unwrap_or_default().to_string();
    println!("{}: {}", text("type"), text("description"));
    match document.get("server") {
        Some(server) => println!("  from: MCP server {} (tool {})", server, document["tool"]),
        None => println!("  from: {} ({})", text("path"), text("origin")),
    }
    println!("  capabilities: {capabilities}");
    for title in ["params", "outputs"] {
        println!("  {title}:");
        for port in document[title].as_array().into_iter().flatten() {
            let required = if port["required"] == true {
                ", required"
            } else {
                ""
            };
            println!(
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
fn capabilities_text(capabilities: &[Capability], denied: &[Capability]) -> String {
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
