//! Builds every plugin crate under `plugins/` for WebAssembly and turns each core module into a
//! component of the `pflow:node` world.
//!
//! Guest code builds with whichever wasm toolchain the machine has: rustup's `wasm32-wasip1`
//! target when it is installed, otherwise Debian's rustc 1.63 with its `wasm32-wasi` standard
//! library, which this tool installs with apt when it is missing (see the README).

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::Resolve;

/// Debian packages that make up the wasm toolchain on Debian 12.
const DEBIAN_WASM_PACKAGES: &[&str] = &[
    "rustc",
    "cargo",
    "libstd-rust-dev-wasm32",
    "wasi-libc",
    "lld",
];
const WORLD: &str = "node";

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
    /// Build every plugin crate (the default).
    All,
    /// Turn one core module built for wasm32-wasi into a component.
    Componentize {
        module: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Install the wasm toolchain if it is missing, and say which one will be used.
    Toolchain,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Action::All) {
        Action::All => build_all(&cli.root),
        Action::Componentize { module, output } => {
            let wit = cli.root.join("wit");
            let bytes = std::fs::read(&module)
                .with_context(|| format!("cannot read {}", module.display()))?;
            write_if_changed(&output, &componentize(&wit, &bytes)?)?;
            println!("wrote {}", output.display());
            Ok(())
        }
        Action::Toolchain => {
            let toolchain = Toolchain::find_or_install()?;
            println!("wasm toolchain: {}", toolchain.describe());
            Ok(())
        }
    }
}

/// How guest crates get compiled on this machine.
enum Toolchain {
    /// rustup's cargo with the `wasm32-wasip1` target installed.
    Rustup,
    /// Debian's `/usr/bin/cargo` and `/usr/bin/rustc` 1.63 with the `wasm32-wasi` std.
    Debian,
}

impl Toolchain {
    fn find_or_install() -> Result<Self> {
        if rustup_has_wasip1() {
            return Ok(Toolchain::Rustup);
        }
        if debian_toolchain_present() {
            return Ok(Toolchain::Debian);
        }
        install_debian_toolchain()?;
        if debian_toolchain_present() {
            Ok(Toolchain::Debian)
        } else {
            bail!("the wasm toolchain is still missing after installing it with apt")
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Toolchain::Rustup => "rustup cargo, target wasm32-wasip1",
            Toolchain::Debian => "Debian rustc 1.63, target wasm32-wasi",
        }
    }

    fn target(&self) -> &'static str {
        match self {
            Toolchain::Rustup => "wasm32-wasip1",
            Toolchain::Debian => "wasm32-wasi",
        }
    }

    fn cargo_build(&self, plugins: &Path, target_dir: &Path) -> Command {
        let mut command = match self {
            Toolchain::Rustup => Command::new("cargo"),
            Toolchain::Debian => {
                let mut command = Command::new("/usr/bin/cargo");
                // Debian's cargo 1.65 reaches crates.io only through the sparse protocol, which
                // it keeps behind an unstable flag.
                command
                    .env("RUSTC", "/usr/bin/rustc")
                    .env("__CARGO_TEST_CHANNEL_OVERRIDE_DO_NOT_USE_THIS", "nightly")
                    .arg("-Z")
                    .arg("sparse-registry");
                command
            }
        };
        command
            .current_dir(plugins)
            // rustup's proxies would otherwise pick the toolchain for the Debian cargo.
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("CARGO")
            .env_remove("RUSTC_WRAPPER")
            .args([
                "build",
                "--release",
                "--locked",
                "--message-format",
                "json-render-diagnostics",
            ])
            .arg("--target")
            .arg(self.target())
            .arg("--target-dir")
            .arg(target_dir);
        command
    }
}

fn rustup_has_wasip1() -> bool {
    Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == "wasm32-wasip1")
        })
        .unwrap_or(false)
}

fn debian_toolchain_present() -> bool {
    Path::new("/usr/bin/rustc").exists()
        && Path::new("/usr/bin/cargo").exists()
        && Path::new("/usr/lib/rustlib/wasm32-wasi/lib").exists()
}

fn install_debian_toolchain() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    let is_root = unsafe { libc::geteuid() } == 0;
    let command = format!("apt-get install -y {}", DEBIAN_WASM_PACKAGES.join(" "));
    if !is_root {
        bail!(
            "the wasm toolchain is missing; install it with: sudo apt-get update && sudo {command}"
        );
    }
    eprintln!("installing the wasm toolchain: {command}");
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q"])
            .args(DEBIAN_WASM_PACKAGES)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
    };
    if !install()?.success() {
        // A fresh machine may have no package lists yet.
        Command::new("apt-get").args(["update", "-q"]).status()?;
        if !install()?.success() {
            bail!("`{command}` failed");
        }
    }
    Ok(())
}

fn build_all(root: &Path) -> Result<()> {
    let root = root
        .canonicalize()
        .with_context(|| format!("no directory {}", root.display()))?;
    let plugins = root.join("plugins");
    let wit = root.join("wit");
    let target = root.join("target");
    let toolchain = Toolchain::find_or_install()?;
    eprintln!("building plugins with {}", toolchain.describe());

    let output = toolchain
        .cargo_build(&plugins, &target.join("wasm"))
        .stderr(Stdio::inherit())
        .output()
        .context("cannot start cargo for the plugins")?;
    if !output.status.success() {
        bail!("building the plugin crates failed (see the compiler output above)");
    }

    let mut built = 0;
    for (manifest, module) in cdylib_artifacts(&output.stdout)? {
        let testing = manifest.starts_with(plugins.join("testing"));
        let out_dir = target.join(if testing { "test-plugins" } else { "plugins" });
        let name = component_file_name(&module);
        let bytes =
            std::fs::read(&module).with_context(|| format!("cannot read {}", module.display()))?;
        let component = componentize(&wit, &bytes)
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
    Ok(())
}

/// (manifest path, .wasm module) of each cdylib cargo reported building.
fn cdylib_artifacts(messages: &[u8]) -> Result<Vec<(PathBuf, PathBuf)>> {
    let mut artifacts = Vec::new();
    for line in messages.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let message: serde_json::Value =
            serde_json::from_slice(line).context("cargo printed a line that is not JSON")?;
        if message["reason"] != "compiler-artifact" {
            continue;
        }
        let is_cdylib = message["target"]["crate_types"]
            .as_array()
            .is_some_and(|types| types.iter().any(|t| t == "cdylib"));
        if !is_cdylib {
            continue;
        }
        let manifest = PathBuf::from(message["manifest_path"].as_str().unwrap_or_default());
        let wasm = message["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str())
            .find(|f| f.ends_with(".wasm"));
        if let Some(wasm) = wasm {
            artifacts.push((manifest, PathBuf::from(wasm)));
        }
    }
    Ok(artifacts)
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

/// Embeds the `node` world's type information into `module` and wraps it, with the WASI
/// preview 1 adapter, into a component.
fn componentize(wit: &Path, module: &[u8]) -> Result<Vec<u8>> {
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_path(wit)
        .with_context(|| format!("cannot parse the WIT package in {}", wit.display()))?;
    let world = resolve.select_world(&[package], Some(WORLD))?;
    let mut module = module.to_vec();
    wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)?;
    ComponentEncoder::default()
        .module(&module)?
        .adapter(
            "wasi_snapshot_preview1",
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )?
        .validate(true)
        .encode()
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
