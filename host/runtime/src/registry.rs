//! Plugin discovery: every `*.wasm` component in the built-in directory, `~/.pflow/plugins` and
//! `$PFLOW_PLUGIN_PATH`, with what each one is (`describe`) and which capabilities it imports.
//!
//! Compiling a component takes tens of milliseconds to seconds, so each is compiled once and kept
//! on disk in serialized form, keyed by the engine's compatibility hash and the component's
//! SHA-256, together with its description. A run then loads only the components it uses.

use crate::bindings::NodePre;
use crate::capabilities::HostState;
use crate::capabilities::{Capability, Grants};
use crate::error::{category, NodeFailure};
use crate::home::PluginSettings;
use crate::sandbox::Sandbox;
use pflow_validate::{NodeCatalog, Port};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use wasmtime::component::Component;

/// Where a plugin came from, which decides what it is trusted with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Shipped with pflow-host: granted the capabilities it imports.
    Builtin,
    /// Installed by the user: granted `log`, plus what `settings.json` grants.
    User,
}

impl Origin {
    /// As the JSON reports write it: `builtin` or `user`.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Builtin => "builtin",
            Origin::User => "user",
        }
    }
}

/// A directory to scan and the trust its plugins get.
#[derive(Debug, Clone)]
pub struct PluginDir {
    pub path: PathBuf,
    pub origin: Origin,
}

/// What a plugin is, as its `describe` says, plus the capabilities it imports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginSpec {
    pub name: String,
    pub description: String,
    pub params: Vec<Port>,
    pub outputs: Vec<Port>,
    pub capabilities: Vec<Capability>,
}

/// Whether a component came out of the disk cache or had to be compiled in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheUse {
    Hit,
    Compiled,
}

pub struct Plugin {
    pub spec: PluginSpec,
    pub path: PathBuf,
    pub origin: Origin,
    pub grants: Grants,
    /// Capabilities it imports but is not granted.
    pub denied: Vec<Capability>,
    hash: String,
    cache_file: PathBuf,
    /// Set when `describe` had to compile the component already.
    compiled: Mutex<Option<Component>>,
    prepared: OnceLock<Result<(NodePre<HostState>, CacheUse), String>>,
}

impl Plugin {
    /// The component linked and ready to instantiate, loaded on first use.
    pub fn prepared(
        &self,
        sandbox: &Sandbox,
    ) -> Result<(&NodePre<HostState>, CacheUse), NodeFailure> {
        let prepared = self.prepared.get_or_init(|| {
            let compiled = self.compiled.lock().map(|mut c| c.take()).unwrap_or(None);
            let (component, cache) = match compiled {
                Some(component) => (component, CacheUse::Compiled),
                None => load_or_compile(sandbox, &self.path, &self.cache_file)?,
            };
            Ok((sandbox.prepare(&component)?, cache))
        });
        match prepared {
            Ok((pre, cache)) => Ok((pre, *cache)),
            Err(message) => Err(NodeFailure::new(
                "host",
                category::PLUGIN_LOAD,
                format!("Cannot load plugin {}: {message}", self.path.display()),
            )),
        }
    }

    pub fn hash(&self) -> &str {
        &self.hash
    }
}

/// A tool of an MCP server as a node type, `mcp-<server>-<tool>`: run by the `mcp` plugin with
/// the server and tool added to its params.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolType {
    pub server: String,
    pub tool: String,
    pub spec: PluginSpec,
    /// The tool's `annotations` (`readOnlyHint`, `destructiveHint`, ...), kept for dry runs.
    pub annotations: serde_json::Value,
}

/// The component that runs MCP tool node types (`mcp-<server>-<tool>`).
pub const MCP_RUNNER: &str = "mcp";

