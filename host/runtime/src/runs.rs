//! Runs on disk: `~/.pflow/runs/<run-id>/checkpoint.json`, the state of a run written after
//! every node, so that a run stopped by a failure, Ctrl-C or a crash can be resumed by a later
//! process. The file is pflow's `__execution__` shape plus the store, the next node, the
//! workflow as it ran and the inputs.

use crate::executor::{RunState, Status};
use crate::NodeReport;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

const CHECKPOINT: &str = "checkpoint.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl From<Status> for RunStatus {
    fn from(status: Status) -> Self {
        match status {
            Status::Succeeded => RunStatus::Succeeded,
            Status::Failed => RunStatus::Failed,
            Status::Cancelled => RunStatus::Cancelled,
        }
    }
}

/// A node as the run list shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeSummary {
    pub id: String,
    #[serde(rename = "type")]
    pub node_type: String,
    pub status: Status,
    pub duration_ms: f64,
    #[serde(default)]
    pub cached: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl From<&NodeReport> for NodeSummary {
    fn from(report: &NodeReport) -> Self {
        NodeSummary {
            id: report.id.clone(),
            node_type: report.node_type.clone(),
            status: report.status,
            duration_ms: report.duration_ms,
            cached: report.cached,
            error: report
                .error
                .as_ref()
                .map(|e| format!("[{}] {}", e.category, e.message)),
        }
    }
}

/// What a checkpoint says about its run, besides the run state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunMeta {
    pub run_id: String,
    pub status: RunStatus,
    /// The workflow file it was started from, when there was one.
    #[serde(default)]
    pub workflow_path: Option<PathBuf>,
    /// The workflow as it ran: `--resume` needs no file.
    pub workflow: Value,
    /// The inputs as given (before defaults), for the resumed run.
    pub inputs: Map<String, Value>,
    /// Seconds since the epoch.
    pub started_at: f64,
    pub updated_at: f64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Checkpoint {
    #[serde(flatten)]
    pub meta: RunMeta,
    #[serde(default)]
    pub nodes: Vec<NodeSummary>,
    #[serde(flatten)]
    pub state: RunState,
}

/// A checkpoint to write, borrowed: the store is serialized where it is, never copied.
#[derive(Serialize)]
struct CheckpointRef<'a> {
    #[serde(flatten)]
    meta: &'a RunMeta,
    nodes: &'a [NodeSummary],
    #[serde(flatten)]
    state: &'a RunState,
}

#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    #[error("no run '{id}' in {}{}", dir.display(), known_runs(.known))]
    NotFound {
        id: String,
        dir: PathBuf,
        known: Vec<String>,
    },
    #[error("cannot read the checkpoint {}: {message}", path.display())]
    Unreadable { path: PathBuf, message: String },
    #[error("cannot write the checkpoint {}: {message}", path.display())]
    Unwritable { path: PathBuf, message: String },
}

fn known_runs(known: &[String]) -> String {
    match known {
        [] => " (there are none)".to_string(),
        _ => format!("; the latest: {}", known.join(", ")),
    }
}

/// The runs of one pflow home.
pub struct Runs {
    dir: PathBuf,
}

impl Runs {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Runs { dir: dir.into() }
    }

    /// A new run's id: the start time in milliseconds and the process id, so ids sort by age.
    pub fn new_id() -> String {
        format!("{}-{}", (now() * 1000.0) as u64, std::process::id())
    }

    pub fn checkpoint_path(&self, id: &str) -> PathBuf {
        self.dir.join(id).join(CHECKPOINT)
    }

    /// Writes the checkpoint atomically: to a temporary file in the run's directory, then
    /// renamed over the old one. A crash leaves the old or the new checkpoint, never half of
    /// one. No fsync: a power cut may lose the last node, which a resume then runs again.
    pub fn write(
        &self,
        meta: &RunMeta,
        nodes: &[NodeSummary],
        state: &RunState,
    ) -> Result<(), RunsError> {
        let path = self.checkpoint_path(&meta.run_id);
        let unwritable = |message: String| RunsError::Unwritable {
            path: path.clone(),
            message,
        };
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).map_err(|e| unwritable(e.to_string()))?;
        let partial = dir.join(format!(".{CHECKPOINT}.partial"));
        let file = std::fs::File::create(&partial).map_err(|e| unwritable(e.to_string()))?;
        let mut writer = std::io::BufWriter::new(file);
        let checkpoint = CheckpointRef { meta, nodes, state };
        serde_json::to_writer(&mut writer, &checkpoint).map_err(|e| unwritable(e.to_string()))?;
        writer.flush().map_err(|e| unwritable(e.to_string()))?;
        drop(writer);
        std::fs::rename(&partial, &path).map_err(|e| unwritable(e.to_string()))
    }

    /// The checkpoint of run `id`, or of the latest run for `last`.
    pub fn load(&self, requested: &str) -> Result<Checkpoint, RunsError> {
        let id = if requested == "last" {
            self.ids().into_iter().next().unwrap_or_default()
        } else {
            requested.to_string()
        };
        let path = self.checkpoint_path(&id);
        // An id is one directory name: never a path out of the runs directory.
        if id.is_empty() || id.contains(['/', '\\']) || id.starts_with('.') || !path.exists() {
            return Err(RunsError::NotFound {
                id: requested.to_string(),
                dir: self.dir.clone(),
                known: self.ids().into_iter().take(5).collect(),
            });
        }
        let text = std::fs::read_to_string(&path).map_err(|e| RunsError::Unreadable {
            path: path.clone(),
            message: e.to_string(),
        })?;
        serde_json::from_str(&text).map_err(|e| RunsError::Unreadable {
            path,
            message: e.to_string(),
        })
    }

    /// Every run with a checkpoint, newest first.
    pub fn ids(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut ids: Vec<(u64, String)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join(CHECKPOINT).exists())
            .filter_map(|e| e.file_name().into_string().ok())
            .map(|id| (leading_number(&id), id))
            .collect();
        ids.sort_by(|a, b| b.cmp(a));
        ids.into_iter().map(|(_, id)| id).collect()
    }

    /// Every readable checkpoint, newest first; unreadable ones are skipped with a warning.
    pub fn list(&self) -> Vec<Checkpoint> {
        self.ids()
            .iter()
            .filter_map(|id| match self.load(id) {
                Ok(checkpoint) => Some(checkpoint),
                Err(error) => {
                    tracing::warn!("{error}");
                    None
                }
            })
            .collect()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Keeps a run's checkpoint current: one write when it starts, one after every node, one when
/// it ends. A checkpoint that cannot be written is a warning, once: the run itself goes on.
pub struct Recorder<'a> {
    runs: &'a Runs,
    pub meta: RunMeta,
    nodes: Vec<NodeSummary>,
    warned: bool,
}

