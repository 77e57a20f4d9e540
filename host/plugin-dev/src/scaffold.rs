//! `plugin new`: a node project that builds and runs as generated, in any of the languages.
//! Every project gets the world (`wit/`), a README and a test workflow; the node itself
//! upper-cases its `text` param into `result`, so the first build shows the whole round trip.

use crate::{Error, Language, CONTRACT_COPY, NODE_WIT};
use std::path::{Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/rust_sdk.rs"));

/// Whether `name` can name a node type, a project directory and a crate: a letter, then
/// letters, digits, `-` and `_`.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Writes a new project for node type `name` into `dir` (which must not exist or be empty);
/// returns the files written.
pub fn scaffold(dir: &Path, name: &str, language: Language) -> Result<Vec<PathBuf>, Error> {
    if !is_valid_name(name) {
        return Err(Error::Scaffold(format!(
            "'{name}' cannot name a node: start with a letter, then use letters, digits, '-' and '_'"
        )));
    }
    let occupied = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some());
    if occupied {
        return Err(Error::Scaffold(format!(
            "{} already exists and is not empty; choose another name or directory",
            dir.display()
        )));
    }
    let mut files: Vec<(String, String)> = vec![
        (
            "wit/world.wit".into(),
            include_str!("../templates/world.wit").into(),
        ),
        (CONTRACT_COPY.into(), NODE_WIT.into()),
        (
            "test.pflow.md".into(),
            include_str!("../templates/test.pflow.md").into(),
        ),
        (
            ".gitignore".into(),
            include_str!("../templates/gitignore").into(),
        ),
        ("README.md".into(), readme(language)),
    ];
    match language {
        Language::Rust => {
            files.push((
                "Cargo.toml".into(),
                include_str!("../templates/rust/Cargo.toml").into(),
            ));
            files.push((
                "src/lib.rs".into(),
                include_str!("../templates/rust/lib.rs").into(),
            ));
            files.push(("Cargo.lock".into(), RUST_LOCK.into()));
            for (path, contents) in RUST_SDK {
                files.push((format!("pflow-sdk/{path}"), (*contents).into()));
            }
        }
        Language::Python => {
            files.push(("app.py".into(), include_str!("../templates/app.py").into()))
        }
        Language::JavaScript => {
            files.push(("app.js".into(), include_str!("../templates/app.js").into()))
        }
        Language::C => files.push(("node.c".into(), include_str!("../templates/node.c").into())),
    }
    let mut written = Vec::new();
    for (relative, contents) in files {
        let path = dir.join(relative);
        crate::write_file(&path, contents.replace("{{name}}", name).as_bytes())?;
        written.push(path);
    }
    Ok(written)
}

fn readme(language: Language) -> String {
    let (display, source, toolchain, notes) = match language {
        Language::Rust => (
            "Rust",
            "`src/lib.rs`",
            "Debian's rustc 1.63 with its wasm32-wasi standard library, with apt",
            "## Rust notes\n\n- The node builds with rustc 1.63: keep to that language version, and to dependencies\n  that build with it (`Cargo.lock` pins them).\n- `pflow-sdk/` is pflow's Rust SDK: the `Node` trait, `Params`, and one module per\n  capability (`pflow_sdk::http::send`, ...). A capability the node calls must be imported in\n  `wit/world.wit`; the build says so when it is not.\n",
        ),
        Language::Python => (
            "Python",
            "`app.py`",
            "componentize-py, in a virtual environment under ~/.pflow/toolchains",
            "## Python notes\n\n- componentize-py bundles CPython with `app.py`, initialised at build time: the\n  component is about 18 MB and compiles once, in about 10 s, on first use.\n- Only the modules imported while `app.py` loads are in the component; the standard library's\n  files are not in the sandbox at run time. Import everything at the top of `app.py`,\n  including modules the standard library loads lazily (`heapq` for `Counter.most_common`).\n- `wit_world` is generated from `wit/`: `wit_world.imports.<capability>` holds the imported\n  functions, `wit_world.imports.types` the records. Raise `componentize_py_types.Err(NodeError(...))`\n  to fail.\n- Packages from PyPI: install them into the project directory (`pip install --target .`),\n  pure-Python ones only.\n",
        ),
        Language::JavaScript => (
            "JavaScript",
            "`app.js`",
            "componentize-js, with npm, under ~/.pflow/toolchains",
            "## JavaScript notes\n\n- componentize-js embeds `app.js` in SpiderMonkey (StarlingMonkey); the component is\n  about 12 MB. Imported capabilities are ES modules: `import { send } from 'pflow:node/http@0.1.0'`.\n- Throw a node-error object (`{category, message, fixable, attempted, available}`) to fail.\n  `fetch` is not available: the network goes through the `http` capability.\n",
        ),
        Language::C => (
            "C",
            "`node.c`",
            "clang with wasi-libc, with apt; the C bindings come from wit-bindgen inside pflow-host",
            "## C notes\n\n- `plugin build` generates `target/bindings/node.h` from `wit/` (wit-bindgen's C\n  generator) and compiles every `.c` file at the top of the project with clang for\n  wasm32-wasi. Strings are `node_string_t` (pointer and length, not NUL-terminated); what\n  `run` returns is freed by the bindings after the host has read it.\n",
        ),
    };
    include_str!("../templates/README.md")
        .replace("{{language}}", display)
        .replace("{{source}}", source)
        .replace("{{toolchain}}", toolchain)
        .replace("{{notes}}", notes.trim_end())
}
