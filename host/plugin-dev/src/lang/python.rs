//! Python: componentize-py bundles CPython, the standard library and `app.py` into one
//! component, with the interpreter initialised at build time, so each execution starts warm.

use crate::toolchain::run_quietly;
use crate::{Error, Progress, Toolchains, PROJECT_WORLD};
use std::path::Path;
use std::process::Command;

pub(crate) fn build(
    dir: &Path,
    toolchains: &Toolchains,
    progress: Progress<'_>,
) -> Result<Vec<u8>, Error> {
    let tool = toolchains.componentize_py(progress)?;
    let output = dir.join("target").join("component.wasm");
    progress("componentize-py: CPython with app.py into a component (about 10 s)");
    run_quietly(
        Command::new(tool)
            .current_dir(dir)
            .args([
                "-d",
                "wit",
                "-w",
                PROJECT_WORLD,
                "componentize",
                "app",
                "-o",
            ])
            .arg(&output),
        "componentize-py",
    )?;
    super::read_output(&output)
}
