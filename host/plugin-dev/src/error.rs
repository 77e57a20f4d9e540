use std::path::{Path, PathBuf};

/// Why a build or a scaffold failed, worded for the person who runs `pflow-host plugin`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{} is not a node project: {why}", dir.display())]
    NotAProject { dir: PathBuf, why: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the WIT in {}: {message}", dir.display())]
    Wit { dir: PathBuf, message: String },
    #[error("{tool} is not installed: {hint}")]
    ToolchainMissing { tool: String, hint: String },
    #[error("installing {tool} failed: {message}")]
    ToolchainInstall { tool: String, message: String },
    #[error("{tool} failed{}", if output.is_empty() { String::new() } else { format!(":\n{output}") })]
    ToolFailed { tool: String, output: String },
    #[error("cannot make a component: {0}")]
    Componentize(String),
    #[error("{0}")]
    Scaffold(String),
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
