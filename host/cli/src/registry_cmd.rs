//! `pflow-host registry list|describe`.

use crate::OutputFormat;
use anyhow::Result;
use clap::Subcommand;
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
                    capabilities(plugin),
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
            let Some(plugin) = host.registry.get(&node_type) else {
                let close = pflow_ir::closest(&node_type, host.registry.types());
                let hint = if close.is_empty() {
                    String::new()
                } else {
                    format!(" Did you mean: {}?", close.join(", "))
                };
                eprintln!("error: Unknown node type: '{node_type}'.{hint}");
                return Ok(crate::exit::CANNOT_START);
            };
            if output_format == OutputFormat::Json {
                println!("{}", serde_json::to_string_pretty(&plugin_json(plugin))?);
                return Ok(0);
            }
            let spec = &plugin.spec;
            println!("{}: {}", spec.name, spec.description);
            println!("  from: {} ({:?})", plugin.path.display(), plugin.origin);
            println!("  capabilities: {}", capabilities(plugin));
            for (title, ports) in [("params", &spec.params), ("outputs", &spec.outputs)] {
                println!("  {title}:");
                for port in ports.iter() {
                    let required = if port.required { ", required" } else { "" };
                    println!(
                        "    {} ({}{required}): {}",
                        port.name, port.type_name, port.description
                    );
                }
            }
            Ok(0)
        }
    }
}

/// `log, process (denied)`.
fn capabilities(plugin: &Plugin) -> String {
    let names: Vec<String> = plugin
        .spec
        .capabilities
        .iter()
        .map(|c| {
            if plugin.denied.contains(c) {
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