/// How a node type is implemented.
#[derive(Clone, Copy)]
pub enum NodeImpl<'a> {
    /// A WebAssembly component, run with its params.
    Component(&'a Plugin),
    /// A tool of an MCP server, run by the `mcp` component with the tool added to its params.
    McpTool {
        runner: &'a Plugin,
        tool: &'a McpToolType,
    },
    /// A nested workflow: control flow the executor runs itself (see `subworkflow`).
    Workflow,
}

impl<'a> NodeImpl<'a> {
    /// The component that executes the node; None for a nested workflow.
    pub fn component(self) -> Option<&'a Plugin> {
        match self {
            NodeImpl::Component(plugin) | NodeImpl::McpTool { runner: plugin, .. } => Some(plugin),
            NodeImpl::Workflow => None,
        }
    }

    pub fn mcp_tool(self) -> Option<&'a McpToolType> {
        match self {
            NodeImpl::McpTool { tool, .. } => Some(tool),
            NodeImpl::Component(_) | NodeImpl::Workflow => None,
        }
    }

    /// Whether running it may open MCP sessions: a tool, a component granted `mcp`, or a nested
    /// workflow (whose nodes may).
    pub fn uses_mcp(self) -> bool {
        self.component()
            .is_none_or(|plugin| plugin.grants.allows(crate::capabilities::Capability::Mcp))
    }
}

/// All plugins found, by node type.
pub struct Registry {
    plugins: BTreeMap<String, Plugin>,
    /// The node types the host runs itself (`workflow`).
    native: PluginSpec,
    mcp_tools: BTreeMap<String, McpToolType>,
    /// Files that could not be loaded, and types shadowed by an earlier directory.
    pub problems: Vec<String>,
}

impl Registry {
    /// Scans `dirs` in order; the first plugin of a type wins.
    pub fn load(
        sandbox: &Sandbox,
        dirs: &[PluginDir],
        cache_dir: &Path,
        settings: &PluginSettings,
    ) -> Registry {
        let engine_dir = cache_dir.join(engine_key(sandbox));
        let mut digests = DigestCache::open(engine_dir.join("digests.json"));
        let mut registry = Registry {
            plugins: BTreeMap::new(),
            native: crate::subworkflow::spec(),
            mcp_tools: BTreeMap::new(),
            problems: Vec::new(),
        };
        for dir in dirs {
            for path in component_files(&dir.path) {
                let loaded = digests.digest(&path).and_then(|hash| {
                    load_plugin(sandbox, &path, hash, dir.origin, &engine_dir, settings)
                });
                match loaded {
                    Ok(plugin) => {
                        if let Some(first) = registry.plugins.get(&plugin.spec.name) {
                            registry.problems.push(format!(
                                "{} also defines node type '{}'; {} is used",
                                path.display(),
                                plugin.spec.name,
                                first.path.display()
                            ));
                        } else {
                            registry.plugins.insert(plugin.spec.name.clone(), plugin);
                        }
                    }
                    Err(message) => registry
                        .problems
                        .push(format!("{}: {message}", path.display())),
                }
            }
        }
        digests.save();
        registry
    }

    pub fn get(&self, node_type: &str) -> Option<&Plugin> {
        self.plugins.get(node_type)
    }

    /// Adds a node type for every tool that `mcp sync` recorded, when the `mcp` plugin is
    /// installed to run them.
    pub fn add_mcp_tools(&mut self, tools: &crate::mcp::ToolsFile) {
        if !self.plugins.contains_key(MCP_RUNNER) {
            return;
        }
        for (server, server_tools) in &tools.servers {
            for tool in server_tools {
                match mcp_tool_type(server, tool) {
                    Some(tool_type) => {
                        self.mcp_tools
                            .insert(tool_type.spec.name.clone(), tool_type);
                    }
                    None => self.problems.push(format!(
                        "MCP server '{server}' has a tool without a usable name: {tool}"
                    )),
                }
            }
        }
    }

