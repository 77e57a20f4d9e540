//! Embeds what `plugin new --lang rust` copies into a project: the Rust SDK's sources and the
//! lock file that pins its dependencies to versions that build with rustc 1.63.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let plugins = manifest.join("../../plugins");
    let sdk = plugins.join("sdk");
    let mut files = vec![sdk.join("Cargo.toml")];
    let mut sources: Vec<PathBuf> = std::fs::read_dir(sdk.join("src"))
        .expect("plugins/sdk/src")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    sources.sort();
    files.extend(sources);
    let mut code = String::from("/// The Rust SDK: (path inside the SDK directory, contents).\npub const RUST_SDK: &[(&str, &str)] = &[\n");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let relative = file
            .strip_prefix(&sdk)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let path = file.canonicalize().unwrap();
        writeln!(code, "    ({relative:?}, include_str!({path:?})),").unwrap();
    }
    code.push_str("];\n");
    let lock = plugins.join("Cargo.lock").canonicalize().unwrap();
    println!("cargo:rerun-if-changed={}", lock.display());
    writeln!(code, "/// Versions of the SDK's dependencies that build with rustc 1.63.\npub const RUST_LOCK: &str = include_str!({lock:?});").unwrap();
    println!("cargo:rerun-if-changed={}", sdk.join("src").display());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("rust_sdk.rs");
    std::fs::write(out, code).unwrap();
}
