//! Helpers for the end-to-end tests: they drive the real `pflow-host` binary with real plugin
//! components, each test in a home directory of its own.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The components `just plugins` builds; the tests need them.
pub fn plugin_dir(kind: &str) -> PathBuf {
    let dir = repo_root().join("target").join(kind);
    assert!(
        dir.join(if kind == "plugins" {
            "shell.wasm"
        } else {
            "echo.wasm"
        })
        .exists(),
        "{} has no components: run `just plugins` first",
        dir.display()
    );
    dir
}

/// A pflow home for one test. Compiled components are shared between tests (the cache is
/// keyed by content, and written atomically) unless the test asks for a cold cache.
pub struct TestHome {
    pub dir: tempfile::TempDir,
}

impl TestHome {
    pub fn new() -> Self {
        let home = TestHome::cold();
        let shared = repo_root().join("target/test-component-cache");
        std::fs::create_dir_all(&shared).unwrap();
        std::fs::create_dir_all(home.path().join("cache")).unwrap();
        std::os::unix::fs::symlink(&shared, home.path().join("cache/components")).unwrap();
        home
    }

    /// A home with an empty compiled-component cache.
    pub fn cold() -> Self {
        TestHome {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `pflow-host` with this home, the built-in plugins and the test plugins.
    pub fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pflow-host"));
        command
            .env("PFLOW_HOME", self.path())
            .env("PFLOW_BUILTIN_PLUGINS", plugin_dir("plugins"))
            .env("PFLOW_PLUGIN_PATH", plugin_dir("test-plugins"))
            .env_remove("PFLOW_LOG")
            // No LLM unless a test sets one: a failed run is not repaired behind its back.
            .env_remove("PFLOW_MODEL")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        command
    }

    /// Writes `workflow` into the home and returns its path.
    pub fn workflow(&self, name: &str, workflow: &Value) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(&path, serde_json::to_string_pretty(workflow).unwrap()).unwrap();
        path
    }

    /// Runs `workflow` with `--output-format json`.
    pub fn run_json(&self, workflow: &Value, inputs: &[&str]) -> Run {
        let path = self.workflow("workflow.json", workflow);
        let output = self
            .command()
            .arg("run")
            .arg(&path)
            .args(inputs)
            .args(["--output-format", "json"])
            .output()
            .unwrap();
        Run::from(output)
    }

    /// Runs the binary with `args`, text output.
    pub fn run_args(&self, args: &[&str]) -> Run {
        Run::from(self.command().args(args).output().unwrap())
    }

    pub fn write_settings(&self, settings: &Value) {
        std::fs::write(self.path().join("settings.json"), settings.to_string()).unwrap();
    }
}

#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        let run = Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        assert!(
            !run.stderr.contains("panicked"),
            "pflow-host panicked:\n{}",
            run.stderr
        );
        run
    }
}

impl Run {
    /// The JSON document printed by `--output-format json`.
    pub fn report(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// The report of node `id`.
    pub fn node(&self, id: &str) -> Value {
        self.report()["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no node '{id}' in {}", self.stdout))
    }
}

/// Processes whose environment holds PFLOW_TEST_MARKER=`marker`.
pub fn processes_marked(marker: &str) -> Vec<String> {
    let needle = format!("PFLOW_TEST_MARKER={marker}");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
                .is_some_and(alive)
        })
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .map(|env| env.split(|&b| b == 0).any(|var| var == needle.as_bytes()))
                .unwrap_or(false)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Whether `pid` is a running (not zombie) process.
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            let state = stat.rsplit(')').next().unwrap_or_default().trim_start();
            !state.starts_with('Z')
        })
        .unwrap_or(false)
}
