//! Dry runs: what a run may not do to the user's world, and what it would have done.
//!
//! Commands run in a private mount and network namespace over a throwaway copy-on-write view of
//! the whole file system (overlayfs with `/` as the lower layer): they behave as they would
//! live, nothing they write survives, and what they wrote is read back from the upper layer.
//! HTTP requests other than GET/HEAD/OPTIONS and MCP tools not annotated read-only are not sent;
//! the node is then `unverified`.

use serde::Serialize;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// Exit status of the wrapper when the throwaway view cannot be made (before the command runs).
pub(crate) const NO_OVERLAY: i32 = 197;

/// A scratch directory holding the overlay's upper and work layers and its mount point.
pub(crate) struct Overlay {
    scratch: PathBuf,
}

impl Overlay {
    pub fn new() -> std::io::Result<Self> {
        let scratch = std::env::temp_dir().join(format!(
            "pflow-dry-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        ));
        for dir in ["upper", "work", "merged"] {
            std::fs::create_dir_all(scratch.join(dir))?;
        }
        Ok(Overlay { scratch })
    }

    /// `argv` run inside the throwaway view, in `cwd`, without network.
    pub fn wrap(&self, argv: &[String], cwd: &Path) -> (Vec<String>, Vec<(String, String)>) {
        let script = format!(
            "mount -t overlay overlay -o lowerdir=/,upperdir=\"$PFLOW_U\",workdir=\"$PFLOW_W\" \"$PFLOW_M\" \
             && mount --rbind /proc \"$PFLOW_M/proc\" && mount --rbind /dev \"$PFLOW_M/dev\" \
             || exit {NO_OVERLAY}; \
             exec chroot \"$PFLOW_M\" /bin/sh -c 'cd \"$1\" || exit 1; shift; exec \"$@\"' sh \"$PFLOW_CWD\" \"$@\""
        );
        let mut wrapped: Vec<String> = [
            "unshare",
            "--mount",
            "--net",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        wrapped.push(script);
        wrapped.push("sh".to_string());
        wrapped.extend(argv.iter().cloned());
        let path = |dir: &str| self.scratch.join(dir).to_string_lossy().into_owned();
        let env = vec![
            ("PFLOW_U".to_string(), path("upper")),
            ("PFLOW_W".to_string(), path("work")),
            ("PFLOW_M".to_string(), path("merged")),
            ("PFLOW_CWD".to_string(), cwd.to_string_lossy().into_owned()),
        ];
        (wrapped, env)
    }

    /// The files the command would have created, changed or deleted, from the upper layer.
    pub fn changes(&self) -> Vec<(Change, PathBuf)> {
        let upper = self.scratch.join("upper");
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

impl Drop for Overlay {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

pub(crate) fn bubblewrap_available() -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join("bwrap").is_file()))
        .unwrap_or(false)
}

/// `argv` under bubblewrap: a read-only `/` (so /tmp too, which keeps a working directory
/// there visible), private /dev and /proc, no network.
pub(crate) fn bubblewrap(argv: &[String], cwd: &Path) -> Vec<String> {
    let mut wrapped: Vec<String> = [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-net",
        "--die-with-parent",
        "--chdir",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    wrapped.push(cwd.to_string_lossy().into_owned());
    wrapped.push("--".to_string());
    wrapped.extend(argv.iter().cloned());
    wrapped
}
