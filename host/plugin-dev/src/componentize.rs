//! A core WebAssembly module plus a world in, a component out.

use crate::{Error, Language, PROJECT_WORLD};
use std::path::Path;
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::{Resolve, WorldId};

/// The WIT package in `wit_dir` (with its `deps/`) and its world `node`.
pub fn resolve_world(wit_dir: &Path) -> Result<(Resolve, WorldId), Error> {
    let wit_error = |message: String| Error::Wit {
        dir: wit_dir.to_path_buf(),
        message,
    };
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_path(wit_dir)
        .map_err(|e| wit_error(format!("{e:#}")))?;
    let world = resolve
        .select_world(&[package], Some(PROJECT_WORLD))
        .map_err(|e| {
            wit_error(format!(
                "{e:#} (the package must have a world named `{PROJECT_WORLD}`)"
            ))
        })?;
    Ok((resolve, world))
}

/// Wraps a core module built for `wasm32-wasi` into a component, with the WASI preview 1
/// adapter. With `wit_dir`, the world `node` of that package is embedded first; without, the
/// module must carry its world already (wit-bindgen's C bindings link it in).
pub fn componentize(module: &[u8], wit_dir: Option<&Path>) -> Result<Vec<u8>, Error> {
    let mut module = module.to_vec();
    if let Some(wit_dir) = wit_dir {
        let (resolve, world) = resolve_world(wit_dir)?;
        wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)
            .map_err(|e| Error::Componentize(format!("{e:#}")))?;
    }
    ComponentEncoder::default()
        .module(&module)
        .and_then(|encoder| {
            encoder.adapter(
                "wasi_snapshot_preview1",
                wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
            )
        })
        .and_then(|encoder| encoder.validate(true).encode())
        .map_err(|e| Error::Componentize(explain_missing_import(&format!("{e:#}"))))
}

/// A module that calls a capability its world does not import fails here: say how to ask for it.
fn explain_missing_import(message: &str) -> String {
    if message.contains("pflow:node/") && message.contains("import") {
        format!(
            "{message}\nThe node calls a capability its world does not import: add `import pflow:node/<capability>@0.1.0;` to the world in wit/world.wit."
        )
    } else {
        message.to_string()
    }
}

/// Records the source language in the component's `producers` section, which `plugin list`
/// reads back.
pub fn stamp(component: &[u8], language: Language) -> Result<Vec<u8>, Error> {
    let mut producers = wasm_metadata::Producers::empty();
    producers.add(
        crate::language::STAMP_FIELD,
        &crate::language::stamp_value(language),
        "",
    );
    producers.add("processed-by", "pflow-host", env!("CARGO_PKG_VERSION"));
    producers
        .add_to_wasm(component)
        .map_err(|e| Error::Componentize(format!("cannot record the language: {e:#}")))
}
