//! C: wit-bindgen's C generator (linked into pflow-host) writes `node.h`/`node.c` for the
//! project's world into `target/bindings/`; clang compiles them with the project's `.c` files
//! for wasm32-wasi against wasi-libc; the module becomes a component.

use crate::componentize::{componentize, resolve_world};
use crate::toolchain::run_quietly;
use crate::{Error, Progress, Toolchains};
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn build(
    dir: &Path,
    toolchains: &Toolchains,
    progress: Progress<'_>,
) -> Result<Vec<u8>, Error> {
    let clang = toolchains.clang(progress)?;
    let bindings = dir.join("target").join("bindings");
    let generated = generate_bindings(&dir.join("wit"), &bindings)?;
    let mut inputs: Vec<PathBuf> = c_files(dir)?;
    inputs.extend(
        generated
            .into_iter()
            .filter(|f| f.extension().is_some_and(|e| e == "c" || e == "o")),
    );
    let module = dir.join("target").join("core.wasm");
    progress("clang: C for wasm32-wasi");
    run_quietly(
        Command::new(clang)
            .current_dir(dir)
            .args([
                "--target=wasm32-wasi",
                "-mexec-model=reactor",
                "-O2",
                "-Wall",
            ])
            .arg("-I")
            .arg(&bindings)
            .args(&inputs)
            .arg("-o")
            .arg(&module),
        "clang",
    )?;
    // The bindings' object file carries the world; the module needs nothing more embedded.
    componentize(&super::read_output(&module)?, None)
}

/// Writes wit-bindgen's C bindings of the world `node`; returns the files written.
fn generate_bindings(wit: &Path, out: &Path) -> Result<Vec<PathBuf>, Error> {
    let (mut resolve, world) = resolve_world(wit)?;
    let mut files = wit_bindgen_core::Files::default();
    wit_bindgen_c::Opts::default()
        .build()
        .generate(&mut resolve, world, &mut files)
        .map_err(|e| Error::Wit {
            dir: wit.to_path_buf(),
            message: format!("wit-bindgen cannot generate C bindings: {e:#}"),
        })?;
    let mut written = Vec::new();
    for (name, contents) in files.iter() {
        let path = out.join(name);
        crate::write_file(&path, contents)?;
        written.push(path);
    }
    Ok(written)
}

/// The project's own C sources: the `.c` files at its top level.
fn c_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "c") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}
