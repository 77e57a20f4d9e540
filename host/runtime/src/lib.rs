//! Sandboxed execution of pflow workflows: the wasmtime engine, the plugin registry, sandbox
//! limits, host capabilities and the executor.

// `NodeFailure` (about 200 bytes) is the error record every failed node produces, once per
// failure: moving it by value on that path costs nothing measurable, and boxing it would make
// every producer and consumer clumsier.
#![allow(clippy::result_large_err)]

mod attempt;
mod batch;
pub mod bindings;
mod bounded_clock;
pub mod cancel;
pub mod capabilities;
pub mod confine;
pub mod dry;
pub mod error;
pub mod executor;
pub mod home;
pub mod limits;
pub mod mcp;
pub mod outputs;
pub mod registry;
pub mod runs;
pub mod runtime_validation;
pub mod sandbox;
mod seccomp;
mod spawn;
pub mod subworkflow;

pub use cancel::CancelToken;
pub use error::NodeFailure;
pub use executor::{
    Event, ExecutionRecord, Executor, NodeReport, RunReport, RunState, StartError, Status,
};
pub use home::{PflowHome, Settings};
pub use limits::Limits;
pub use registry::{Origin, PluginDir, Registry};
pub use sandbox::Sandbox;

use capabilities::http::HttpPolicy;
use std::path::PathBuf;

/// Everything a command needs to run workflows: the sandbox, the plugins and the settings.
pub struct Host {
    pub home: PflowHome,
    pub settings: Settings,
    pub sandbox: Sandbox,
    pub registry: Registry,
}

impl Host {
    /// Reads the settings, starts the engine and discovers the plugins in `builtin_dir`,
    /// `~/.pflow/plugins` and `$PFLOW_PLUGIN_PATH`, in that order.
    pub fn open(home: PflowHome, builtin_dir: PathBuf) -> anyhow::Result<Host> {
        let settings = home.settings()?;
        dry::remember_launchers_in(home.component_cache_dir().with_file_name("dry"));
        let sandbox = Sandbox::new()?;
        let dirs = plugin_dirs(&home, builtin_dir);
        let mut registry = Registry::load(
            &sandbox,
            &dirs,
            &home.component_cache_dir(),
            &settings.plugins,
        );
        registry.add_mcp_tools(&mcp::ToolsFile::load(&home.mcp_tools_path()));
        for problem in &registry.problems {
            tracing::warn!("plugin skipped: {problem}");
        }
        Ok(Host {
            home,
            settings,
            sandbox,
            registry,
        })
    }

    /// An executor with the host's default limits and the settings' overrides, cancelled by
    /// `cancel`.
    pub fn executor(&self, cancel: &CancelToken) -> Executor<'_> {
        Executor {
            sandbox: &self.sandbox,
            registry: &self.registry,
            limits: Limits::default().with(self.settings.sandbox.as_ref()),
            http_policy: HttpPolicy::from_settings(&self.settings.http),
            mcp_servers: self.mcp_servers(),
            mcp_allowed: self.settings.mcp.allowed_servers.clone(),
            dry: None,
            cancel: cancel.clone(),
            max_node_visits: std::env::var("PFLOW_MAX_NODE_VISITS")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|&v| v > 0)
                .unwrap_or(executor::MAX_NODE_VISITS),
            file_policy: capabilities::fs::FilePolicy::from_settings(&self.settings.files),
            llm: Some(std::sync::Arc::new(capabilities::llm::LlmAccess::new(
                self.settings.llm.clone(),
            ))),
            nesting: subworkflow::Nesting {
                saved_dir: Some(self.home.workflows_dir()),
                ..Default::default()
            },
        }
    }

    /// The configured MCP servers; a file that cannot be read counts as none, with a warning.
    pub fn mcp_servers(&self) -> mcp::McpServersFile {
        mcp::McpServersFile::load(&self.home.mcp_servers_path()).unwrap_or_else(|e| {
            tracing::warn!("MCP servers ignored: {e}");
            Default::default()
        })
    }
}

/// Built-in plugins first (they cannot be shadowed), then the user's.
pub fn plugin_dirs(home: &PflowHome, builtin_dir: PathBuf) -> Vec<PluginDir> {
    let mut dirs = vec![
        PluginDir {
            path: builtin_dir,
            origin: Origin::Builtin,
        },
        PluginDir {
            path: home.plugins_dir(),
            origin: Origin::User,
        },
    ];
    if let Some(extra) = std::env::var_os("PFLOW_PLUGIN_PATH") {
        dirs.extend(std::env::split_paths(&extra).map(|path| PluginDir {
            path,
            origin: Origin::User,
        }));
    }
    dirs
}
