//! Where each language's compiler comes from. The WebAssembly-specific tools are pinned and
//! installed on first use into a toolchains directory (`~/.pflow/toolchains`, or
//! `$PFLOW_TOOLCHAINS`): componentize-py in a Python virtual environment, componentize-js with
//! npm. Compilers that the system provides (Debian's rustc 1.63 with its wasm32-wasi standard
//! library, clang with wasi-libc) are installed with apt when running as root, and otherwise
//! named with the command that installs them.

use crate::{Error, Progress};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";
pub const COMPONENTIZE_JS_VERSION: &str = "0.23.0";
/// componentize-js loads this at run time (it names ^0.17 outside its dependencies).
const PREVIEW2_SHIM_VERSION: &str = "0.17.9";

/// Debian 12's packages for Rust guests: rustc 1.63 with the wasm32-wasi standard library.
const DEBIAN_RUST: &[&str] = &[
    "rustc",
    "cargo",
    "libstd-rust-dev-wasm32",
    "wasi-libc",
    "lld",
];
/// Debian 12's packages for C guests: clang, the wasm linker, wasi-libc and compiler-rt.
const DEBIAN_C: &[&str] = &["clang", "lld", "wasi-libc", "libclang-rt-dev-wasm32"];
/// Node.js, which runs componentize-js.
const DEBIAN_NODE: &[&str] = &["nodejs", "npm"];

pub struct Toolchains {
    dir: PathBuf,
}

