//! The planner's trace: one JSON line per event (every LLM request and answer, every
//! validation, every route), under `~/.pflow/traces/`.

use crate::PlannerEvent;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub struct Trace {
    path: PathBuf,
    file: BufWriter<File>,
}

impl Trace {
    /// A new file `plan-<unix ms>-<pid>.jsonl` in `dir`.
    pub fn create(dir: &Path) -> std::io::Result<Trace> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!(
            "plan-{}-{}.jsonl",
            now().as_millis(),
            std::process::id()
        ));
        Ok(Trace {
            file: BufWriter::new(File::create(&path)?),
            path,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `event` with a timestamp. Written through at once: a trace is most wanted after
    /// a crash or Ctrl-C. A failed write is logged once and not retried.
    pub fn record(&mut self, event: &PlannerEvent) {
        let mut line = match serde_json::to_value(event) {
            Ok(line) => line,
            Err(_) => return,
        };
        line["ts"] = serde_json::json!(now().as_secs_f64());
        let written = serde_json::to_writer(&mut self.file, &line)
            .map_err(std::io::Error::other)
            .and_then(|_| self.file.write_all(b"\n"))
            .and_then(|_| self.file.flush());
        if let Err(error) = written {
            tracing::warn!("cannot write the trace {}: {error}", self.path.display());
        }
    }
}

fn now() -> std::time::Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}
