//! Saved workflows: `~/.pflow/workflows/<name>.json`, in pflow's library format
//! `{name, description, ir, created_at, updated_at, ...}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

const NAME_LIMIT: usize = 50;

#[derive(Debug, Clone, Serialize, Deserialize)]
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
}

impl SavedWorkflow {
    /// What `find` reads besides the name and description: the inputs (names and
    /// descriptions), the node types, the outputs and the request.
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
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter_map(|f| f.strip_suffix(".json").map(str::to_string))
            .collect();
        names.sort();
        names
            .into_iter()
            .filter_map(|name| match self.load(&name) {
                Ok(saved) => Some(saved),
                Err(error) => {
                    tracing::warn!("{error}");
                    None
                }
            })
            .collect()
    }

    /// The saved workflows that match `query`, best first, with their scores (BM25 over the
    /// name, the description, the inputs, the node types and the request it was planned from).
    pub fn find(&self, query: &str) -> Vec<(SavedWorkflow, f64)> {
        let saved = self.list();
        let texts: Vec<[String; 4]> = saved.iter().map(SavedWorkflow::search_texts).collect();
        let ranker = crate::rank::Ranker::new(texts.iter().zip(&saved).map(|(texts, saved)| {
            vec![
                (saved.name.as_str(), 3.0),
                (saved.description.as_str(), 2.0),
                (texts[0].as_str(), 1.0),
                (texts[1].as_str(), 1.0),
                (texts[2].as_str(), 1.0),
                (texts[3].as_str(), 0.5),
            ]
        }));
        let mut saved: Vec<Option<SavedWorkflow>> = saved.into_iter().map(Some).collect();
        ranker
            .rank(query)
            .into_iter()
            .filter_map(|(index, score)| Some((saved[index].take()?, score)))
            .collect()
    }

    pub fn load(&self, name: &str) -> Result<SavedWorkflow, LibraryError> {
        if !valid_name(name) {
            return Err(self.not_found(name));
        }
        let path = self.path_of(name);
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
        serde_json::from_str(&text).map_err(|e| LibraryError::Unreadable {
            path,
            message: e.to_string(),
        })
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
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
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
        };
        let path = self.path_of(&chosen);
        let text = serde_json::to_string_pretty(&saved).unwrap_or_default();
        // Written aside and renamed, so that a reader never sees half a file.
        let partial = self
            .dir
            .join(format!(".{chosen}.json.{}", std::process::id()));
        std::fs::write(&partial, text + "\n").map_err(|e| unwritable(&partial, e))?;
        std::fs::rename(&partial, &path).map_err(|e| unwritable(&path, e))?;
        Ok((chosen, path))
    }
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
