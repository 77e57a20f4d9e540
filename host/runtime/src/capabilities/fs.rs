//! The `fs` capability: files on the host for the file nodes, under a path policy.
//!
//! - **Policy** ([`FilePolicy`]): a path is allowed when, with symbolic links resolved, it lies
//!   under one of the allowed roots: the working directory's tree by default, widened by
//!   `files.allowed_paths` in `settings.json` and by a workflow's `sandbox.files.allowed_paths`.
//!   A refusal names both settings.
//! - **Dry runs** ([`Scratch`]): writes, moves and deletions land in a scratch layer kept for the
//!   run (later reads see it) and are recorded as the run's would-be effects; the real files
//!   are only read.

use crate::bindings::pflow::node::{fs as fs_wit, types::NodeError};
use crate::capabilities::HostState;
use crate::dry::Change;
use crate::error::category;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// Largest file a node reads or writes in one call: the node's output limit bounds what it can
/// hand on anyway.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// `files` in settings.json.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSettings {
    /// Directories (and their trees) the file nodes may use besides the working directory.
    #[serde(default)]
    pub allowed_paths: Vec<PathBuf>,
}

/// Where file nodes may read and write.
#[derive(Debug, Clone, Default)]
pub struct FilePolicy {
    /// Relative paths are relative to this; None when the process has no working directory.
    base: Option<PathBuf>,
    /// Canonical directories whose trees are allowed.
    roots: Vec<PathBuf>,
}

impl FilePolicy {
    /// The working directory's tree plus the settings' paths.
    pub fn from_settings(settings: &FileSettings) -> FilePolicy {
        let base = std::env::current_dir().ok();
        let mut policy = FilePolicy {
            roots: base.iter().cloned().collect(),
            base,
        };
        policy.roots = policy
            .roots
            .iter()
            .chain(&settings.allowed_paths)
            .filter_map(|root| policy.absolute(root).canonicalize().ok())
            .collect();
        policy
    }

    /// The policy with a workflow's own `sandbox.files.allowed_paths` added (relative to the
    /// working directory).
    pub fn widened(&self, paths: &[String]) -> FilePolicy {
        let mut widened = self.clone();
        widened.roots.extend(
            paths
                .iter()
                .filter_map(|p| self.absolute(Path::new(p)).canonicalize().ok()),
        );
        widened
    }

    fn absolute(&self, path: &Path) -> PathBuf {
        match (&self.base, path.is_absolute()) {
            (Some(base), false) => base.join(path),
            _ => path.to_path_buf(),
        }
    }

    /// The real path `path` names (links resolved, `..` applied), when the policy allows it.
    pub fn check(&self, path: &str) -> Result<PathBuf, NodeError> {
        if path.is_empty() {
            return Err(NodeError::new(
                "bad_params",
                "The path is empty.".into(),
                true,
            ));
        }
        let expanded = match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
            (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
            _ => PathBuf::from(path),
        };
        let real = resolve(&self.absolute(&expanded));
        if self.roots.iter().any(|root| real.starts_with(root)) {
            return Ok(real);
        }
        let roots: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        Err(NodeError {
            category: category::POLICY_DENIED.to_string(),
            message: format!(
                "'{path}' ({}) is outside the paths file nodes may use ({}). Allow its directory \
                 with files.allowed_paths in settings.json, or sandbox.files.allowed_paths in the \
                 workflow.",
                real.display(),
                if roots.is_empty() {
                    "none".to_string()
                } else {
                    roots.join(", ")
                }
            ),
            fixable: true,
            attempted: vec![path.to_string()],
            available: roots,
            sample: None,
        })
    }
}

/// `path` with `.` and `..` applied and the symbolic links of its longest existing prefix
/// resolved, so that a link cannot lead outside an allowed root.
fn resolve(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    let mut existing = normal.clone();
    let mut rest = Vec::new();
    while !existing.as_os_str().is_empty() {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |acc: PathBuf, c| acc.join(c));
        }
        match existing.file_name() {
            Some(name) => rest.push(name.to_os_string()),
            None => break,
        }
        existing.pop();
    }
    normal
}

/// A dry run's files: what its nodes wrote (Some) or deleted (None), by real path.
#[derive(Debug, Default)]
pub struct Scratch {
    files: Mutex<BTreeMap<PathBuf, Option<Vec<u8>>>>,
}

impl Scratch {
    fn get(&self, path: &Path) -> Option<Option<Vec<u8>>> {
        self.files.lock().ok()?.get(path).cloned()
    }

    fn set(&self, path: PathBuf, contents: Option<Vec<u8>>) {
        if let Ok(mut files) = self.files.lock() {
            files.insert(path, contents);
        }
    }
}

fn io_error(action: &str, path: &Path, error: std::io::Error) -> NodeError {
    let (category, fixable) = match error.kind() {
        std::io::ErrorKind::NotFound => ("not_found", true),
        std::io::ErrorKind::AlreadyExists => ("already_exists", true),
        std::io::ErrorKind::PermissionDenied => (category::POLICY_DENIED, false),
        _ => ("io", false),
    };
    NodeError {
        category: category.to_string(),
        message: format!("Cannot {action} '{}': {error}", path.display()),
        fixable,
        attempted: vec![path.display().to_string()],
        available: Vec::new(),
        sample: None,
    }
}

impl HostState {
    fn file_policy(&self) -> Result<&FilePolicy, NodeError> {
        if !self.grants.allows(super::Capability::Fs) {
            return Err(super::denied(super::Capability::Fs, &self.node_type));
        }
        Ok(&self.capabilities.files)
    }

