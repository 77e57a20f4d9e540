//! Sandbox limits of one node execution: host defaults, narrowed or widened by the settings,
//! the workflow's `sandbox` block and the node's own.

use pflow_ir::SandboxOverrides;
use serde::Serialize;
use std::time::Duration;

const MIB: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limits {
    /// Fuel (about one unit per WebAssembly instruction) for one execution.
    pub fuel: u64,
    /// Linear memory the node may grow to, in bytes.
    pub memory_bytes: u64,
    /// Wall time for one execution, the host calls it makes (commands it runs) included.
    #[serde(serialize_with = "seconds")]
    pub timeout: Duration,
    /// Cap on the JSON a node returns, and on each captured stream of a command it runs.
    pub output_bytes: u64,
    /// Whether the node's own timeout param narrowed `timeout` (see `narrowed_by_params`).
    #[serde(skip)]
    pub timeout_from_param: bool,
}

impl Default for Limits {
    /// 5 G fuel (several seconds of pure computation), 256 MiB memory, 60 s, 16 MiB of output.
    fn default() -> Self {
        Limits {
            fuel: 5_000_000_000,
            memory_bytes: 256 * MIB,
            timeout: Duration::from_secs(60),
            output_bytes: 16 * MIB,
            timeout_from_param: false,
        }
    }
}

/// The schema mark of a param that bounds the node's own wall time, in seconds (the `code`
/// node's `timeout`): nothing inside a sandbox can interrupt the guest, so the host enforces it.
pub const WALL_TIME_MARK: &str = "x-pflow-wall-time";

impl Limits {
    /// These limits with whatever `overrides` sets replaced.
    pub fn with(mut self, overrides: Option<&SandboxOverrides>) -> Self {
        let Some(o) = overrides else { return self };
        if let Some(fuel) = o.fuel {
            self.fuel = fuel;
        }
        if let Some(mb) = o.memory_mb {
            self.memory_bytes = mb.saturating_mul(MIB);
        }
        if let Some(seconds) = o.timeout_seconds.filter(|s| s.is_finite() && *s > 0.0) {
            self.timeout = Duration::from_secs_f64(seconds.min(7.0 * 24.0 * 3600.0));
        }
        if let Some(mb) = o.output_mb.filter(|m| m.is_finite() && *m > 0.0) {
            self.output_bytes = (mb * MIB as f64) as u64;
        }
        self
    }

    /// These limits with the wall time narrowed by the params whose schema carries
    /// `WALL_TIME_MARK` (their value, or the schema's `default`). They only ever narrow: a
    /// param cannot lift the sandbox's own limit.
    pub fn narrowed_by_params(
        mut self,
        ports: &[pflow_validate::Port],
        params: &serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        for port in ports {
            let Some(schema) = &port.schema else { continue };
            if schema.get(WALL_TIME_MARK).and_then(|v| v.as_str()) != Some("seconds") {
                continue;
            }
            let seconds = params
                .get(&port.name)
                .and_then(as_seconds)
                .or_else(|| schema.get("default").and_then(as_seconds));
            if let Some(seconds) = seconds.filter(|s| s.is_finite() && *s > 0.0) {
                // Capped first: `from_secs_f64` panics on a value too large for a Duration.
                let bound = Duration::from_secs_f64(seconds.min(self.timeout.as_secs_f64()));
                if bound < self.timeout {
                    self.timeout = bound;
                    self.timeout_from_param = true;
                }
            }
        }
        self
    }
}

/// A number, or a string holding one (template results arrive as text).
fn as_seconds(value: &serde_json::Value) -> Option<f64> {
    match value {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// `12.3 MiB`, `4.0 KiB`, `17 bytes`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const MIB: f64 = (1 << 20) as f64;
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else if bytes >= 1 << 10 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} bytes")
    }
}
