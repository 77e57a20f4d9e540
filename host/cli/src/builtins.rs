//! The built-in node components, embedded at build time (see `build.rs`). They are unpacked
//! once into `~/.pflow/cache/builtin/<digest>/`, and the registry loads them from there like
//! any plugin directory; a later run only checks that the files are there.

use anyhow::{Context, Result};
use pflow_runtime::home::PflowHome;
use std::path::PathBuf;

include!(concat!(env!("OUT_DIR"), "/builtin_components.rs"));

/// The directory holding the embedded components, unpacked when needed; None when the binary
/// was built without any.
pub fn unpacked(home: &PflowHome) -> Result<Option<PathBuf>> {
    if COMPONENTS.is_empty() {
        return Ok(None);
    }
    let dir = home.root().join("cache").join("builtin").join(DIGEST);
    for (name, bytes) in COMPONENTS {
        let path = dir.join(name);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == bytes.len() as u64) {
            continue;
        }
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        // Written beside and renamed, so a concurrent run never loads half a file.
        let partial = dir.join(format!(".{name}.{}", std::process::id()));
        std::fs::write(&partial, bytes)
            .with_context(|| format!("cannot write {}", partial.display()))?;
        std::fs::rename(&partial, &path)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(Some(dir))
}
