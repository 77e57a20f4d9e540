//! Dry runs: what a run may not do to the user's world, and what it would have done.
//!
//! Commands share nothing with the host: they run under bubblewrap in namespaces of their own
//! (see [`ISOLATION`] and [`PRIVATE_MOUNTS`]) over a throwaway copy-on-write view of the whole
//! file system (overlayfs with `/` as the lower layer). They behave as they would live, nothing
//! they write survives, no process of theirs outlives them, and what they wrote is read back
//! from the upper layer. Where no overlay can be made, they get a read-only `/`; where
//! bubblewrap cannot run, they are not run at all.
//!
//! HTTP requests other than GET/HEAD/OPTIONS (or with a body) and MCP tools not annotated
//! read-only are not sent; the node is then `unverified`.

use crate::capabilities::{run_command, CommandFailure, Finished, Request};
use crate::spawn::Prelude;
use serde::Serialize;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The category of a node error that only says "not run for real in a dry run".
pub const UNVERIFIED: &str = "unverified";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Created,
    Changed,
    Deleted,
}

/// A file a command would have created, changed or deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Effect {
    pub node_id: String,
    pub change: Change,
    pub path: PathBuf,
}

/// Something a dry run did not do, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub node_id: String,
    pub capability: String,
    pub reason: String,
}

/// What a dry run collects across its nodes.
#[derive(Debug, Default)]
pub struct DryRun {
    effects: Mutex<Vec<Effect>>,
    skipped: Mutex<Vec<Skipped>>,
    /// What file nodes wrote, moved and deleted, for the rest of the run to see.
    pub(crate) files: crate::capabilities::fs::Scratch,
}

impl DryRun {
    pub fn effects(&self) -> Vec<Effect> {
        self.effects.lock().map(|e| e.clone()).unwrap_or_default()
    }

    pub fn skipped(&self) -> Vec<Skipped> {
        self.skipped.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub(crate) fn skip(&self, node_id: &str, capability: &str, reason: String) {
        if let Ok(mut skipped) = self.skipped.lock() {
            skipped.push(Skipped {
                node_id: node_id.to_string(),
                capability: capability.to_string(),
                reason,
            });
        }
    }

    pub(crate) fn record(&self, node_id: &str, changes: Vec<(Change, PathBuf)>) {
        if let Ok(mut effects) = self.effects.lock() {
            effects.extend(changes.into_iter().map(|(change, path)| Effect {
                node_id: node_id.to_string(),
                change,
                path,
            }));
        }
    }
}

/// What every dry command runs under, whichever root it gets: new user (with no further user
/// namespaces), PID, IPC, UTS, network and cgroup namespaces, a new session, no capabilities
/// and `no_new_privs` (bubblewrap always sets it). When the command's main process ends, its
/// PID namespace and everything left in it die.
const ISOLATION: &[&str] = &[
    "--unshare-all",
    "--unshare-user",
    "--disable-userns",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
];

/// Nothing of the host's /proc, /dev, /dev/shm or /run: a /proc of the command's own PID
/// namespace, a minimal /dev (null, zero, full, random, urandom, tty) and empty tmpfs mounts.
const PRIVATE_MOUNTS: &[&str] = &[
    "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--tmpfs", "/run",
];

/// How dry commands are isolated on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Launcher {
    /// Writable copy-on-write view of `/` (overlayfs in a private mount namespace), under
    /// bubblewrap: the command behaves as live, and its changes are listed.
    Overlay,
    /// Bubblewrap with a read-only `/`: writes fail, and what the command would change is not
    /// known.
    ReadOnlyRoot,
    /// Neither works here: dry commands are not run.
    Unavailable,
}

impl Launcher {
    /// The first launcher that works here, trying each once per process with `true`.
    /// `PFLOW_DRY_SHELL=overlay|bubblewrap|none` says where to start.
    pub fn detect() -> Launcher {
        static OVERLAY: OnceLock<bool> = OnceLock::new();
        static READ_ONLY: OnceLock<bool> = OnceLock::new();
        let start = std::env::var("PFLOW_DRY_SHELL").unwrap_or_default();
        let probe = |launcher: Launcher| {
            let Ok(cwd) = std::env::current_dir() else {
                return false;
            };
            let Ok(scratch) = Scratch::new() else {
                return false;
            };
            let Ok((argv, prelude)) = scratch.launch(launcher, &["true".to_string()], &cwd) else {
                return false;
            };
            let request = Request {
                argv,
                stdin: None,
                cwd: None,
                env: Vec::new(),
                timeout: None,
                deadline: Instant::now() + PROBE_TIME,
                capture_bytes: 64 * 1024,
                prelude: Some(prelude),
            };
            let works = matches!(
                run_command(request, &AtomicBool::new(false)),
                Ok(finished) if finished.exit_code == 0
            );
            if !works {
                tracing::debug!("dry runs cannot use {launcher:?} here");
            }
            works
        };
        let works = |launcher: Launcher| {
            remembered::works(launcher) || {
                let works = probe(launcher);
                if works {
                    remembered::remember(launcher);
                }
                works
            }
        };
        if matches!(start.as_str(), "" | "overlay")
            && *OVERLAY.get_or_init(|| works(Launcher::Overlay))
        {
            return Launcher::Overlay;
        }
        if start != "none"
            && bubblewrap_available()
            && *READ_ONLY.get_or_init(|| works(Launcher::ReadOnlyRoot))
        {
            return Launcher::ReadOnlyRoot;
        }
        Launcher::Unavailable
    }
}

