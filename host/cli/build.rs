//! Embeds the built-in node components (`target/plugins/*.wasm`, built by `just plugins`) in
//! the binary, so that a copied or installed `pflow-host` needs no directory beside it.
//! `PFLOW_EMBED_PLUGINS` names another directory. Without components the binary embeds none
//! and looks for them next to itself, as before.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let dir = std::env::var_os("PFLOW_EMBED_PLUGINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../../target/plugins"));
    println!("cargo:rerun-if-env-changed=PFLOW_EMBED_PLUGINS");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    if files.is_empty() {
        println!(
            "cargo:warning=no built-in components in {}: run `just plugins` to embed them",
            dir.display()
        );
    }
    // FNV-1a over names and bytes: the directory the components are unpacked into changes
    // whenever they do.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut entries = String::new();
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(file).unwrap();
        for byte in name.bytes().chain(bytes.iter().copied()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        let path = file.canonicalize().unwrap();
        writeln!(entries, "    ({name:?}, include_bytes!({path:?})),").unwrap();
    }
    let code = format!(
        "/// The built-in components: (file name, bytes).\npub const COMPONENTS: &[(&str, &[u8])] = &[\n{entries}];\n/// Changes whenever the components do.\npub const DIGEST: &str = \"{hash:016x}\";\n"
    );
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("builtin_components.rs");
    std::fs::write(out, code).unwrap();
}
