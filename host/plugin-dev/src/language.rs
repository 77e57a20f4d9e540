//! The languages a node can be written in: how to tell a project's, and a built component's.

use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Rust,
    Python,
    JavaScript,
    C,
}

impl Language {
    pub const ALL: [Language; 4] = [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::C,
    ];
    /// The file that marks a project of each language, in `ALL`'s order.
    pub const MARKERS: [&'static str; 4] = ["Cargo.toml", "app.py", "app.js", "node.c"];

    /// The short name used on the command line (`--lang`).
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "js",
            Language::C => "c",
        }
    }

    pub fn from_name(name: &str) -> Option<Language> {
        match name.to_ascii_lowercase().as_str() {
            "rust" | "rs" => Some(Language::Rust),
            "python" | "py" => Some(Language::Python),
            "js" | "javascript" => Some(Language::JavaScript),
            "c" => Some(Language::C),
            _ => None,
        }
    }

    /// The name a `producers` section gives it.
    fn producers_name(self) -> &'static str {
        match self {
            Language::Rust => "Rust",
            Language::Python => "Python",
            Language::JavaScript => "JavaScript",
            Language::C => "C",
        }
    }

    /// A project's language, from the file that marks it.
    pub fn of_project(dir: &Path) -> Option<Language> {
        Language::ALL
            .into_iter()
            .zip(Language::MARKERS)
            .find(|(_, marker)| dir.join(marker).is_file())
            .map(|(language, _)| language)
    }

    /// A component's language: what `plugin build` stamped into it, else what the toolchains
    /// that made it recorded (a guess for components built elsewhere).
    pub fn of_component(bytes: &[u8]) -> Option<Language> {
        let stamped = wasm_metadata::Producers::from_wasm(bytes).ok().flatten();
        if let Some(language) = stamped.as_ref().and_then(stamped_language) {
            return Some(language);
        }
        let names = nested_languages(bytes);
        let has = |prefix: &str| names.iter().any(|n| n.starts_with(prefix));
        // Runtimes are built from Rust and C: the guest's own language is the telling one.
        if has("JavaScript") {
            Some(Language::JavaScript)
        } else if has("Python") {
            Some(Language::Python)
        } else if has("Rust") {
            Some(Language::Rust)
        } else if has("C") {
            Some(Language::C)
        } else {
            None
        }
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The language field `componentize::stamp` writes: `pflow-node-language`, apart from the
/// toolchains' own `language` entries.
pub(crate) const STAMP_FIELD: &str = "language";
pub(crate) const STAMP_PREFIX: &str = "pflow-node:";

pub(crate) fn stamp_value(language: Language) -> String {
    format!("{STAMP_PREFIX}{}", language.producers_name())
}

fn stamped_language(producers: &wasm_metadata::Producers) -> Option<Language> {
    let field = producers.get(STAMP_FIELD)?;
    field.iter().find_map(|(name, _)| {
        let stamped = name.strip_prefix(STAMP_PREFIX)?;
        Language::ALL
            .into_iter()
            .find(|l| l.producers_name() == stamped)
    })
}

/// Every `language` entry of every `producers` section, the nested modules' included.
fn nested_languages(bytes: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let Ok(wasmparser::Payload::CustomSection(section)) = payload else {
            continue;
        };
        if section.name() != "producers" {
            continue;
        }
        let producers = wasm_metadata::Producers::from_bytes(section.data(), section.data_offset());
        if let Some(field) = producers.as_ref().ok().and_then(|p| p.get("language")) {
            names.extend(field.iter().map(|(name, _)| name.clone()));
        }
    }
    names
}