impl Toolchains {
    /// Toolchains in `dir`, made absolute: the tools run from the project's directory.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        Toolchains {
            dir: std::path::absolute(&dir).unwrap_or(dir),
        }
    }

    /// `$PFLOW_TOOLCHAINS` when set, else `home/toolchains`.
    pub fn from_env_or(home: &Path) -> Self {
        match std::env::var_os("PFLOW_TOOLCHAINS") {
            Some(dir) if !dir.is_empty() => Toolchains::at(dir),
            _ => Toolchains::at(home.join("toolchains")),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// componentize-py, installed into a virtual environment of its own when missing.
    pub fn componentize_py(&self, progress: Progress<'_>) -> Result<PathBuf, Error> {
        let venv = self.dir.join("python");
        let tool = venv.join("bin").join("componentize-py");
        let done = venv.join(format!(".componentize-py-{COMPONENTIZE_PY_VERSION}"));
        self.installed_once("python", &done, progress, || {
            let spec = format!("componentize-py=={COMPONENTIZE_PY_VERSION}");
            progress(&format!("installing {spec} into {} (once)", venv.display()));
            run_quietly(
                Command::new("python3").arg("-m").arg("venv").arg(&venv),
                "python3 -m venv",
            )?;
            run_quietly(
                Command::new(venv.join("bin").join("pip"))
                    .args(["install", "--quiet", "--disable-pip-version-check"])
                    .arg(&spec),
                "pip install componentize-py",
            )
        })?;
        Ok(tool)
    }

    /// componentize-js, installed with npm when missing.
    pub fn componentize_js(&self, progress: Progress<'_>) -> Result<PathBuf, Error> {
        let prefix = self.dir.join("js");
        let tool = prefix
            .join("node_modules")
            .join(".bin")
            .join("componentize-js");
        let done = prefix.join(format!(".componentize-js-{COMPONENTIZE_JS_VERSION}"));
        self.installed_once("js", &done, progress, || {
            if !on_path("npm") || !on_path("node") {
                apt_install(DEBIAN_NODE, "Node.js (npm)", progress)?;
            }
            let spec = format!("@bytecodealliance/componentize-js@{COMPONENTIZE_JS_VERSION}");
            progress(&format!(
                "installing {spec} into {} (once)",
                prefix.display()
            ));
            std::fs::create_dir_all(&prefix).map_err(|e| Error::io(&prefix, e))?;
            run_quietly(
                Command::new("npm")
                    .args([
                        "install",
                        "--no-audit",
                        "--no-fund",
                        "--loglevel=error",
                        "--prefix",
                    ])
                    .arg(&prefix)
                    .arg(&spec)
                    .arg(format!(
                        "@bytecodealliance/preview2-shim@{PREVIEW2_SHIM_VERSION}"
                    )),
                "npm install componentize-js",
            )
        })?;
        Ok(tool)
    }

    /// clang with wasi-libc and the wasm32 compiler-rt builtins.
    pub fn clang(&self, progress: Progress<'_>) -> Result<PathBuf, Error> {
        if clang_targets_wasi() {
            return Ok(PathBuf::from("clang"));
        }
        // apt takes one install at a time: concurrent builds wait for the first.
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let _lock = FileLock::acquire(&self.dir.join(".c.lock"), progress)?;
        if !clang_targets_wasi() {
            apt_install(DEBIAN_C, "clang for wasm32-wasi", progress)?;
            if !clang_targets_wasi() {
                return Err(Error::ToolchainMissing {
                    tool: "clang for wasm32-wasi".to_string(),
                    hint: format!(
                        "still missing after `apt-get install {}`",
                        DEBIAN_C.join(" ")
                    ),
                });
            }
        }
        Ok(PathBuf::from("clang"))
    }

    /// The Rust toolchain for wasm guests.
    pub fn rust(&self, progress: Progress<'_>) -> Result<RustToolchain, Error> {
        RustToolchain::find_or_install(progress)
    }

    /// Runs `install` unless `done` exists, holding a lock so that concurrent builds install once.
    fn installed_once(
        &self,
        what: &str,
        done: &Path,
        progress: Progress<'_>,
        install: impl FnOnce() -> Result<(), Error>,
    ) -> Result<(), Error> {
        if done.exists() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let lock_path = self.dir.join(format!(".{what}.lock"));
        let _lock = FileLock::acquire(&lock_path, progress)?;
        if done.exists() {
            return Ok(());
        }
        install()?;
        crate::write_file(done, b"")
    }
}

/// An exclusive `flock` on a file, released when dropped.
struct FileLock(std::fs::File);

impl FileLock {
    fn acquire(path: &Path, progress: Progress<'_>) -> Result<Self, Error> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            progress("waiting for another build that is installing the same toolchain");
            // SAFETY: as above; this time blocking.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
                return Err(Error::io(path, std::io::Error::last_os_error()));
            }
        }
        Ok(FileLock(file))
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: unlocking the descriptor this value owns.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// How Rust guest crates get compiled on this machine.
pub enum RustToolchain {
    /// rustup's cargo with the `wasm32-wasip1` target installed.
    Rustup,
    /// Debian's `/usr/bin/cargo` and `/usr/bin/rustc` 1.63 with the `wasm32-wasi` std.
    Debian,
}

impl RustToolchain {
    pub fn find_or_install(progress: Progress<'_>) -> Result<Self, Error> {
        if rustup_has_wasip1() {
            return Ok(RustToolchain::Rustup);
        }
        if !debian_rust_present() {
            apt_install(DEBIAN_RUST, "the Rust wasm toolchain", progress)?;
        }
        if debian_rust_present() {
            Ok(RustToolchain::Debian)
        } else {
            Err(Error::ToolchainMissing {
                tool: "the Rust wasm toolchain".to_string(),
                hint: format!(
                    "still missing after `apt-get install {}`",
                    DEBIAN_RUST.join(" ")
                ),
            })
        }
    }

    pub fn describe(&self) -> &'static str {
        match self {
            RustToolchain::Rustup => "rustup cargo, target wasm32-wasip1",
            RustToolchain::Debian => "Debian rustc 1.63, target wasm32-wasi",
        }
    }

    pub fn target(&self) -> &'static str {
        match self {
            RustToolchain::Rustup => "wasm32-wasip1",
            RustToolchain::Debian => "wasm32-wasi",
        }
    }

    /// `cargo build --release` for the wasm target in `dir`, printing JSON messages.
    pub fn cargo_build(&self, dir: &Path, target_dir: &Path) -> Command {
        let mut command = match self {
            RustToolchain::Rustup => Command::new("cargo"),
            RustToolchain::Debian => {
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
            .current_dir(dir)
            // rustup's proxies would otherwise pick the toolchain for the Debian cargo.
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("CARGO")
            .env_remove("RUSTC_WRAPPER")
            .args([
                "build",
                "--release",
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

fn debian_rust_present() -> bool {
    Path::new("/usr/bin/rustc").exists()
        && Path::new("/usr/bin/cargo").exists()
        && Path::new("/usr/lib/rustlib/wasm32-wasi/lib").exists()
}

/// clang, wasi-libc's headers and the compiler-rt builtins clang will link for wasm32-wasi.
fn clang_targets_wasi() -> bool {
    let builtins = Command::new("clang")
        .args(["--target=wasm32-wasi", "-print-libgcc-file-name"])
        .output();
    let Ok(builtins) = builtins else { return false };
    let builtins = PathBuf::from(String::from_utf8_lossy(&builtins.stdout).trim());
    builtins.is_file()
        && Path::new("/usr/include/wasm32-wasi/stdlib.h").exists()
        && on_path("wasm-ld")
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Installs Debian packages when running as root; otherwise says which command would.
fn apt_install(packages: &[&str], tool: &str, progress: Progress<'_>) -> Result<(), Error> {
    let command = format!("apt-get install -y {}", packages.join(" "));
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Error::ToolchainMissing {
            tool: tool.to_string(),
            hint: format!("install it with: sudo apt-get update && sudo {command}"),
        });
    }
    progress(&format!("installing {tool}: {command}"));
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
    };
    let failed = |e: String| Error::ToolchainInstall {
        tool: tool.to_string(),
        message: e,
    };
    let first = install().map_err(|e| failed(e.to_string()))?;
    if first.status.success() {
        return Ok(());
    }
    // A fresh machine may have no package lists yet.
    let _ = Command::new("apt-get").args(["update", "-q"]).output();
    let second = install().map_err(|e| failed(e.to_string()))?;
    if second.status.success() {
        Ok(())
    } else {
        Err(failed(format!(
            "`{command}` failed: {}",
            String::from_utf8_lossy(&second.stderr).trim()
        )))
    }
}

/// Runs a tool, keeping its output for the error if it fails.
pub(crate) fn run_quietly(command: &mut Command, tool: &str) -> Result<(), Error> {
    let output = command.output().map_err(|e| Error::ToolFailed {
        tool: tool.to_string(),
        output: format!("cannot start it: {e}"),
    })?;
    if output.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !stderr.trim().is_empty() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(stderr.trim());
    }
    Err(Error::ToolFailed {
        tool: tool.to_string(),
        output: text,
    })
}
