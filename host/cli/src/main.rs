//! `pflow-host`: run pflow workflows with every node sandboxed as a WebAssembly component.

/// `print!`/`println!` for the command's output on stdout, except that a reader that went away
/// (`pflow-host ... | head`) ends the process quietly instead of panicking, as ripgrep does.
/// (SIGPIPE cannot simply be restored: the host writes to its nodes' commands through pipes.)
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write(format_args!($($arg)*), false) };
}
macro_rules! outln {
    () => { $crate::output::write(format_args!(""), true) };
    ($($arg:tt)*) => { $crate::output::write(format_args!($($arg)*), true) };
}

mod builtins;
mod display;
mod find_cmd;
mod guide_cmd;
mod library_cmd;
mod mcp_cmd;
mod mcp_serve;
mod output;
mod plan_cmd;
mod plan_display;
mod plugin_cmd;
mod probe_cmd;
mod registry_cmd;
mod report_cmd;
mod run_cmd;
mod run_repair;
mod runs_cmd;
mod signals;
mod validate_cmd;
mod workflow_file;

use clap::{Parser, Subcommand, ValueEnum};
use pflow_runtime::{Host, PflowHome};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "pflow-host",
    version,
    about = "Plan and run pflow workflows with every node sandboxed as a WebAssembly component",
    long_about = "Plan and run pflow workflows with every node sandboxed as a WebAssembly component.\n\n\
        `pflow-host \"count the words in README.md\"` asks an LLM for a workflow, validates it, \
        tries it in a dry sandbox, runs it and saves it.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a command: plan the request, then run it.
    #[command(flatten)]
    plan: plan_cmd::PlanArgs,
    /// Directory of the built-in node components, instead of those embedded in the binary
    /// (for developing them).
    #[arg(long, global = true, env = "PFLOW_BUILTIN_PLUGINS", value_name = "DIR")]
    builtin_plugins: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Plan a workflow for a request (validate it, dry-run it, save it) without running it.
    Plan(plan_cmd::PlanArgs),
    /// Run a workflow: `pflow-host run FILE.json [key=value ...]`.
    Run(run_cmd::RunArgs),
    /// Check a workflow without running it: `pflow-host validate FILE.json [key=value ...]`.
    /// Exits 0 when it is valid, 1 when not.
    Validate(validate_cmd::ValidateArgs),
    /// Manage MCP servers and record their tools as node types.
    #[command(subcommand)]
    Mcp(mcp_cmd::McpCommand),
    /// Write a node in Rust, Python, JavaScript or C: `plugin new`, `plugin build`, `plugin list`.
    #[command(subcommand)]
    Plugin(plugin_cmd::PluginCommand),
    /// Show the node types that are installed.
    #[command(subcommand)]
    Registry(registry_cmd::RegistryCommand),
    /// Past runs and their checkpoints (resume one with `run --resume RUN_ID`).
    #[command(subcommand)]
    Runs(runs_cmd::RunsCommand),
    /// Find saved workflows by what they do (ranked locally, no LLM).
    Find(find_cmd::FindArgs),
    /// Save a workflow file to the library (~/.pflow/workflows), to run it by name.
    Save(library_cmd::SaveArgs),
    /// The saved workflows (with run counts); keywords narrow the list.
    List(library_cmd::ListArgs),
    /// A saved workflow (or a workflow file): inputs, outputs, node types, how to run it.
    Describe(library_cmd::NameArgs),
    /// Delete a saved workflow.
    Delete(library_cmd::NameArgs),
    /// The runs of a saved workflow, newest first.
    History(library_cmd::NameArgs),
    /// Instructions for agents: the format, templates, nodes, batch, control flow, dry runs,
    /// the fix loop (`guide core batch`; all topics when none is named).
    Guide(guide_cmd::GuideArgs),
    /// Run one node in the sandbox (dry unless --live) and show the paths of its real output.
    Probe(probe_cmd::ProbeArgs),
    /// A run as a readable report: each node's status, time, error and LLM usage.
    Report(report_cmd::ReportArgs),
    /// A workflow as a Mermaid flowchart.
    Mermaid(report_cmd::MermaidArgs),
    /// Values at paths of a probe's or a run's output: `read-fields EXEC_ID probe.response.id`.
    ReadFields(probe_cmd::ReadFieldsArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormat {
    /// Progress and results for a person.
    #[default]
    Text,
    /// One JSON document on stdout.
    Json,
}

/// Exit codes: 0 success, 1 the workflow ran and failed, 2 it could not start (bad file, bad
/// inputs, unknown node types), 3 planning failed, 130 cancelled with Ctrl-C.
pub mod exit {
    pub const FAILED: u8 = 1;
    pub const CANNOT_START: u8 = 2;
    pub const CANCELLED: u8 = 130;

    /// The exit code of a workflow that ran.
    pub fn of(status: pflow_runtime::Status) -> u8 {
        match status {
            pflow_runtime::Status::Succeeded => 0,
            pflow_runtime::Status::Failed => FAILED,
            pflow_runtime::Status::Cancelled => CANCELLED,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    display::init_logging();
    let open = || {
        let home = PflowHome::from_env();
        let builtin = match &cli.builtin_plugins {
            Some(dir) => dir.clone(),
            None => builtins::unpacked(&home)?.unwrap_or_else(default_builtin_dir),
        };
        Host::open(home, builtin)
    };
    let result = match cli.command {
        None if cli.plan.request.is_none() => {
            use clap::CommandFactory;
            let _ = Cli::command().print_help();
            return ExitCode::from(exit::CANNOT_START);
        }
        // `pflow-host NAME key=value`: a saved workflow or a workflow file runs, as `pflow NAME`
        // does; anything else is a request to plan.
        None => match run_cmd::RunArgs::for_named(&PflowHome::from_env(), &cli.plan) {
            Some(args) => open().and_then(|host| run_cmd::run(&host, args)),
            None => open().and_then(|host| plan_cmd::run(&host, cli.plan)),
        },
        Some(Command::Plan(args)) => open().and_then(|host| {
            plan_cmd::run(
                &host,
                plan_cmd::PlanArgs {
                    no_run: true,
                    ..args
                },
            )
        }),
        Some(Command::Run(args)) => open().and_then(|host| run_cmd::run(&host, args)),
        Some(Command::Validate(args)) => open().and_then(|host| validate_cmd::run(&host, args)),
        Some(Command::Mcp(mcp_cmd::McpCommand::Serve(args))) => {
            open().and_then(|host| mcp_serve::serve(host, args))
        }
        Some(Command::Mcp(command)) => open().and_then(|host| mcp_cmd::run(&host, command)),
        Some(Command::Plugin(plugin_cmd::PluginCommand::New(args))) => plugin_cmd::new(args),
        Some(Command::Plugin(plugin_cmd::PluginCommand::Build(args))) => {
            plugin_cmd::build(&PflowHome::from_env(), open, args)
        }
        Some(Command::Plugin(plugin_cmd::PluginCommand::List { output_format })) => {
            open().and_then(|host| plugin_cmd::list(&host, output_format))
        }
        Some(Command::Registry(command)) => {
            open().and_then(|host| registry_cmd::run(&host, command))
        }
        // Reads files only: no engine, no plugins.
        Some(Command::Runs(command)) => runs_cmd::run(&PflowHome::from_env(), command),
        Some(Command::Find(args)) => find_cmd::run(&PflowHome::from_env(), args),
        Some(Command::Save(args)) => library_cmd::save(&PflowHome::from_env(), args),
        Some(Command::List(args)) => library_cmd::list(&PflowHome::from_env(), args),
        Some(Command::Describe(args)) => library_cmd::describe(&PflowHome::from_env(), args),
        Some(Command::Delete(args)) => library_cmd::delete(&PflowHome::from_env(), args),
        Some(Command::History(args)) => library_cmd::history(&PflowHome::from_env(), args),
        Some(Command::Guide(args)) => guide_cmd::run(args),
        Some(Command::Report(args)) => report_cmd::report(&PflowHome::from_env(), args),
        Some(Command::Mermaid(args)) => report_cmd::mermaid(args),
        Some(Command::Probe(args)) => open().and_then(|host| probe_cmd::probe(&host, args)),
        Some(Command::ReadFields(args)) => probe_cmd::read_fields(&PflowHome::from_env(), args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(exit::CANNOT_START)
        }
    }
}

/// For a binary built without embedded components: `<prefix>/plugins` for a binary in
/// `<prefix>/bin` or `target/<profile>`.
fn default_builtin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let exe_dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    let beside_parent = exe_dir.parent().map(|p| p.join("plugins"));
    match beside_parent {
        Some(dir) if dir.is_dir() => dir,
        _ => exe_dir.join("plugins"),
    }
}