    /// How `node_type` runs, when it is installed.
    pub fn resolve(&self, node_type: &str) -> Option<NodeImpl<'_>> {
        if node_type == self.native.name {
            return Some(NodeImpl::Workflow);
        }
        if let Some(plugin) = self.plugins.get(node_type) {
            return Some(NodeImpl::Component(plugin));
        }
        let tool = self.mcp_tools.get(node_type)?;
        Some(NodeImpl::McpTool {
            runner: self.plugins.get(MCP_RUNNER)?,
            tool,
        })
    }

    pub fn mcp_tools(&self) -> impl Iterator<Item = &McpToolType> {
        self.mcp_tools.values()
    }

    /// Every node type: plugins and MCP tools.
    pub fn types(&self) -> impl Iterator<Item = &str> {
        self.plugins
            .keys()
            .chain(self.mcp_tools.keys())
            .map(String::as_str)
            .chain([self.native.name.as_str()])
    }

    fn spec(&self, node_type: &str) -> Option<&PluginSpec> {
        if node_type == self.native.name {
            return Some(&self.native);
        }
        match self.plugins.get(node_type) {
            Some(plugin) => Some(&plugin.spec),
            None => self.mcp_tools.get(node_type).map(|t| &t.spec),
        }
    }

    pub fn plugins(&self) -> impl Iterator<Item = &Plugin> {
        self.plugins.values()
    }

    /// Every node type's description, with its origin (MCP tools count as the user's).
    pub fn specs(&self) -> impl Iterator<Item = (&PluginSpec, Origin)> {
        self.plugins
            .values()
            .map(|p| (&p.spec, p.origin))
            .chain(self.mcp_tools.values().map(|t| (&t.spec, Origin::User)))
            .chain([(&self.native, Origin::Builtin)])
    }

    /// The node types the host runs itself.
    pub fn native_specs(&self) -> impl Iterator<Item = &PluginSpec> {
        [&self.native].into_iter()
    }
}

/// The `*.wasm` files of a directory, sorted; a missing directory has none.
fn component_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    files.sort();
    files
}

/// Cache entries are only valid for an engine with the same compiler and settings.
fn engine_key(sandbox: &Sandbox) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    sandbox
        .engine()
        .precompile_compatibility_hash()
        .hash(&mut hasher);
    format!("engine-{:016x}", hasher.finish())
}

fn load_plugin(
    sandbox: &Sandbox,
    path: &Path,
    hash: String,
    origin: Origin,
    engine_dir: &Path,
    settings: &PluginSettings,
) -> Result<Plugin, String> {
    let cache_file = engine_dir.join(format!("{hash}.cwasm"));
    let spec_file = engine_dir.join(format!("{hash}.json"));

    let cached_spec = std::fs::read(&spec_file)
        .ok()
        .and_then(|text| serde_json::from_slice::<PluginSpec>(&text).ok())
        .filter(|_| cache_file.exists());
    let (spec, compiled) = match cached_spec {
        Some(spec) => (spec, None),
        None => {
            let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
            let component = compile_and_store(sandbox, &bytes, &cache_file)?;
            let spec = describe(sandbox, &component)?;
            write_atomically(
                &spec_file,
                &serde_json::to_vec_pretty(&spec).unwrap_or_default(),
            )?;
            (spec, Some(component))
        }
    };
    let granted: Vec<Capability> = match origin {
        Origin::Builtin => spec.capabilities.clone(),
        Origin::User => {
            let extra = settings.grants.get(&spec.name).into_iter().flatten();
            std::iter::once(Capability::Log)
                .chain(extra.filter_map(|name| Capability::from_name(name)))
                .collect()
        }
    };
    let denied = spec
        .capabilities
        .iter()
        .copied()
        .filter(|c| !granted.contains(c))
        .collect();
    Ok(Plugin {
        grants: Grants::of(granted),
        denied,
        spec,
        path: path.to_path_buf(),
        origin,
        hash,
        cache_file,
        compiled: Mutex::new(compiled),
        prepared: OnceLock::new(),
    })
}

