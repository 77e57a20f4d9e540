//! Differential tests against pflow 0.16 itself: every `.pflow.md` in `tests/differential/` runs
//! in both tools (pflow from PyPI, installed by `just test-peers`), and they must agree on
//! whether the run succeeds and on its declared outputs. The same workflow as JSON IR must
//! give this host the same outputs again.
//!
//! Beside a case, `NAME.args` holds its inputs (`key=value` lines; `{base}` is the URL of a
//! loopback httpbin started here), and `NAME.divergence` says why pflow 0.16 is known to differ
//! (this host follows pflow's documentation there): the test then checks that ours succeeds
//! and that pflow still differs, so a fixed pflow is noticed. A case named `*-fails` must fail
//! in both.

mod common;
#[path = "common/httpbin.rs"]
mod httpbin;

use common::{repo_root, TestHome};
use httpbin::Httpbin;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The pflow 0.16 CLI: `PFLOW_REFERENCE`, else where `just test-peers` installs it.
fn reference_pflow() -> PathBuf {
    let path = std::env::var_os("PFLOW_REFERENCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/pflow-venv/bin/pflow"));
    assert!(
        path.exists(),
        "pflow 0.16 is not installed at {}: run `just test-peers`",
        path.display()
    );
    path
}

struct Case {
    name: String,
    path: PathBuf,
    args: Vec<String>,
    divergence: Option<String>,
}

fn cases(base: &str) -> Vec<Case> {
    let dir = repo_root().join("tests/differential");
    let mut cases: Vec<Case> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".pflow.md")?
                .to_string();
            let sidecar =
                |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).ok();
            let args = sidecar("args")
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.replace("{base}", base))
                .collect();
            Some(Case {
                divergence: sidecar("divergence"),
                name,
                path,
                args,
            })
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

/// Whether a run succeeded, and its outputs (JSON text parsed, as both tools print them).
#[derive(Debug, PartialEq)]
struct Outcome {
    succeeded: bool,
    outputs: Value,
}

fn pflow_run(pflow: &Path, case: &Case) -> Outcome {
    let scratch = tempfile::tempdir().unwrap();
    let output = Command::new(pflow)
        .arg("--output-format")
        .arg("json")
        .arg(&case.path)
        .args(&case.args)
        .current_dir(scratch.path())
        .env("HOME", scratch.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let document: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "{}: pflow printed no JSON: {}",
            case.name,
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let succeeded = matches!(document["status"].as_str(), Some("success" | "degraded"));
    Outcome {
        succeeded,
        outputs: if succeeded {
            document["result"].clone()
        } else {
            Value::Null
        },
    }
}

fn host_run(home: &TestHome, workflow: &Path, case: &Case) -> Outcome {
    let scratch = tempfile::tempdir().unwrap();
    let output = home
        .command()
        .arg("run")
        .arg(workflow)
        .args(&case.args)
        .args(["--output-format", "json", "--no-repair"])
        .current_dir(scratch.path())
        .output()
        .unwrap();
    let document: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "{}: pflow-host printed no JSON: {}",
            case.name,
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let succeeded = document["status"] == "succeeded";
    Outcome {
        succeeded,
        outputs: if succeeded {
            document["outputs"].clone()
        } else {
            Value::Null
        },
    }
}

#[test]
fn pflow_md_workflows_agree_with_pflow_0_16_and_with_their_json_ir() {
    let pflow = reference_pflow();
    let httpbin = Httpbin::start();
    let cases = cases(&httpbin.base);
    assert!(cases.len() >= 25, "the corpus has {} cases", cases.len());
    let home = TestHome::new();
    // The JSON IR files sit elsewhere; their children must resolve as the documents' do.
    let ir_dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        repo_root().join("tests/differential/children"),
        ir_dir.path().join("children"),
    )
    .unwrap();
    // Two at a time: pflow spends most of a run starting Python.
    let failures: Vec<String> = std::thread::scope(|threads| {
        let chunks: Vec<&[Case]> = cases.chunks(cases.len().div_ceil(2)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let (pflow, home, ir_dir) = (&pflow, &home, ir_dir.path());
                threads.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|case| check(pflow, home, ir_dir, case).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

fn check(pflow: &Path, home: &TestHome, ir_dir: &Path, case: &Case) -> Result<(), String> {
    let theirs = pflow_run(pflow, case);
    let ours = host_run(home, &case.path, case);
    let expect_failure = case.name.ends_with("-fails");
    if ours.succeeded == expect_failure {
        return Err(format!(
            "{}: pflow-host {} (expected {}): {ours:?}",
            case.name,
            if ours.succeeded {
                "succeeded"
            } else {
                "failed"
            },
            if expect_failure {
                "a failure"
            } else {
                "success"
            }
        ));
    }
    match &case.divergence {
        Some(why) if theirs == ours => {
            return Err(format!(
                "{}: marked as a divergence ({}) but pflow now agrees: remove the .divergence file",
                case.name,
                why.trim()
            ))
        }
        Some(_) => {}
        None if theirs != ours => {
            return Err(format!(
                "{}:\n  pflow 0.16: {theirs:?}\n  pflow-host: {ours:?}",
                case.name
            ))
        }
        None => {}
    }
    // The same workflow as JSON IR (when it parses: a refused document has no IR).
    let text = std::fs::read_to_string(&case.path).unwrap();
    if let Ok(document) = pflow_ir::markdown::parse_markdown(&text) {
        let json_path = ir_dir.join(format!("{}.json", case.name));
        std::fs::write(&json_path, document.ir.to_string()).unwrap();
        let from_json = host_run(home, &json_path, case);
        if from_json != ours {
            return Err(format!(
                "{}: the JSON IR gives {from_json:?}, the .pflow.md {ours:?}",
                case.name
            ));
        }
    }
    Ok(())
}
