//! What a person sees while the planner works (on a terminal): each step, each LLM call with its
//! tokens, each attempt and its errors; then what the dry run left undone.

use indicatif::{ProgressBar, ProgressStyle};
use pflow_planner::shared::Mode;
use pflow_planner::PlannerEvent;
use pflow_runtime::runtime_validation::{RuntimeRoute, RuntimeValidation};
use std::io::IsTerminal;
use std::time::Duration;

pub struct PlanProgress {
    enabled: bool,
    spinner: Option<ProgressBar>,
    tokens: u64,
}

impl PlanProgress {
    pub fn new(wanted: bool) -> Self {
        PlanProgress {
            enabled: wanted && std::io::stderr().is_terminal(),
            spinner: None,
            tokens: 0,
        }
    }

    pub fn event(&mut self, event: &PlannerEvent) {
        if !self.enabled {
            return;
        }
        match event {
            PlannerEvent::Context {
                types_listed,
                types_total,
                saved_listed,
                saved_total,
            } => eprintln!(
                "  context: {types_listed} of {types_total} node types, {saved_listed} of \
                 {saved_total} saved workflows"
            ),
            PlannerEvent::LlmRequest {
                call, mode, model, ..
            } => {
                let what = match mode {
                    Mode::Draft => "writing the workflow",
                    Mode::RuntimeFix => "fixing what failed in the dry run",
                };
                self.spin(format!("{model}: {what} (call {call})"));
            }
            PlannerEvent::LlmAnswer {
                duration_ms,
                usage,
                http_requests,
                ..
            } => {
                self.stop();
                self.tokens += usage.total();
                let retries = match http_requests {
                    1 => String::new(),
                    n => format!(", {} retried", n - 1),
                };
                eprintln!(
                    "  ✓ answer in {:.1} s: {} tokens in, {} out{retries} ({} so far)",
                    duration_ms / 1e3,
                    usage.input_tokens,
                    usage.output_tokens,
                    self.tokens
                );
            }
            PlannerEvent::LlmFailed { error, .. } => {
                self.stop();
                eprintln!("  ✗ {error}");
            }
            PlannerEvent::Validation {
                valid: true,
                attempt,
                ..
            } => eprintln!("  ✓ valid (attempt {attempt})"),
            PlannerEvent::Validation {
                errors, attempt, ..
            } => {
                eprintln!("  ✗ attempt {attempt} not accepted:");
                for error in errors {
                    eprintln!("      - {}", error.replace('\n', "\n        "));
                }
            }
            PlannerEvent::Step {
                node: "runtime_validation",
            } => self.spin("dry run in the sandbox".to_string()),
            PlannerEvent::RuntimeValidation { route, errors, .. } => {
                self.stop();
                match route {
                    RuntimeRoute::Default => eprintln!("  ✓ dry run went through"),
                    _ => {
                        eprintln!("  ✗ dry run found {} problem(s):", errors.len());
                        for error in errors {
                            eprintln!("      - {error}");
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn spin(&mut self, message: String) {
        self.stop();
        let spinner = ProgressBar::new_spinner();
        spinner.set_style(
            ProgressStyle::with_template("  {spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        spinner.set_message(message);
        spinner.enable_steady_tick(Duration::from_millis(100));
        self.spinner = Some(spinner);
    }

    pub fn stop(&mut self) {
        if let Some(spinner) = self.spinner.take() {
            spinner.finish_and_clear();
        }
    }
}

/// What the dry run did not do for real, which the real run will; empty when it did everything.
pub fn undone_by_dry_run(validation: &RuntimeValidation) -> Vec<String> {
    let mut lines: Vec<String> = validation
        .effects
        .iter()
        .map(|e| {
            format!(
                "{}: would have {} {}",
                e.node_id,
                format!("{:?}", e.change).to_lowercase(),
                e.path.display()
            )
        })
        .collect();
    lines.extend(
        validation
            .skipped
            .iter()
            .map(|s| format!("{}: {} ({})", s.node_id, s.reason, s.capability)),
    );
    lines.extend(
        validation
            .unverified
            .iter()
            .filter(|u| !validation.skipped.iter().any(|s| s.node_id == u.node_id))
            .map(|u| format!("{}: not run for real ({})", u.node_id, u.reason)),
    );
    lines
}
