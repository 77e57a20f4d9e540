//! Rust: the crate (a `cdylib` on pflow's SDK) builds for wasm32-wasi with the machine's wasm
//! toolchain (see `toolchain`); the module becomes a component of the project's world.

use crate::componentize::componentize;
use crate::{Error, Progress, Toolchains};
use std::path::{Path, PathBuf};
use std::process::Stdio;

pub(crate) fn build(
    dir: &Path,
    toolchains: &Toolchains,
    progress: Progress<'_>,
) -> Result<Vec<u8>, Error> {
    let toolchain = toolchains.rust(progress)?;
    progress(&format!("cargo build ({})", toolchain.describe()));
    let output = toolchain
        .cargo_build(dir, &dir.join("target"))
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| Error::ToolFailed {
            tool: "cargo".to_string(),
            output: format!("cannot start it: {e}"),
        })?;
    if !output.status.success() {
        return Err(Error::ToolFailed {
            tool: "cargo build".to_string(),
            output: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    let manifest = dir.join("Cargo.toml");
    let module = cdylib_artifacts(&output.stdout)
        .into_iter()
        .find(|(m, _)| *m == manifest)
        .map(|(_, module)| module)
        .ok_or_else(|| Error::NotAProject {
            dir: dir.to_path_buf(),
            why: "cargo built no WebAssembly module; the crate needs `crate-type = [\"cdylib\"]`"
                .to_string(),
        })?;
    componentize(&super::read_output(&module)?, Some(&dir.join("wit")))
}

/// (manifest path, .wasm module) of each cdylib that cargo's JSON messages report building.
pub fn cdylib_artifacts(messages: &[u8]) -> Vec<(PathBuf, PathBuf)> {
    let mut artifacts = Vec::new();
    for line in messages.split(|&b| b == b'\n') {
        let Ok(message) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" {
            continue;
        }
        let is_cdylib = message["target"]["crate_types"]
            .as_array()
            .is_some_and(|types| types.iter().any(|t| t == "cdylib"));
        let wasm = message["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str())
            .find(|f| f.ends_with(".wasm"));
        if let (true, Some(wasm), Some(manifest)) =
            (is_cdylib, wasm, message["manifest_path"].as_str())
        {
            artifacts.push((PathBuf::from(manifest), PathBuf::from(wasm)));
        }
    }
    artifacts
}
