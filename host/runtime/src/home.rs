//! Files under `~/.pflow` (or `$PFLOW_HOME`): settings, user plugins, the compiled-component
//! cache.

use pflow_ir::SandboxOverrides;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct PflowHome {
    root: PathBuf,
}

impl PflowHome {
    /// `$PFLOW_HOME`, else `$HOME/.pflow`, else `.pflow` in the current directory.
    pub fn from_env() -> Self {
        let root = std::env::var_os("PFLOW_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".pflow"))
            })
            .unwrap_or_else(|| PathBuf::from(".pflow"));
        PflowHome { root }
    }

    pub fn at(root: impl Into<PathBuf>) -> Self {
        PflowHome { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn plugins_dir(&self) -> PathBuf {
        self.root.join("plugins")
    }

    pub fn component_cache_dir(&self) -> PathBuf {
        self.root.join("cache").join("components")
    }

    /// MCP servers, in the `{"mcpServers": {...}}` format other MCP clients use.
    pub fn mcp_servers_path(&self) -> PathBuf {
        self.root.join("mcp-servers.json")
    }

    /// The tools of each MCP server, as `pflow-host mcp sync` last saw them.
    pub fn mcp_tools_path(&self) -> PathBuf {
        self.root.join("mcp-tools.json")
    }

    /// One directory per run, holding its checkpoint.
    /// The saved workflows (`pflow-host save`, the planner's saves).
    pub fn workflows_dir(&self) -> PathBuf {
        self.root.join("workflows")
    }

    pub fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
    }

    pub fn settings_path(&self) -> PathBuf {
        self.root.join("settings.json")
    }

    /// The settings file, or defaults when there is none.
    pub fn settings(&self) -> Result<Settings, SettingsError> {
        let path = self.settings_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| SettingsError {
                path,
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Settings::default()),
            Err(e) => Err(SettingsError {
                path,
                message: e.to_string(),
            }),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read settings {}: {message}", path.display())]
pub struct SettingsError {
    pub path: PathBuf,
    pub message: String,
}

/// `settings.json`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Default sandbox limits for every node (the host's own defaults otherwise).
    #[serde(default)]
    pub sandbox: Option<SandboxOverrides>,
    #[serde(default)]
    pub plugins: PluginSettings,
    #[serde(default)]
    pub http: HttpSettings,
    #[serde(default)]
    pub mcp: McpSettings,
    /// Where the file nodes may read and write besides the working directory.
    #[serde(default)]
    pub files: crate::capabilities::fs::FileSettings,
    /// The model and provider the planner (and later the `llm` node) use.
    #[serde(default)]
    pub llm: pflow_llm::LlmSettings,
    /// What `pflow-host mcp serve` lets its clients do.
    #[serde(default)]
    pub mcp_serve: McpServeSettings,
}

/// `pflow-host mcp serve`'s limits on its clients.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServeSettings {
    /// `false` makes every execution and probe dry, whatever the client asks.
    #[serde(default = "yes")]
    pub allow_live: bool,
}

impl Default for McpServeSettings {
    fn default() -> Self {
        McpServeSettings { allow_live: true }
    }
}

fn yes() -> bool {
    true
}

/// Which configured MCP servers workflows may call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSettings {
    /// Server names from mcp-servers.json, or `*` for all of them.
    #[serde(default = "any_host")]
    pub allowed_servers: Vec<String>,
}

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings {
            allowed_servers: any_host(),
        }
    }
}

/// What the `http` capability may do, for every workflow (which can only narrow it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSettings {
    /// Host names (`api.example.com`), subdomain patterns (`*.example.com`), or `*` for any.
    #[serde(default = "any_host")]
    pub allowed_hosts: Vec<String>,
    #[serde(default = "web_schemes")]
    pub allowed_schemes: Vec<String>,
    /// Responses larger than this fail with `response_too_large`.
    #[serde(default = "default_max_response_mb")]
    pub max_response_mb: f64,
    /// Also refuse loopback and private addresses (127.0.0.0/8, 10.0.0.0/8, 172.16.0.0/12,
    /// 192.168.0.0/16, fc00::/7, ...). Link-local and cloud-metadata addresses are always
    /// refused.
    #[serde(default)]
    pub deny_private: bool,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            allowed_hosts: any_host(),
            allowed_schemes: web_schemes(),
            max_response_mb: default_max_response_mb(),
            deny_private: false,
        }
    }
}

fn any_host() -> Vec<String> {
    vec!["*".to_string()]
}

fn web_schemes() -> Vec<String> {
    vec!["http".to_string(), "https".to_string()]
}

fn default_max_response_mb() -> f64 {
    10.0
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSettings {
    /// Capabilities granted to user plugins by node type, e.g. `{"my-node": ["process"]}`.
    /// Built-in plugins get the capabilities they import; user plugins get `log` only unless
    /// granted more here.
    #[serde(default)]
    pub grants: BTreeMap<String, Vec<String>>,
}