    /// The file's bytes: the dry run's scratch copy first, else the disk.
    fn read_file(&self, path: &Path) -> Result<Vec<u8>, NodeError> {
        if let Some(dry) = &self.dry {
            match dry.files.get(path) {
                Some(Some(contents)) => return Ok(contents),
                Some(None) => {
                    return Err(io_error("read", path, std::io::ErrorKind::NotFound.into()))
                }
                None => {}
            }
        }
        let size = std::fs::metadata(path)
            .map_err(|e| io_error("read", path, e))?
            .len();
        if size > MAX_FILE_BYTES {
            return Err(NodeError::new(
                category::OUTPUT_LIMIT,
                format!(
                    "'{}' is {size} bytes; file nodes read at most {MAX_FILE_BYTES}",
                    path.display()
                ),
                false,
            ));
        }
        std::fs::read(path).map_err(|e| io_error("read", path, e))
    }

    fn exists(&self, path: &Path) -> bool {
        match self.dry.as_ref().and_then(|dry| dry.files.get(path)) {
            Some(contents) => contents.is_some(),
            None => path.is_file(),
        }
    }

    /// Writes for real, or into the dry run's scratch layer (recording the effect).
    fn store_file(&self, path: &Path, contents: Vec<u8>) -> Result<(), NodeError> {
        match &self.dry {
            Some(dry) => {
                let change = if self.exists(path) {
                    Change::Changed
                } else {
                    Change::Created
                };
                dry.files.set(path.to_path_buf(), Some(contents));
                dry.record(&self.node_id, vec![(change, path.to_path_buf())]);
                Ok(())
            }
            None => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| io_error("create", parent, e))?;
                }
                // Written beside and renamed: a reader never sees half a file.
                let partial = path.with_file_name(format!(
                    ".{}.pflow-partial",
                    path.file_name().unwrap_or_default().to_string_lossy()
                ));
                std::fs::write(&partial, &contents).map_err(|e| io_error("write", path, e))?;
                std::fs::rename(&partial, path).map_err(|e| {
                    let _ = std::fs::remove_file(&partial);
                    io_error("write", path, e)
                })
            }
        }
    }

    fn delete_file(&self, path: &Path) -> Result<(), NodeError> {
        if !self.exists(path) {
            return Err(io_error(
                "delete",
                path,
                std::io::ErrorKind::NotFound.into(),
            ));
        }
        match &self.dry {
            Some(dry) => {
                dry.files.set(path.to_path_buf(), None);
                dry.record(&self.node_id, vec![(Change::Deleted, path.to_path_buf())]);
                Ok(())
            }
            None => std::fs::remove_file(path).map_err(|e| io_error("delete", path, e)),
        }
    }

    fn copy_file(
        &self,
        source: &str,
        destination: &str,
        overwrite: bool,
    ) -> Result<PathBuf, NodeError> {
        let policy = self.file_policy()?;
        let (from, to) = (policy.check(source)?, policy.check(destination)?);
        if !overwrite && self.exists(&to) {
            return Err(NodeError {
                fixable: true,
                ..io_error("copy to", &to, std::io::ErrorKind::AlreadyExists.into())
            });
        }
        let contents = self.read_file(&from)?;
        self.store_file(&to, contents)?;
        Ok(from)
    }
}

impl fs_wit::Host for HostState {
    fn read(&mut self, path: String) -> Result<Vec<u8>, NodeError> {
        let real = self.file_policy()?.check(&path)?;
        self.read_file(&real)
    }

    fn write(&mut self, path: String, contents: Vec<u8>, append: bool) -> Result<(), NodeError> {
        let real = self.file_policy()?.check(&path)?;
        let contents = if append && self.exists(&real) {
            let mut existing = self.read_file(&real)?;
            existing.extend_from_slice(&contents);
            existing
        } else {
            contents
        };
        if contents.len() as u64 > MAX_FILE_BYTES {
            return Err(NodeError::new(
                category::OUTPUT_LIMIT,
                format!("File nodes write at most {MAX_FILE_BYTES} bytes"),
                false,
            ));
        }
        self.store_file(&real, contents)
    }

    fn copy(
        &mut self,
        source: String,
        destination: String,
        overwrite: bool,
    ) -> Result<(), NodeError> {
        self.copy_file(&source, &destination, overwrite).map(|_| ())
    }

    fn rename(
        &mut self,
        source: String,
        destination: String,
        overwrite: bool,
    ) -> Result<(), NodeError> {
        let from = self.copy_file(&source, &destination, overwrite)?;
        self.delete_file(&from)
    }

    fn remove(&mut self, path: String) -> Result<(), NodeError> {
        let real = self.file_policy()?.check(&path)?;
        if real.is_dir() {
            return Err(NodeError::new(
                "bad_params",
                format!("'{path}' is a directory; delete-file deletes files only"),
                true,
            ));
        }
        self.delete_file(&real)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy_in(dir: &Path) -> FilePolicy {
        let root = dir.canonicalize().unwrap();
        FilePolicy {
            base: Some(root.clone()),
            roots: vec![root],
        }
    }

    #[test]
    fn paths_under_the_root_pass_and_escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let policy = policy_in(dir.path());
        assert!(policy.check("a/b.txt").is_ok());
        assert!(policy.check("a/../b.txt").is_ok());
        let refused = policy.check("../outside.txt").unwrap_err();
        assert_eq!(refused.category, "policy_denied");
        assert!(
            refused.message.contains("files.allowed_paths"),
            "{}",
            refused.message
        );
        assert!(policy.check("/etc/passwd").is_err());
    }

    #[test]
    fn a_symbolic_link_out_of_the_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        let policy = policy_in(dir.path());
        assert!(policy.check("etc/passwd").is_err());
        assert!(policy.check("etc/new-file").is_err());
        let widened = policy.widened(&["/etc".to_string()]);
        assert!(widened.check("etc/passwd").is_ok());
    }
}