fn describe(sandbox: &Sandbox, component: &Component) -> Result<PluginSpec, String> {
    let pre = sandbox.prepare(component)?;
    let spec = sandbox
        .describe(&pre)
        .map_err(|e| format!("its describe failed: {e}"))?;
    if !pflow_ir::is_node_id(&spec.name) {
        return Err(format!(
            "its describe names the node type '{}'; a type may only contain letters, digits, '_' and '-'",
            spec.name
        ));
    }
    let ports = |ports: Vec<crate::bindings::pflow::node::types::Port>| {
        ports
            .into_iter()
            .map(|p| {
                let schema = match p.schema {
                    None => None,
                    Some(text) => Some(serde_json::from_str(&text).map_err(|e| {
                        format!(
                            "its describe gives '{}' a schema that is not JSON: {e}",
                            p.name
                        )
                    })?),
                };
                Ok(Port {
                    name: p.name,
                    type_name: p.type_,
                    description: p.description,
                    required: p.required,
                    schema,
                })
            })
            .collect::<Result<Vec<_>, String>>()
    };
    let engine = sandbox.engine();
    let mut capabilities: Vec<Capability> = component
        .component_type()
        .imports(engine)
        .filter_map(|(name, _)| Capability::from_import(name))
        .collect();
    capabilities.sort();
    capabilities.dedup();
    Ok(PluginSpec {
        name: spec.name,
        description: spec.description,
        params: ports(spec.params)?,
        outputs: ports(spec.outputs)?,
        capabilities,
    })
}

fn compile_and_store(
    sandbox: &Sandbox,
    bytes: &[u8],
    cache_file: &Path,
) -> Result<Component, String> {
    let component = Component::new(sandbox.engine(), bytes)
        .map_err(|e| format!("not a valid pflow component: {e:#}"))?;
    match component.serialize() {
        Ok(serialized) => {
            // A cache that cannot be written only costs time on the next run.
            if let Err(e) = write_atomically(cache_file, &serialized) {
                tracing::warn!("cannot cache compiled component: {e}");
            }
        }
        Err(e) => tracing::warn!("cannot serialize compiled component: {e:#}"),
    }
    Ok(component)
}

fn load_or_compile(
    sandbox: &Sandbox,
    path: &Path,
    cache_file: &Path,
) -> Result<(Component, CacheUse), String> {
    // SAFETY: the file was written by `compile_and_store` for an engine with this
    // compatibility hash (it is part of the path). wasmtime checks the header and the engine
    // settings again; a file that fails that check is recompiled.
    match unsafe { Component::deserialize_file(sandbox.engine(), cache_file) } {
        Ok(component) => Ok((component, CacheUse::Hit)),
        Err(e) => {
            tracing::debug!(
                "compiled-component cache miss for {}: {e:#}",
                path.display()
            );
            let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
            Ok((
                compile_and_store(sandbox, &bytes, cache_file)?,
                CacheUse::Compiled,
            ))
        }
    }
}

/// Each component file's SHA-256, remembered by its size, modification time and inode: hashing
/// every component at every start costs milliseconds per megabyte (a Python node is 20 MB).
struct DigestCache {
    file: PathBuf,
    entries: BTreeMap<String, StampedDigest>,
    changed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StampedDigest {
    size: u64,
    modified_ns: u128,
    inode: u64,
    sha256: String,
}

impl DigestCache {
    fn open(file: PathBuf) -> Self {
        let entries = std::fs::read(&file)
            .ok()
            .and_then(|text| serde_json::from_slice(&text).ok())
            .unwrap_or_default();
        DigestCache {
            file,
            entries,
            changed: false,
        }
    }

