//! `pflow-host mcp add|list|remove|sync|tools`: the MCP servers in `~/.pflow/mcp-servers.json`
//! and the node types their tools become.

use crate::{exit, OutputFormat};
use anyhow::{anyhow, bail, Result};
use clap::Subcommand;
use pflow_runtime::capabilities::http::HttpPolicy;
use pflow_runtime::mcp::{McpServersFile, McpSessions, ServerConfig, ToolsFile};
use pflow_runtime::registry::mcp_type_name;
use pflow_runtime::Host;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

#[derive(Subcommand)]
pub enum McpCommand {
    /// Add (or replace) a server: `mcp add NAME -- COMMAND ARGS...` for stdio,
    /// `mcp add NAME --url URL [--header K=V]` for Streamable HTTP. Values may use ${VAR}
    /// and ${VAR:-default}.
    Add {
        name: String,
        #[arg(long)]
        url: Option<String>,
        #[arg(long = "header", value_name = "KEY=VALUE")]
        headers: Vec<String>,
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// The command and its arguments, after `--`.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Serve pflow-host's own tools to an agent as an MCP server (stdio, or Streamable HTTP
    /// with --http).
    Serve(crate::mcp_serve::ServeArgs),
    /// The configured servers.
    List {
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output_format: OutputFormat,
    },
    /// Remove a server and its recorded tools.
    Remove { name: String },
    /// Start each server (or NAME), list its tools and record them as node types.
    Sync {
        name: Option<String>,
        /// Seconds each server gets to start and list its tools before it is killed.
        #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
        timeout: f64,
    },
    /// The node types the recorded tools provide.
    Tools {
        name: Option<String>,
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output_format: OutputFormat,
    },
}

pub fn run(host: &Host, command: McpCommand) -> Result<u8> {
    let config_path = host.home.mcp_servers_path();
    let tools_path = host.home.mcp_tools_path();
    let load =
        || McpServersFile::load(&config_path).map_err(|e| anyhow!("cannot read MCP servers: {e}"));
    match command {
        McpCommand::Add {
            name,
            url,
            headers,
            env,
            command,
        } => {
            if !pflow_ir::is_node_id(&name) {
                bail!("Server name '{name}' may only contain letters, digits, '_' and '-' (it becomes part of node types)");
            }
            let config = match (url, command.split_first()) {
                (Some(url), None) => ServerConfig {
                    kind: Some("http".to_string()),
                    url: Some(url),
                    headers: pairs(&headers)?,
                    ..ServerConfig::default()
                },
                (None, Some((program, args))) => ServerConfig {
                    command: Some(program.clone()),
                    args: args.to_vec(),
                    env: pairs(&env)?,
                    ..ServerConfig::default()
                },
                (Some(_), Some(_)) => bail!("Give either --url or a command after --, not both"),
                (None, None) => {
                    bail!("Give the server's command after -- (stdio), or --url (Streamable HTTP)")
                }
            };
            let mut file = load()?;
            file.servers.insert(name.clone(), config);
            file.save(&config_path).map_err(|e| anyhow!(e))?;
            outln!(
                "Added MCP server '{name}'. Run `pflow-host mcp sync {name}` to record its tools."
            );
            Ok(0)
        }
        // main hands the host to the server itself (`mcp_serve::serve` owns it).
        McpCommand::Serve(_) => {
            bail!("mcp serve needs the host to itself; run `pflow-host mcp serve`")
        }
        McpCommand::List { output_format } => {
            let file = load()?;
            let tools = ToolsFile::load(&tools_path);
            if output_format == OutputFormat::Json {
                outln!("{}", serde_json::to_string_pretty(&file)?);
                return Ok(0);
            }
            if file.servers.is_empty() {
                outln!("No MCP servers configured. Add one with `pflow-host mcp add NAME -- COMMAND ARGS...`.");
            }
            for (name, server) in &file.servers {
                let how = match (&server.url, &server.command) {
                    (Some(url), _) => format!("http {url}"),
                    (None, Some(command)) => format!("stdio {command} {}", server.args.join(" ")),
                    (None, None) => "incomplete".to_string(),
                };
                let synced = match tools.servers.get(name) {
                    Some(list) => format!("{} tool(s)", list.len()),
                    None => "not synced".to_string(),
                };
                outln!("{name}  {}  [{synced}]", how.trim_end());
            }
            Ok(0)
        }
        McpCommand::Remove { name } => {
            let mut file = load()?;
            if file.servers.remove(&name).is_none() {
                eprintln!("error: No MCP server named '{name}'");
                return Ok(exit::CANNOT_START);
            }
            file.save(&config_path).map_err(|e| anyhow!(e))?;
            let mut tools = ToolsFile::load(&tools_path);
            if tools.servers.remove(&name).is_some() {
                tools.save(&tools_path).map_err(|e| anyhow!(e))?;
            }
            outln!("Removed MCP server '{name}'.");
            Ok(0)
        }
        McpCommand::Sync { name, timeout } => {
            let timeout = Duration::try_from_secs_f64(timeout)
                .map_err(|_| anyhow!("--timeout must be a positive number of seconds"))?;
            let file = load()?;
            let names: Vec<String> = match name {
                Some(name) if file.servers.contains_key(&name) => vec![name],
                Some(name) => bail!("No MCP server named '{name}'"),
                None => file.servers.keys().cloned().collect(),
            };
            let sessions = McpSessions::new(
                file.servers.clone(),
                vec!["*".to_string()],
                HttpPolicy::from_settings(&host.settings.http),
            )
            .map_err(|e| anyhow!(e))?;
            let cancel = crate::signals::cancel_on_interrupt();
            let mut tools = ToolsFile::load(&tools_path);
            let mut failed = 0;
            for name in names {
                if cancel.is_cancelled() {
                    break;
                }
                match sessions.list_tools(&name, Instant::now() + timeout, &cancel) {
                    Ok(list) => {
                        outln!("{name}: {} tool(s)", list.len());
                        tools.servers.insert(name, list);
                    }
                    Err(e) => {
                        eprintln!("error: {name}: {}", e.message);
                        failed += 1;
                    }
                }
            }
            sessions.shutdown();
            if cancel.is_cancelled() {
                eprintln!("cancelled: the tools recorded before are kept");
                return Ok(exit::CANCELLED);
            }
            tools.save(&tools_path).map_err(|e| anyhow!(e))?;
            Ok(if failed == 0 { 0 } else { exit::FAILED })
        }
        McpCommand::Tools {
            name,
            output_format,
        } => {
            let tools = ToolsFile::load(&tools_path);
            let selected: BTreeMap<&String, &Vec<Value>> = tools
                .servers
                .iter()
                .filter(|(server, _)| name.as_ref().is_none_or(|n| n == *server))
                .collect();
            let rows: Vec<Value> = selected
                .iter()
                .flat_map(|(server, list)| {
                    list.iter().map(move |tool| {
                        let tool_name = tool["name"].as_str().unwrap_or_default();
                        json!({
                            "type": mcp_type_name(server, tool_name),
                            "server": server,
                            "tool": tool_name,
                            "description": tool["description"],
                            "read_only": tool["annotations"]["readOnlyHint"],
                        })
                    })
                })
                .collect();
            if output_format == OutputFormat::Json {
                outln!("{}", serde_json::to_string_pretty(&rows)?);
            } else if rows.is_empty() {
                outln!("No tools recorded. Run `pflow-host mcp sync` first.");
            } else {
                for row in rows {
                    let description = row["description"].as_str().unwrap_or_default();
                    let first_line = description.lines().next().unwrap_or_default();
                    outln!("{}  {first_line}", row["type"].as_str().unwrap_or_default());
                }
            }
            Ok(0)
        }
    }
}

fn pairs(items: &[String]) -> Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|item| match item.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
            _ => bail!("'{item}' must be written KEY=VALUE"),
        })
        .collect()
}
