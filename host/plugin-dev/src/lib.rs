//! Turns a node project written in Rust, Python, JavaScript or C into a component of the
//! `pflow:node` contract (`wit/node.wit`), and scaffolds new projects.
//!
//! Every project has the same shape whatever its language: a `wit/` directory whose package
//! (`local:plugin`) holds a world named `node`, which exports `describe` and `run` and imports the
//! capabilities the node needs (`pflow:node/log`, `pflow:node/http`, ...); the contract itself
//! sits in `wit/deps/pflow-node/node.wit`, which the build keeps identical to the host's. The
//! world is what a node asks for: the component imports what the world imports, and the host
//! grants a user's plugin only what `settings.json` allows, whatever the language.
//!
//! - `language`: which language a project or a built component is in.
//! - `toolchain`: where each language's compiler lives; installs a missing one (pinned versions).
//! - `componentize`: a core WebAssembly module and a world in, a component out; the language
//!   stamped into the component's `producers` section.
//! - `lang`: one module per language, each turning a project into component bytes.
//! - `scaffold`: `plugin new`'s project, per language, that works as generated.

pub mod componentize;
mod error;
pub mod lang;
pub mod language;
pub mod scaffold;
pub mod toolchain;

pub use error::Error;
pub use language::Language;
pub use toolchain::Toolchains;

use std::path::{Path, PathBuf};

/// The contract, as the host was built with it.
pub const NODE_WIT: &str = include_str!("../../../wit/node.wit");
/// Where a project keeps its copy of the contract.
pub(crate) const CONTRACT_COPY: &str = "wit/deps/pflow-node/node.wit";
/// The world every project defines in its own `wit/` package.
pub const PROJECT_WORLD: &str = "node";

/// A built project.
#[derive(Debug)]
pub struct Built {
    /// The project's name: its directory's, which the installed file is named after.
    pub name: String,
    pub language: Language,
    /// The component, in the project's `target/`.
    pub component: PathBuf,
    pub bytes: Vec<u8>,
}

/// What a build says while it works (toolchain installs, each step), for the caller to show.
pub type Progress<'a> = &'a dyn Fn(&str);

/// Builds the project in `dir` into a component, installing a missing toolchain first.
pub fn build(dir: &Path, toolchains: &Toolchains, progress: Progress<'_>) -> Result<Built, Error> {
    let dir = dir.canonicalize().map_err(|e| Error::io(dir, e))?;
    let language = Language::of_project(&dir).ok_or_else(|| Error::NotAProject {
        dir: dir.clone(),
        why: format!("it has none of {}", Language::MARKERS.join(", ")),
    })?;
    let name = project_name(&dir)?;
    refresh_contract(&dir, progress)?;
    let target = dir.join("target");
    std::fs::create_dir_all(&target).map_err(|e| Error::io(&target, e))?;
    let component = match language {
        Language::Rust => lang::rust::build(&dir, toolchains, progress)?,
        Language::Python => lang::python::build(&dir, toolchains, progress)?,
        Language::JavaScript => lang::js::build(&dir, toolchains, progress)?,
        Language::C => lang::c::build(&dir, toolchains, progress)?,
    };
    let bytes = componentize::stamp(&component, language)?;
    let path = target.join(format!("{name}.wasm"));
    std::fs::write(&path, &bytes).map_err(|e| Error::io(&path, e))?;
    Ok(Built {
        name,
        language,
        component: path,
        bytes,
    })
}

/// The directory's name, which must do as a node type and a file name.
fn project_name(dir: &Path) -> Result<String, Error> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let usable = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if usable {
        Ok(name)
    } else {
        Err(Error::NotAProject {
            dir: dir.to_path_buf(),
            why: "its directory name must be made of letters, digits, '_' and '-' (it names the installed component)".to_string(),
        })
    }
}

/// Keeps the project's copy of the contract identical to the host's, so that a project made by
/// an older pflow-host builds against the contract this one runs.
fn refresh_contract(dir: &Path, progress: Progress<'_>) -> Result<(), Error> {
    let copy = dir.join(CONTRACT_COPY);
    if std::fs::read_to_string(&copy).is_ok_and(|text| text == NODE_WIT) {
        return Ok(());
    }
    if copy.exists() {
        progress(&format!(
            "updating {CONTRACT_COPY} to this pflow-host's contract"
        ));
    }
    write_file(&copy, NODE_WIT.as_bytes())
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    std::fs::write(path, bytes).map_err(|e| Error::io(path, e))
}
