//! JavaScript: componentize-js embeds `app.js` in the StarlingMonkey engine (SpiderMonkey),
//! initialised at build time. Its HTTP and fetch-event support stays out: a node reaches the
//! network only through the `http` capability, under the host's policy.

use crate::toolchain::run_quietly;
use crate::{Error, Progress, Toolchains, PROJECT_WORLD};
use std::path::Path;
use std::process::Command;

pub(crate) fn build(
    dir: &Path,
    toolchains: &Toolchains,
    progress: Progress<'_>,
) -> Result<Vec<u8>, Error> {
    let tool = toolchains.componentize_js(progress)?;
    let output = dir.join("target").join("component.wasm");
    progress("componentize-js: app.js into a component (about 15 s)");
    run_quietly(
        Command::new(tool)
            .current_dir(dir)
            .args(["app.js", "--wit", "wit", "--world-name", PROJECT_WORLD])
            .args(["--disable", "http", "--disable", "fetch-event", "-o"])
            .arg(&output),
        "componentize-js",
    )?;
    super::read_output(&output)
}