    fn digest(&mut self, path: &Path) -> Result<String, String> {
        use std::os::unix::fs::MetadataExt;
        let metadata = std::fs::metadata(path).map_err(|e| e.to_string())?;
        let modified_ns = metadata
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let key = path.to_string_lossy().into_owned();
        if let Some(known) = self.entries.get(&key) {
            if known.size == metadata.len()
                && known.modified_ns == modified_ns
                && known.inode == metadata.ino()
            {
                return Ok(known.sha256.clone());
            }
        }
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        let sha256 = hex(&Sha256::digest(&bytes));
        self.entries.insert(
            key,
            StampedDigest {
                size: bytes.len() as u64,
                modified_ns,
                inode: metadata.ino(),
                sha256: sha256.clone(),
            },
        );
        self.changed = true;
        Ok(sha256)
    }

    /// Keeps what was learnt; a cache that cannot be written only costs time later.
    fn save(&mut self) {
        if !self.changed {
            return;
        }
        self.entries.retain(|path, _| Path::new(path).exists());
        let text = serde_json::to_vec(&self.entries).unwrap_or_default();
        if let Err(e) = write_atomically(&self.file, &text) {
            tracing::warn!("cannot cache component digests: {e}");
        }
        self.changed = false;
    }
}

/// Writes through a temporary file and a rename, so a reader never sees half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().ok_or("no parent directory")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    std::fs::write(&partial, bytes)
        .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    std::fs::rename(&partial, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The validator sees node types through their descriptions alone.
impl NodeCatalog for Registry {
    fn params(&self, node_type: &str) -> Option<&[Port]> {
        self.spec(node_type).map(|s| s.params.as_slice())
    }

    fn outputs(&self, node_type: &str) -> Option<&[Port]> {
        self.spec(node_type).map(|s| s.outputs.as_slice())
    }

    fn types(&self) -> Vec<&str> {
        Registry::types(self).collect()
    }
}

/// `mcp-<server>-<tool>`, with whatever a node type may not contain replaced by '-'.
pub fn mcp_type_name(server: &str, tool: &str) -> String {
    format!("mcp-{server}-{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// A node type from an MCP `Tool`: params from `inputSchema`, outputs from `outputSchema`'s
/// properties (plus `result`), or `result` typed `any` without one.
fn mcp_tool_type(server: &str, tool: &serde_json::Value) -> Option<McpToolType> {
    use serde_json::Value;
    let name = tool.get("name")?.as_str()?;
    let ports = |schema: Option<&Value>| -> Vec<Port> {
        let Some(schema) = schema else {
            return Vec::new();
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .map(|(key, property)| Port {
                        name: key.clone(),
                        type_name: pflow_type(property),
                        description: property
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        required: required.contains(&key.as_str()),
                        schema: Some(property.clone()),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let output_schema = tool
        .get("outputSchema")
        .filter(|s| s.get("properties").is_some());
    let mut outputs = ports(output_schema);
    outputs.retain(|p| p.name != "result");
    outputs.push(Port {
        name: "result".to_string(),
        type_name: if output_schema.is_some() {
            "dict"
        } else {
            "any"
        }
        .to_string(),
        description: "The structured result, or the text content (parsed when it is JSON)"
            .to_string(),
        required: true,
        schema: output_schema.cloned(),
    });
    Some(McpToolType {
        server: server.to_string(),
        tool: name.to_string(),
        spec: PluginSpec {
            name: mcp_type_name(server, name),
            description: tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            params: ports(tool.get("inputSchema")),
            outputs,
            capabilities: vec![Capability::Mcp],
        },
        annotations: tool.get("annotations").cloned().unwrap_or(Value::Null),
    })
}

/// JSON Schema's type as pflow names it.
fn pflow_type(schema: &serde_json::Value) -> String {
    let name = |t: &str| match t {
        "string" => "str",
        "integer" => "int",
        "number" => "float",
        "boolean" => "bool",
        "object" => "dict",
        "array" => "list",
        "null" => "null",
        _ => "any",
    };
    match schema.get("type") {
        Some(serde_json::Value::String(t)) => name(t).to_string(),
        Some(serde_json::Value::Array(types)) => types
            .iter()
            .filter_map(|t| t.as_str())
            .map(name)
            .collect::<Vec<_>>()
            .join("|"),
        _ => "any".to_string(),
    }
}
