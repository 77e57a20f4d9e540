//! The built-in node components, embedded at build time (see `build.rs`). They are unpacked
//! once into `~/.pflow/cache/builtin/<digest>/`, and the registry loads them from there like
//! any plugin directory; a later run only checks that the files are there.

use anyhow::Result;
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
        // Written beside and renamed, so a concurrent run never loads half a file.
        pflow_runtime::registry::write_atomically(&path, bytes).map_err(anyhow::Error::msg)?;
    }
    Ok(Some(dir))
}
