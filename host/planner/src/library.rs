//! Saved workflows: `~/.pflow/workflows/<name>.json`, in pflow's library format
//! `{name, description, ir, created_at, updated_at, ...}`, or `<name>.pflow.md` as written.
//! What a markdown file cannot hold (its description when given apart, times, how often it
//! ran) sits in `.meta/<name>.json` beside it, for either format.

use crate::rank::{weigh, Weighed};
pub use crate::search_index::Found;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

const NAME_LIMIT: usize = 50;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SavedWorkflow {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub ir: Value,
    /// Seconds since the epoch.
    #[serde(default)]
    pub created_at: u64,
    #[serde(default)]
    pub updated_at: u64,
    /// The request it was planned from, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// How often it ran, and when it last did (seconds since the epoch), from `.meta/`.
    #[serde(skip)]
    pub run_count: u64,
    #[serde(skip)]
    pub last_run: Option<u64>,
    /// Its file.
    #[serde(skip)]
    pub path: PathBuf,
}

/// What `.meta/<name>.json` holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Meta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default)]
    created_at: u64,
    #[serde(default)]
    updated_at: u64,
    #[serde(default)]
    run_count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_run: Option<u64>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl SavedWorkflow {
    /// Its terms for `find`: the name (weighted most), the description, the inputs (names and
    /// descriptions), the node types, the outputs and the request.
    pub(crate) fn weighed(&self) -> Weighed {
        let [inputs, types, outputs, request] = self.search_texts();
        weigh([
            (self.name.as_str(), 3.0),
            (self.description.as_str(), 2.0),
            (inputs.as_str(), 1.0),
            (types.as_str(), 1.0),
            (outputs.as_str(), 1.0),
            (request.as_str(), 0.5),
        ])
    }

    fn search_texts(&self) -> [String; 4] {
        let entries = |field: &str| {
            self.ir[field]
                .as_object()
                .map(|entries| {
                    entries
                        .iter()
                        .map(|(name, spec)| {
                            format!("{name} {}", spec["description"].as_str().unwrap_or(""))
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default()
        };
        let types = self.ir["nodes"]
            .as_array()
            .map(|nodes| {
                nodes
                    .iter()
                    .filter_map(|n| n["type"].as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        [
            entries("inputs"),
            types,
            entries("outputs"),
            self.request.clone().unwrap_or_default(),
        ]
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("'{0}' is not a workflow name: use lower-case letters, digits and '-', at most 50 characters")]
    BadName(String),
    #[error("no saved workflow named '{name}'{}", saved_list(.saved))]
    NotFound { name: String, saved: Vec<String> },
    #[error("cannot read saved workflow {}: {message}", path.display())]
    Unreadable { path: PathBuf, message: String },
    #[error("cannot save workflow to {}: {message}", path.display())]
    Unwritable { path: PathBuf, message: String },
    #[error(
        "a workflow named '{0}' is already saved: give another --name, or --force to replace it"
    )]
    Exists(String),
}

fn saved_list(saved: &[String]) -> String {
    if saved.is_empty() {
        " (none are saved)".to_string()
    } else {
        format!("; saved: {}", saved.join(", "))
    }
}

/// The saved workflows of one pflow home.
pub struct WorkflowLibrary {
    dir: PathBuf,
}

impl WorkflowLibrary {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        WorkflowLibrary { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_of(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    /// Every readable saved workflow, by name. Unreadable files are skipped with a warning:
    /// one broken file must not hide the others.
    pub fn list(&self) -> Vec<SavedWorkflow> {
        self.files()
            .into_iter()
            .filter_map(|(name, _)| match self.load(&name) {
                Ok(saved) => Some(saved),
                Err(error) => {
                    tracing::warn!("{error}");
                    None
                }
            })
            .collect()
    }

    /// The name and file of every saved workflow, by name (a name saved in both formats once:
    /// the JSON file, as [`WorkflowLibrary::load`] reads it).
    pub(crate) fn files(&self) -> Vec<(String, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut files: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let file = e.file_name().into_string().ok()?;
                let name = file
                    .strip_suffix(".json")
                    .or_else(|| file.strip_suffix(".pflow.md"))?;
                valid_name(name).then(|| (name.to_string(), e.path()))
            })
            .collect();
        // `.json` sorts before `.pflow.md`, so dedup keeps the file `load` reads.
        files.sort();
        files.dedup_by(|later, first| later.0 == first.0);
        files
    }

    /// The saved workflows that match `query`, best first, with their scores (BM25 over the
    /// name, the description, the inputs, the node types and the request it was planned from;
    /// kept in an index, see [`crate::search_index`]).
    pub fn find(&self, query: &str) -> Vec<Found> {
        crate::search_index::find(self, query)
    }

    /// The file `name` is saved in: `NAME.json`, else `NAME.pflow.md`.
    pub fn file_of(&self, name: &str) -> Option<PathBuf> {
        [
            self.path_of(name),
            self.dir.join(format!("{name}.pflow.md")),
        ]
        .into_iter()
        .find(|path| path.is_file())
    }

    pub fn load(&self, name: &str) -> Result<SavedWorkflow, LibraryError> {
        if !valid_name(name) {
            return Err(self.not_found(name));
        }
        let Some(path) = self.file_of(name) else {
            return Err(self.not_found(name));
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(self.not_found(name)),
            Err(e) => {
                return Err(LibraryError::Unreadable {
                    path,
                    message: e.to_string(),
                })
            }
        };
        let unreadable = |message: String| LibraryError::Unreadable {
            path: path.clone(),
            message,
        };
        let meta = self.meta(name);
        let mut saved = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str::<SavedWorkflow>(&text).map_err(|e| unreadable(e.to_string()))?
        } else {
            let document =
                pflow_ir::markdown::parse_markdown(&text).map_err(|e| unreadable(e.to_string()))?;
            SavedWorkflow {
                name: name.to_string(),
                description: document.description.or(document.title).unwrap_or_default(),
                ir: document.ir,
                created_at: meta.created_at,
                updated_at: meta.updated_at,
                request: None,
                run_count: 0,
                last_run: None,
                path: PathBuf::new(),
            }
        };
        if let Some(description) = meta.description {
            saved.description = description;
        }
        saved.run_count = meta.run_count;
        saved.last_run = meta.last_run;
        saved.path = path;
        Ok(saved)
    }

    pub(crate) fn meta_path(&self, name: &str) -> PathBuf {
        self.dir.join(".meta").join(format!("{name}.json"))
    }

    fn meta(&self, name: &str) -> Meta {
        std::fs::read(self.meta_path(name))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn write_meta(&self, name: &str, meta: &Meta) -> Result<(), LibraryError> {
        write_atomically(
            &self.meta_path(name),
            &serde_json::to_string_pretty(meta).unwrap_or_default(),
        )
    }

    /// Saves a `.pflow.md` document as written (the text is checked first), under `name`;
    /// `replace` allows overwriting a saved workflow of that name.
    pub fn save_document(
        &self,
        name: &str,
        text: &str,
        description: Option<&str>,
        replace: bool,
    ) -> Result<PathBuf, LibraryError> {
        if !valid_name(name) {
            return Err(LibraryError::BadName(name.to_string()));
        }
        let path = self.dir.join(format!("{name}.pflow.md"));
        let existing = self.load(name).ok();
        if existing.is_some() && !replace {
            return Err(LibraryError::Exists(name.to_string()));
        }
        if let Some(other) = existing.filter(|e| e.path != path) {
            let _ = std::fs::remove_file(&other.path);
        }
        write_atomically(&path, text)?;
        crate::search_index::forget(self, name);
        let mut meta = self.meta(name);
        let now = now();
        if meta.created_at == 0 {
            meta.created_at = now;
        }
        meta.updated_at = now;
        meta.description = description.map(str::to_string);
        self.write_meta(name, &meta)?;
        Ok(path)
    }

    /// Deletes a saved workflow and what is recorded about it.
    pub fn delete(&self, name: &str) -> Result<PathBuf, LibraryError> {
        let saved = self.load(name)?;
        std::fs::remove_file(&saved.path).map_err(|e| LibraryError::Unwritable {
            path: saved.path.clone(),
            message: e.to_string(),
        })?;
        let _ = std::fs::remove_file(self.meta_path(name));
        crate::search_index::forget(self, name);
        Ok(saved.path)
    }

    /// Counts a run of the saved workflow `name`.
    pub fn record_run(&self, name: &str) {
        let mut meta = self.meta(name);
        meta.run_count += 1;
        meta.last_run = Some(now());
        if let Err(error) = self.write_meta(name, &meta) {
            tracing::warn!("{error}");
        }
    }

    /// The saved workflow whose file is `path`, if it is one.
    pub fn name_of(&self, path: &Path) -> Option<String> {
        let (dir, file) = (
            path.parent()?.canonicalize().ok()?,
            path.file_name()?.to_str()?,
        );
        if dir != self.dir.canonicalize().ok()? {
            return None;
        }
        let name = file
            .strip_suffix(".json")
            .or_else(|| file.strip_suffix(".pflow.md"))?;
        valid_name(name).then(|| name.to_string())
    }

    fn not_found(&self, name: &str) -> LibraryError {
        LibraryError::NotFound {
            name: name.to_string(),
            saved: self.list().into_iter().map(|s| s.name).collect(),
        }
    }

    /// Saves under `name`, or under `name-2`, `name-3`, ... when `name` holds a different
    /// workflow: a plan never overwrites another one. Returns the name and path used.
    pub fn save(
        &self,
        name: &str,
        description: &str,
        ir: &Value,
        request: Option<&str>,
    ) -> Result<(String, PathBuf), LibraryError> {
        if !valid_name(name) {
            return Err(LibraryError::BadName(name.to_string()));
        }
        let unwritable = |path: &Path, e: std::io::Error| LibraryError::Unwritable {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        std::fs::create_dir_all(&self.dir).map_err(|e| unwritable(&self.dir, e))?;
        let now = now();
        let mut chosen = name.to_string();
        let mut created_at = now;
        for suffix in 2.. {
            match self.load(&chosen) {
                Ok(existing) if existing.ir == *ir => {
                    created_at = existing.created_at;
                    break;
                }
                Ok(_) => chosen = suffixed(name, suffix),
                Err(_) if self.path_of(&chosen).exists() => chosen = suffixed(name, suffix),
                Err(_) => break,
            }
        }
        let saved = SavedWorkflow {
            name: chosen.clone(),
            description: description.to_string(),
            ir: ir.clone(),
            created_at,
            updated_at: now,
            request: request.map(str::to_string),
            run_count: 0,
            last_run: None,
            path: PathBuf::new(),
        };
        let path = self.path_of(&chosen);
        let text = serde_json::to_string_pretty(&saved).unwrap_or_default();
        write_atomically(&path, &(text + "\n"))?;
        crate::search_index::forget(self, &chosen);
        Ok((chosen, path))
    }
}

/// Written aside and renamed, so that a reader never sees half a file.
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<(), LibraryError> {
    // Unique per writer, threads included, so that two writers never share the aside file.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let write = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let unwritable = |path: &Path, e: std::io::Error| LibraryError::Unwritable {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| unwritable(dir, e))?;
    }
    let partial = path.with_file_name(format!(
        ".{}.{}.{write}",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&partial, text).map_err(|e| unwritable(&partial, e))?;
    std::fs::rename(&partial, path).map_err(|e| unwritable(path, e))
}

fn suffixed(name: &str, suffix: u32) -> String {
    let tail = format!("-{suffix}");
    let mut base = name.to_string();
    base.truncate(NAME_LIMIT - tail.len());
    format!("{}{tail}", base.trim_end_matches('-'))
}

/// kebab-case: lower-case letters, digits and single dashes, at most 50 characters.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= NAME_LIMIT
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The closest valid name to what a model wrote ("Count Words!" -> "count-words").
pub fn kebab(text: &str) -> String {
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let mut name = String::new();
    for word in words {
        if name.len() + word.len() + 1 > NAME_LIMIT {
            break;
        }
        if !name.is_empty() {
            name.push('-');
        }
        name.push_str(&word);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn saving_never_overwrites_another_workflow() {
        let dir = tempfile::tempdir().unwrap();
        let library = WorkflowLibrary::new(dir.path().join("workflows"));
        let first = json!({"nodes": [{"id": "a", "type": "shell"}]});
        let (name, path) = library.save("count", "d", &first, None).unwrap();
        assert_eq!((name.as_str(), path.exists()), ("count", true));
        let (again, _) = library.save("count", "d", &first, None).unwrap();
        assert_eq!(again, "count");
        let (other, _) = library
            .save("count", "d", &json!({"nodes": []}), None)
            .unwrap();
        assert_eq!(other, "count-2");
        assert_eq!(library.list().len(), 2);
        assert_eq!(library.load("count-2").unwrap().ir, json!({"nodes": []}));
        let missing = library.load("nope").unwrap_err().to_string();
        assert!(missing.contains("saved: count, count-2"), "{missing}");
    }

    #[test]
    fn names_are_kebab_case() {
        assert_eq!(
            kebab("Count the Words, in README!"),
            "count-the-words-in-readme"
        );
        assert!(valid_name("count-words-2"));
        for bad in ["", "Count", "a--b", "-a", "a/b", "../x", &"a".repeat(51)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