/// How long the one-time check of a launcher may take.
const PROBE_TIME: Duration = Duration::from_secs(10);

/// Why a dry command was not run.
pub(crate) struct NotRun(pub String);

/// Runs a command for a dry run, isolated by the best launcher there is, and records the files
/// it would have changed (or that they are not known).
pub(crate) fn run_command_dry(
    request: Request,
    cancel: &AtomicBool,
    dry: &DryRun,
    node_id: &str,
) -> Result<Result<Finished, CommandFailure>, NotRun> {
    let cwd = match &request.cwd {
        Some(cwd) => PathBuf::from(cwd),
        None => {
            std::env::current_dir().map_err(|e| NotRun(format!("no current directory: {e}")))?
        }
    };
    let launcher = Launcher::detect();
    if launcher == Launcher::Unavailable {
        return Err(NotRun(
            "no isolated, throwaway view of the file system can be made here (it needs \
             bubblewrap, and overlayfs in a mount namespace for a writable one), so the command \
             was not run"
                .to_string(),
        ));
    }
    let scratch = Scratch::new().map_err(|e| {
        NotRun(format!(
            "cannot make a scratch directory for the dry run: {e}"
        ))
    })?;
    let (argv, prelude) = scratch
        .launch(launcher, &request.argv, &cwd)
        .map_err(|e| NotRun(format!("cannot prepare the dry run's sandbox: {e}")))?;
    let wrapped = Request {
        argv,
        cwd: None,
        prelude: Some(prelude),
        ..request
    };
    let finished = match run_command(wrapped, cancel) {
        Err(CommandFailure::Spawn { error, .. }) => {
            return Err(NotRun(format!(
                "the dry run's sandbox could not be started: {error}"
            )))
        }
        finished => finished,
    };
    if launcher == Launcher::Overlay {
        dry.record(node_id, scratch.changes());
    } else {
        dry.skip(
            node_id,
            "process",
            "ran under bubblewrap with a read-only root and no network: writes fail, and the \
             files it would change are not known"
                .to_string(),
        );
    }
    Ok(finished)
}

/// A dry command's scratch directory: the overlay's upper and work layers and its mount point,
/// and the seccomp filters bubblewrap reads.
pub(crate) struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    pub fn new() -> std::io::Result<Self> {
        let dir = std::env::temp_dir().join(format!(
            "pflow-dry-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        ));
        for layer in ["upper", "work", "merged"] {
            std::fs::create_dir_all(dir.join(layer))?;
        }
        Ok(Scratch { dir })
    }

    /// bubblewrap's command line for `argv` in `cwd` under `launcher`, isolated as
    /// [`ISOLATION`] says, and what its process sets up before it execs bubblewrap: for the
    /// overlay, a mount namespace of its own with the overlay mounted (only root can); the
    /// seccomp filters as descriptors 8 and 9.
    pub fn launch(
        &self,
        launcher: Launcher,
        argv: &[String],
        cwd: &Path,
    ) -> std::io::Result<(Vec<String>, Prelude)> {
        let merged = self.dir.join("merged").to_string_lossy().into_owned();
        let root = match launcher {
            Launcher::Overlay => ["--bind", merged.as_str(), "/"],
            _ => ["--ro-bind", "/", "/"],
        };
        let mut prelude = Prelude::default();
        let mut filters: Vec<&str> = Vec::new();
        if let Some([refused, no_clone3]) = crate::seccomp::filters() {
            for (fd, name, program) in [
                (8, "seccomp-refused.bpf", refused),
                (9, "seccomp-clone3.bpf", no_clone3),
            ] {
                let path = self.dir.join(name);
                std::fs::write(&path, program)?;
                prelude.fds.push((std::fs::File::open(path)?, fd));
            }
            filters = vec!["--add-seccomp-fd", "8", "--add-seccomp-fd", "9"];
        }
        if launcher == Launcher::Overlay {
            let layer = |name: &str| self.dir.join(name).to_string_lossy().into_owned();
            let options = format!(
                "lowerdir=/,upperdir={},workdir={}",
                layer("upper"),
                layer("work")
            );
            prelude.overlay = Some((cstring(&merged)?, cstring(&options)?));
        }
        let cwd = cwd.to_string_lossy();
        let command = ["bwrap"]
            .iter()
            .chain(ISOLATION)
            .chain(&filters)
            .chain(&root)
            .chain(PRIVATE_MOUNTS)
            .chain(&["--chdir", &*cwd, "--"])
            .map(|s| s.to_string())
            .chain(argv.iter().cloned())
            .collect();
        Ok((command, prelude))
    }

    /// The files the command would have created, changed or deleted, from the upper layer.
    pub fn changes(&self) -> Vec<(Change, PathBuf)> {
        let upper = self.dir.join("upper");
        let mut changes = Vec::new();
        let mut stack = vec![upper.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let real =
                    Path::new("/").join(entry.path().strip_prefix(&upper).unwrap_or(Path::new("")));
                if kind.is_dir() {
                    stack.push(entry.path());
                } else if kind.is_char_device() {
                    // overlayfs marks a deletion with a 0:0 character device.
                    changes.push((Change::Deleted, real));
                } else if real.symlink_metadata().is_ok() {
                    changes.push((Change::Changed, real));
                } else {
                    changes.push((Change::Created, real));
                }
            }
        }
        changes.sort_by(|a, b| a.1.cmp(&b.1));
        changes
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn bubblewrap_available() -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join("bwrap").is_file()))
        .unwrap_or(false)
}

