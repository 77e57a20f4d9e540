//! The index behind [`WorkflowLibrary::find`]: each saved workflow's weighed terms (see
//! [`crate::rank`]) in `.meta/search-index.json`, refreshed only for the workflows whose files
//! changed size or modification time. A find over a thousand saved workflows then reads one
//! file and stats the rest, instead of reading, parsing and stemming every workflow.
//!
//! The index is a cache: a missing, unreadable or older-version one is rebuilt, and one that
//! cannot be written only costs the next find the same work again.

use crate::library::{write_atomically, WorkflowLibrary};
use crate::rank::{Ranker, Weighed};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Bumped whenever what is indexed or how it is weighed changes.
const VERSION: u32 = 1;
const FILE: &str = "search-index.json";

/// A saved workflow that matches a query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    pub name: String,
    pub description: String,
    pub score: f64,
}

#[derive(Default, Serialize, Deserialize)]
struct IndexFile {
    version: u32,
    entries: HashMap<String, Entry>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    /// Size and modification time of the workflow file and of its `.meta` file.
    stamp: String,
    description: String,
    /// `term:weight` pairs separated by spaces: far quicker to read back than a JSON map.
    terms: String,
    length: f64,
}

impl Entry {
    fn new(stamp: String, description: String, weighed: &Weighed) -> Entry {
        let terms: Vec<String> = weighed
            .terms
            .iter()
            .map(|(term, weight)| format!("{term}:{weight}"))
            .collect();
        Entry {
            stamp,
            description,
            terms: terms.join(" "),
            length: weighed.length,
        }
    }

    /// Its weights of the terms in `wanted`: BM25 reads no others, and a thousand entries'
    /// every term is most of a find's time when all are read.
    fn weighed(&self, wanted: &HashSet<String>) -> Weighed {
        let terms = self
            .terms
            .split(' ')
            .filter_map(|pair| {
                let (term, weight) = pair.rsplit_once(':')?;
                let term = wanted.get(term)?;
                Some((term.clone(), weight.parse().ok()?))
            })
            .collect();
        Weighed {
            terms,
            length: self.length,
        }
    }
}

/// The saved workflows that match `query`, best first.
pub(crate) fn find(library: &WorkflowLibrary, query: &str) -> Vec<Found> {
    let index_path = index_path(library);
    let mut old = read(&index_path).unwrap_or_default();
    let mut index = IndexFile {
        version: VERSION,
        entries: HashMap::new(),
    };
    let wanted: HashSet<String> = crate::rank::terms(query).into_iter().collect();
    let mut changed = false;
    let mut names = Vec::new();
    let mut documents = Vec::new();
    for (name, path) in library.files() {
        let stamp = format!(
            "{}|{}",
            stamp_of(&path),
            stamp_of(&library.meta_path(&name))
        );
        let entry = match old.entries.remove(&name) {
            Some(entry) if entry.stamp == stamp => entry,
            _ => match library.load(&name) {
                Ok(saved) => {
                    changed = true;
                    Entry::new(stamp, saved.description.clone(), &saved.weighed())
                }
                Err(error) => {
                    tracing::warn!("{error}");
                    continue;
                }
            },
        };
        documents.push(entry.weighed(&wanted));
        names.push(name.clone());
        index.entries.insert(name, entry);
    }
    // Entries left in the old index are of deleted workflows.
    if changed || !old.entries.is_empty() {
        write(&index_path, &index);
    }
    Ranker::from_weighed(documents)
        .rank(query)
        .into_iter()
        .map(|(i, score)| Found {
            description: index.entries[&names[i]].description.clone(),
            name: names[i].clone(),
            score,
        })
        .collect()
}

/// Drops `name`'s entry, for the library to call when it writes or deletes that workflow:
/// file times are too coarse to tell two writes in the same few milliseconds apart.
pub(crate) fn forget(library: &WorkflowLibrary, name: &str) {
    let path = index_path(library);
    let Some(mut index) = read(&path) else {
        return;
    };
    if index.entries.remove(name).is_some() {
        write(&path, &index);
    }
}

fn index_path(library: &WorkflowLibrary) -> PathBuf {
    library.dir().join(".meta").join(FILE)
}

/// The index at `path`, unless it is missing, unreadable or of another version.
fn read(path: &Path) -> Option<IndexFile> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice::<IndexFile>(&bytes)
        .ok()
        .filter(|index| index.version == VERSION)
}

fn write(path: &Path, index: &IndexFile) {
    let written = serde_json::to_string(index)
        .map_err(|e| e.to_string())
        .and_then(|text| write_atomically(path, &text).map_err(|e| e.to_string()));
    if let Err(error) = written {
        tracing::debug!("cannot keep the search index: {error}");
    }
}

/// Size, modification time and inode (a rename-into-place gives a new one), or `-` for a file
/// that is not there.
fn stamp_of(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .ok()
        .and_then(|meta| {
            let modified = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
            Some(format!(
                "{}:{}:{}",
                meta.len(),
                modified.as_nanos(),
                meta.ino()
            ))
        })
        .unwrap_or_else(|| "-".to_string())
}
