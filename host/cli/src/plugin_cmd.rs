//! `pflow-host plugin new|build|list`: write a node in Rust, Python, JavaScript or C, build it
//! into a component, install it, and see what is installed.

use crate::OutputFormat;
use anyhow::Result;
use clap::{Args, Subcommand};
use pflow_plugin_dev::{Language, Toolchains};
use pflow_runtime::home::PflowHome;
use pflow_runtime::registry::{write_atomically, Origin, Plugin, PluginDir, Registry};
use pflow_runtime::Host;
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(Subcommand)]
pub enum PluginCommand {
    /// Create a node project that works as generated: node type NAME, param `text`, output
    /// `result` (the text upper-cased), its WIT world, a README and a test workflow.
    New(NewArgs),
    /// Build a node project into a component and install it into ~/.pflow/plugins (installing
    /// the language's toolchain first when it is missing).
    Build(BuildArgs),
    /// Every installed plugin: its language, the capabilities it imports, and its digest.
    List {
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        output_format: OutputFormat,
    },
}

#[derive(Args)]
pub struct NewArgs {
    /// The node type, which also names the project directory.
    name: String,
    /// rust, python, js or c.
    #[arg(long, default_value = "python", value_parser = parse_language)]
    lang: Language,
    /// Where to create the project (default: ./NAME).
    #[arg(long)]
    dir: Option<PathBuf>,
}

#[derive(Args)]
pub struct BuildArgs {
    /// The project directory (default: the current one).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Build only: leave ~/.pflow/plugins alone.
    #[arg(long)]
    no_install: bool,
}

fn parse_language(name: &str) -> Result<Language, String> {
    Language::from_name(name).ok_or_else(|| format!("'{name}' is not one of rust, python, js, c"))
}

pub fn new(args: NewArgs) -> Result<u8> {
    let dir = args.dir.unwrap_or_else(|| PathBuf::from(&args.name));
    let files = pflow_plugin_dev::scaffold::scaffold(&dir, &args.name, args.lang)?;
    outln!(
        "Created {} node '{}' in {} ({} files).",
        args.lang,
        args.name,
        dir.display(),
        files.len()
    );
    outln!("Next: pflow-host plugin build {}", dir.display());
    outln!(
        "Then: pflow-host run {} text=hello",
        dir.join("test.pflow.md").display()
    );
    Ok(0)
}

pub fn build(home: &PflowHome, open: impl FnOnce() -> Result<Host>, args: BuildArgs) -> Result<u8> {
    let toolchains = Toolchains::from_env_or(home.root());
    let progress = |message: &str| eprintln!("  {message}");
    let started = std::time::Instant::now();
    let built = pflow_plugin_dev::build(&args.dir, &toolchains, &progress)?;
    eprintln!(
        "built {} ({} node, {:.1} MB) in {:.1} s",
        built.component.display(),
        built.language,
        built.bytes.len() as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    // Loaded once from the project before it is installed: a component the host refuses never
    // replaces a working one, and the compiled form lands in the cache for the first run.
    let host = open()?;
    let staging = built.component.with_file_name("install");
    write_atomically(&staging.join(format!("{}.wasm", built.name)), &built.bytes)
        .map_err(anyhow::Error::msg)?;
    let compile_started = std::time::Instant::now();
    let registry = Registry::load(
        &host.sandbox,
        &[PluginDir {
            path: staging.clone(),
            origin: Origin::User,
        }],
        &host.home.component_cache_dir(),
        &host.settings.plugins,
    );
    if let Some(problem) = registry.problems.first() {
        anyhow::bail!("the host cannot load the component: {problem}");
    }
    let Some(plugin) = registry.plugins().next() else {
        anyhow::bail!("the host found no component in {}", staging.display());
    };
    let mut capabilities =
        crate::registry_cmd::capabilities_text(&plugin.spec.capabilities, &plugin.denied);
    if !plugin.denied.is_empty() {
        capabilities.push_str(&format!(
            "; grant with {{\"plugins\": {{\"grants\": {{\"{}\": [...]}}}}}} in {}",
            plugin.spec.name,
            host.home.settings_path().display()
        ));
    }
    eprintln!(
        "node type '{}', capabilities: {capabilities} (compiled in {:.1} s)",
        plugin.spec.name,
        compile_started.elapsed().as_secs_f64()
    );
    if let Some(existing) = host.registry.get(&plugin.spec.name) {
        if existing.origin == Origin::Builtin {
            eprintln!(
                "warning: '{}' is a built-in node type, which takes precedence over this plugin; rename the node in its describe",
                plugin.spec.name
            );
        }
    }
    if args.no_install {
        return Ok(0);
    }
    // Written beside and renamed: a run never loads half a component.
    let installed = host.home.plugins_dir().join(format!("{}.wasm", built.name));
    write_atomically(&installed, &built.bytes).map_err(anyhow::Error::msg)?;
    outln!("installed {}", installed.display());
    Ok(0)
}

pub fn list(host: &Host, output_format: OutputFormat) -> Result<u8> {
    let plugins: Vec<&Plugin> = host.registry.plugins().collect();
    let languages: Vec<&str> = plugins.iter().map(|p| language_of(&p.path)).collect();
    if output_format == OutputFormat::Json {
        let rows: Vec<serde_json::Value> = plugins
            .iter()
            .zip(&languages)
            .map(|(plugin, language)| {
                json!({
                    "type": plugin.spec.name,
                    "origin": plugin.origin,
                    "language": language,
                    "capabilities": plugin.spec.capabilities,
                    "denied": plugin.denied,
                    "digest": format!("sha256:{}", plugin.hash()),
                    "path": plugin.path,
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(0);
    }
    let width = plugins.iter().map(|p| p.spec.name.len()).max().unwrap_or(4);
    for (plugin, language) in plugins.iter().zip(&languages) {
        let origin = plugin.origin.name();
        let capabilities =
            crate::registry_cmd::capabilities_text(&plugin.spec.capabilities, &plugin.denied);
        let digest = plugin.hash().get(..12).unwrap_or(plugin.hash());
        out!(
            "{:width$}  {origin:7}  {language:6}  sha256:{digest}  [{capabilities}]\n    {}\n",
            plugin.spec.name,
            plugin.path.display(),
        );
    }
    Ok(0)
}

/// What `plugin build` stamped into the component, or a guess from its toolchains' records.
fn language_of(path: &Path) -> &'static str {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| Language::of_component(&bytes))
        .map_or("unknown", Language::name)
}