fn cstring(text: &str) -> std::io::Result<std::ffi::CString> {
    std::ffi::CString::new(text).map_err(std::io::Error::from)
}

/// Launchers that worked, remembered between processes (in the home's cache), so that a short
/// command such as `probe` does not pay the check, a run of `true` in the launcher, each time.
/// Only success is remembered, under a key of what decides it (user, kernel, its namespace
/// settings, bubblewrap's file): when any of those changes, the launcher is checked again. A
/// launcher remembered wrongly fails to start its commands; it never runs them unisolated.
mod remembered {
    use super::Launcher;
    use std::path::PathBuf;
    use std::sync::OnceLock;

    static DIR: OnceLock<PathBuf> = OnceLock::new();

    /// Where to remember; until it is set, nothing is remembered.
    pub fn remember_in(dir: PathBuf) {
        let _ = DIR.set(dir);
    }

    fn file(launcher: Launcher) -> Option<PathBuf> {
        Some(DIR.get()?.join(format!("dry-launcher-{launcher:?}")))
    }

    fn key() -> String {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let bwrap = std::env::var_os("PATH")
            .and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join("bwrap"))
                    .find(|path| path.is_file())
            })
            .and_then(|path| {
                let meta = std::fs::metadata(&path).ok()?;
                Some(format!(
                    "{}:{:?}:{}",
                    path.display(),
                    meta.modified().ok()?,
                    meta.len()
                ))
            })
            .unwrap_or_default();
        format!(
            "uid {}\nkernel {}\nuserns {} {} {}\nbwrap {bwrap}\n",
            // SAFETY: getuid has no preconditions and cannot fail.
            unsafe { libc::getuid() },
            read("/proc/sys/kernel/osrelease").trim(),
            read("/proc/sys/user/max_user_namespaces").trim(),
            read("/proc/sys/kernel/unprivileged_userns_clone").trim(),
            read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").trim(),
        )
    }

    pub fn works(launcher: Launcher) -> bool {
        file(launcher)
            .and_then(|file| std::fs::read_to_string(file).ok())
            .is_some_and(|kept| kept == key())
    }

    pub fn remember(launcher: Launcher) {
        let Some(file) = file(launcher) else {
            return;
        };
        let aside = file.with_extension(format!("{}", std::process::id()));
        let kept = std::fs::create_dir_all(file.parent().unwrap_or(&file))
            .and_then(|()| std::fs::write(&aside, key()))
            .and_then(|()| std::fs::rename(&aside, &file));
        if let Err(error) = kept {
            tracing::debug!("cannot remember the dry-run launcher: {error}");
        }
    }
}

pub use remembered::remember_in as remember_launchers_in;

#[cfg(test)]
mod tests {
    use super::{remembered, Launcher};

    #[test]
    fn only_a_launcher_that_worked_under_the_same_conditions_is_remembered() {
        let dir = tempfile::tempdir().unwrap();
        remembered::remember_in(dir.path().to_path_buf());
        assert!(!remembered::works(Launcher::Overlay));
        remembered::remember(Launcher::Overlay);
        assert!(remembered::works(Launcher::Overlay));
        assert!(!remembered::works(Launcher::ReadOnlyRoot));
        // Another kernel, user or bubblewrap: checked again.
        let file = dir.path().join("dry-launcher-Overlay");
        let kept = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, kept.replace("kernel ", "kernel 0.")).unwrap();
        assert!(!remembered::works(Launcher::Overlay));
    }
}