impl<'a> Recorder<'a> {
    pub fn start(runs: &'a Runs, meta: RunMeta, state: &RunState) -> Self {
        let mut recorder = Recorder {
            runs,
            meta,
            nodes: Vec::new(),
            warned: false,
        };
        recorder.write(state);
        recorder
    }

    /// After each node.
    pub fn step(&mut self, state: &RunState, report: &NodeReport) {
        self.nodes.push(report.into());
        self.write(state);
    }

    /// When the run is over (or stopped), with its final state.
    pub fn finish(&mut self, status: Status, state: &RunState) {
        self.meta.status = status.into();
        self.write(state);
    }

    fn write(&mut self, state: &RunState) {
        self.meta.updated_at = now();
        if let Err(error) = self.runs.write(&self.meta, &self.nodes, state) {
            if !std::mem::replace(&mut self.warned, true) {
                tracing::warn!("{error}; this run cannot be resumed");
            }
        }
    }
}

/// `~/.pflow/runs/<run-id>/trace.jsonl`: one line per event of the run (`run_started`,
/// `node_started`, `node_completed`, `node_cached`, `node_failed`, `cancelled`,
/// `run_finished`), each with its time. Appended to by a resumed run. A trace that cannot be
/// written is a warning, once.
pub struct RunTrace {
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl RunTrace {
    pub fn open(runs: &Runs, run_id: &str) -> RunTrace {
        let dir = runs.dir.join(run_id);
        let file = std::fs::create_dir_all(&dir)
            .and_then(|_| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join("trace.jsonl"))
            })
            .map_err(|e| tracing::warn!("no trace of run {run_id}: {e}"))
            .ok();
        RunTrace {
            file: file.map(std::io::BufWriter::new),
        }
    }

    /// Appends `fields` as one line, with `event` and `ts` added. Flushed at once: the trace
    /// matters most after a crash.
    pub fn record(&mut self, event: &str, mut fields: Value) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        if !fields.is_object() {
            fields = Value::Object(Map::new());
        }
        fields["event"] = Value::from(event);
        // Events recorded earlier than written keep their own time.
        if fields.get("ts").is_none() {
            fields["ts"] = Value::from(now());
        }
        let written = serde_json::to_writer(&mut *file, &fields)
            .map_err(std::io::Error::other)
            .and_then(|_| file.write_all(b"\n"))
            .and_then(|_| file.flush());
        if let Err(error) = written {
            tracing::warn!("the run's trace stops here: {error}");
            self.file = None;
        }
    }

    /// A node's start or end, as the executor reports it.
    pub fn node_event(&mut self, event: &crate::Event<'_>) {
        match event {
            crate::Event::NodeStarted { id, node_type } => self.record(
                "node_started",
                serde_json::json!({"node_id": id, "node_type": node_type}),
            ),
            crate::Event::NodeFinished(report) => {
                let kind = match report.status {
                    _ if report.cached => "node_cached",
                    Status::Succeeded => "node_completed",
                    Status::Failed => "node_failed",
                    Status::Cancelled => "cancelled",
                };
                let mut fields = serde_json::json!({
                    "node_id": report.id, "node_type": report.node_type,
                    "action": report.action, "duration_ms": report.duration_ms,
                });
                if let Some(error) = &report.error {
                    fields["error"] = serde_json::to_value(error).unwrap_or_default();
                }
                self.record(kind, fields);
            }
        }
    }
}

fn leading_number(id: &str) -> u64 {
    id.split('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Seconds since the epoch.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
