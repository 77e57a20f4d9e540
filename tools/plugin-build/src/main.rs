//! Builds every plugin crate under `plugins/` for WebAssembly and turns each core module into a
//! component of the `pflow:node` world, and builds the built-in nodes written in other languages
//! (`plugins/code`, Python) with the same path as `pflow-host plugin build`.
//!
//! Guest code builds with whichever wasm toolchain the machine has (see
//! `pflow_plugin_dev::toolchain`); a missing one is installed (the README says how).

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use pflow_plugin_dev::componentize::{componentize, stamp};
use pflow_plugin_dev::lang::rust::cdylib_artifacts;
use pflow_plugin_dev::toolchain::RustToolchain;
use pflow_plugin_dev::{Language, Toolchains};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Built-in nodes written in other languages than Rust, as plugin projects under `plugins/`.
const PROJECTS: &[&str] = &["code"];

#[derive(Parser)]
#[command(about = "Build pflow plugins into WebAssembly components")]
struct Cli {
    #[command(subcommand)]
    command: Option<Action>,
    /// The repository root (holds `plugins/`, `wit/` and `target/`).
    #[arg(long, default_value = ".", global = true)]
    root: PathBuf,
}

#[derive(Subcommand)]
enum Action {
    /// Build every plugin (the default).
    All,
    /// Turn one core module built for wasm32-wasi into a component.
    Componentize {
        module: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Install the wasm toolchains the built-in plugins need if they are missing (Rust; Python
    /// for the `code` node), and say which Rust one will be used.
    Toolchain {
        /// Also JavaScript (componentize-js) and C (clang, wasi-libc): what the tests of
        /// `plugin build` use.
        #[arg(long)]
        all: bool,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Action::All) {
        Action::All => build_all(&cli.root),
        Action::Componentize { module, output } => {
            let wit = cli.root.join("wit");
            let bytes = std::fs::read(&module)
                .with_context(|| format!("cannot read {}", module.display()))?;
            write_if_changed(&output, &componentize(&bytes, Some(&wit))?)?;
            println!("wrote {}", output.display());
            Ok(())
        }
        Action::Toolchain { all } => {
            let toolchain = RustToolchain::find_or_install(&progress)?;
            let toolchains = toolchains(&cli.root);
            toolchains.componentize_py(&progress)?;
            if all {
                toolchains.componentize_js(&progress)?;
                toolchains.clang(&progress)?;
            }
            println!("wasm toolchain: {}", toolchain.describe());
            Ok(())
        }
    }
}

fn progress(message: &str) {
    eprintln!("  {message}");
}

/// `$PFLOW_TOOLCHAINS`, else `target/toolchains` in the repository.
fn toolchains(root: &Path) -> Toolchains {
    Toolchains::from_env_or(&root.join("target"))
}

fn build_all(root: &Path) -> Result<()> {
    let root = root
        .canonicalize()
        .with_context(|| format!("no directory {}", root.display()))?;
    let plugins = root.join("plugins");
    let wit = root.join("wit");
    let target = root.join("target");
    let toolchain = RustToolchain::find_or_install(&progress)?;
    eprintln!("building plugins with {}", toolchain.describe());

    let output = toolchain
        .cargo_build(&plugins, &target.join("wasm"))
        .arg("--locked")
        .stderr(Stdio::inherit())
        .output()
        .context("cannot start cargo for the plugins")?;
    if !output.status.success() {
        bail!("building the plugin crates failed (see the compiler output above)");
    }

    let mut built = 0;
    for (manifest, module) in cdylib_artifacts(&output.stdout) {
        let testing = manifest.starts_with(plugins.join("testing"));
        let out_dir = target.join(if testing { "test-plugins" } else { "plugins" });
        let name = component_file_name(&module);
        let bytes =
            std::fs::read(&module).with_context(|| format!("cannot read {}", module.display()))?;
        let component = componentize(&bytes, Some(&wit))
            .and_then(|component| stamp(&component, Language::Rust))
            .with_context(|| format!("componentizing {}", module.display()))?;
        let destination = out_dir.join(name);
        write_if_changed(&destination, &component)?;
        eprintln!(
            "  {} ({} KB)",
            destination
                .strip_prefix(&root)
                .unwrap_or(&destination)
                .display(),
            component.len() / 1024
        );
        built += 1;
    }
    if built == 0 {
        bail!("cargo built no plugin modules; is every plugin crate a cdylib?");
    }
    let toolchains = toolchains(&root);
    for project in PROJECTS {
        let built = pflow_plugin_dev::build(&plugins.join(project), &toolchains, &progress)
            .with_context(|| format!("building plugins/{project}"))?;
        let destination = target.join("plugins").join(format!("{project}.wasm"));
        write_if_changed(&destination, &built.bytes)?;
        eprintln!(
            "  target/plugins/{project}.wasm ({}, {} KB)",
            built.language,
            built.bytes.len() / 1024
        );
    }
    Ok(())
}

/// `pflow_node_shell.wasm` -> `shell.wasm`, `pflow_test_echo.wasm` -> `echo.wasm`.
fn component_file_name(module: &Path) -> String {
    let stem = module
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("plugin");
    let short = stem
        .strip_prefix("pflow_node_")
        .or_else(|| stem.strip_prefix("pflow_test_"))
        .unwrap_or(stem);
    format!("{}.wasm", short.replace('_', "-"))
}

/// Leaves an identical file alone, so its modification time says when it last really changed.
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let partial = path.with_extension("wasm.partial");
    std::fs::write(&partial, bytes)
        .with_context(|| format!("cannot write {}", partial.display()))?;
    std::fs::rename(&partial, path)?;
    Ok(())
}
