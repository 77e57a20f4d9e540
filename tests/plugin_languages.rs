//! Nodes written in Python, JavaScript and C, next to the Rust ones: each example project built
//! with `pflow-host plugin build` (toolchains installed on first use into
//! `target/toolchains`, shared by the tests), run in a workflow that passes data both ways
//! with Rust nodes, and failing with a structured `node-error`; `plugin new` + `plugin build` +
//! `run` for every language; and a hostile Python node, contained like any other.

mod common;
#[path = "common/http_server.rs"]
mod http_server;

use common::{repo_root, Run, TestHome};
use http_server::TestServer;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// `pflow-host plugin ARGS` with the toolchains shared by every test.
fn plugin(home: &TestHome, args: &[&str]) -> Run {
    let output = home
        .command()
        .env("PFLOW_TOOLCHAINS", repo_root().join("target/toolchains"))
        .arg("plugin")
        .args(args)
        .output()
        .unwrap();
    Run::from(output)
}

/// Builds and installs the project in `dir` into the test's home.
fn build(home: &TestHome, dir: &Path) {
    let run = plugin(home, &["build", dir.to_str().unwrap()]);
    assert_eq!(
        run.code,
        0,
        "plugin build {} failed:\n{}",
        dir.display(),
        run.stderr
    );
    assert!(run.stdout.contains("installed "), "{}", run.stdout);
}

fn example(path: &str) -> std::path::PathBuf {
    repo_root().join("plugins/examples").join(path)
}

/// A workflow: a shell node writes `text` (a printf format), the node under test reads it with `params`, and a
/// shell node reads `back` (a template of the node's outputs) from its stdin.
fn round_trip(node_type: &str, text: &str, params: Value, back: &str) -> Value {
    let mut node_params = json!({"text": "${source.stdout}"});
    node_params
        .as_object_mut()
        .unwrap()
        .extend(params.as_object().unwrap().clone());
    json!({
        "inputs": {},
        "nodes": [
            {"id": "source", "type": "shell", "params": {"command": format!("printf '{text}'")}},
            {"id": "node", "type": node_type, "params": node_params},
            {"id": "back", "type": "shell", "params": {"command": "cat", "stdin": back}}
        ],
        "edges": [{"from": "source", "to": "node"}, {"from": "node", "to": "back"}],
        "outputs": {"node": {"source": "${node}"}, "back": {"source": "${back.stdout}"}}
    })
}

/// Runs `node_type` with a param of the wrong type: the node's own `bad_params` error is the
/// run's error, with where it happened.
fn assert_structured_error(home: &TestHome, node_type: &str) {
    let run = home.run_json(
        &json!({"nodes": [{"id": "bad", "type": node_type, "params": {"text": 5}}], "edges": []}),
        &[],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let error = &run.report()["error"];
    assert_eq!(error["category"], "bad_params", "{error}");
    assert_eq!(error["source"], "node", "{error}");
    assert_eq!(error["node_id"], "bad", "{error}");
    assert_eq!(error["node_type"], node_type, "{error}");
    assert_eq!(error["fixable"], true, "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("'text'"),
        "{error}"
    );
    assert_eq!(error["attempted"], json!(["text"]), "{error}");
}

#[test]
fn python_example_runs_between_rust_nodes() {
    let home = TestHome::new();
    build(&home, &example("python/text-stats"));
    let run = home.run_json(
        &round_trip(
            "text-stats",
            "the cat and the hat and the bat",
            json!({"top": 2}),
            "${node.top}",
        ),
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let outputs = &run.report()["outputs"];
    let top = json!([{"word": "the", "count": 3}, {"word": "and", "count": 2}]);
    assert_eq!(
        outputs["node"],
        json!({"words": 8, "unique": 5, "top": top})
    );
    // The shell's stdout is the list as JSON text, which a declared output gives back parsed.
    assert_eq!(outputs["back"], top, "{outputs}");
    assert_structured_error(&home, "text-stats");
}

#[test]
fn javascript_example_runs_between_rust_nodes() {
    let home = TestHome::new();
    build(&home, &example("js/slugify"));
    let run = home.run_json(
        &round_trip("slugify", "Héllo Wörld, again!", json!({}), "${node.slug}"),
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let outputs = &run.report()["outputs"];
    assert_eq!(
        outputs["node"],
        json!({"slug": "hello-world-again", "words": 3})
    );
    assert_eq!(outputs["back"], "hello-world-again");
    assert_structured_error(&home, "slugify");
}

#[test]
fn c_example_runs_between_rust_nodes() {
    let home = TestHome::new();
    build(&home, &example("c/checksum"));
    let run = home.run_json(
        &round_trip("checksum", "abc\\nde", json!({}), "${node.fnv1a}"),
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let outputs = &run.report()["outputs"];
    // FNV-1a of "abc\nde", as Python computes it.
    assert_eq!(
        outputs["node"],
        json!({"fnv1a": "733bcb4015d5be50", "bytes": 6, "lines": 2})
    );
    assert_eq!(outputs["back"], "733bcb4015d5be50");
    assert_structured_error(&home, "checksum");
}

/// `plugin new` for each language gives a project that builds, installs and upper-cases.
fn scaffold_round_trip(language: &str) {
    let home = TestHome::new();
    let name = format!("shout-{language}");
    let dir = home.path().join(&name);
    let created = plugin(
        &home,
        &[
            "new",
            &name,
            "--lang",
            language,
            "--dir",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(created.code, 0, "{}", created.stderr);
    for file in [
        "wit/world.wit",
        "wit/deps/pflow-node/node.wit",
        "README.md",
        "test.pflow.md",
    ] {
        assert!(dir.join(file).is_file(), "plugin new wrote no {file}");
    }
    build(&home, &dir);
    let run = home.run_args(&[
        "run",
        dir.join("test.pflow.md").to_str().unwrap(),
        &format!("text=hello from {language}"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout.trim(),
        format!("HELLO FROM {}", language.to_uppercase())
    );

    let listed = plugin(&home, &["list", "--output-format", "json"]);
    let plugins: Value = serde_json::from_str(&listed.stdout).unwrap();
    let entry = plugins
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == name.as_str())
        .unwrap_or_else(|| panic!("{name} is not in plugin list: {plugins}"));
    assert_eq!(entry["language"], language);
    assert_eq!(entry["origin"], "user");
    assert_eq!(entry["capabilities"], json!(["log"]));
    assert!(entry["digest"].as_str().unwrap().starts_with("sha256:"));

    let again = plugin(&home, &["new", &name, "--dir", dir.to_str().unwrap()]);
    assert_eq!(again.code, 2, "plugin new over a project must refuse");
    assert!(again.stderr.contains("not empty"), "{}", again.stderr);
}

#[test]
fn plugin_new_rust_builds_and_runs() {
    scaffold_round_trip("rust");
}

#[test]
fn plugin_new_python_builds_and_runs() {
    scaffold_round_trip("python");
}

#[test]
fn plugin_new_js_builds_and_runs() {
    scaffold_round_trip("js");
}

#[test]
fn plugin_new_c_builds_and_runs() {
    scaffold_round_trip("c");
}

#[test]
fn plugin_build_explains_what_is_wrong() {
    let home = TestHome::new();
    let empty = home.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let run = plugin(&home, &["build", empty.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("is not a node project") && run.stderr.contains("app.py"),
        "{}",
        run.stderr
    );

    // A C node whose code does not compile: the compiler's message, nothing installed.
    let dir = home.path().join("broken");
    assert_eq!(
        plugin(
            &home,
            &[
                "new",
                "broken",
                "--lang",
                "c",
                "--dir",
                dir.to_str().unwrap()
            ]
        )
        .code,
        0
    );
    std::fs::write(dir.join("node.c"), "int main( {").unwrap();
    let run = plugin(&home, &["build", dir.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("clang failed") && run.stderr.contains("error"),
        "{}",
        run.stderr
    );
    assert!(!home.path().join("plugins/broken.wasm").exists());

    let run = plugin(&home, &["new", "9lives", "--lang", "c"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("start with a letter"), "{}", run.stderr);
}

/// The hostile Python node, built once per test that needs it.
fn hostile(home: &TestHome) {
    build(home, &repo_root().join("tests/plugins/hostile-py"));
}

fn run_hostile(home: &TestHome, params: Value, sandbox: Value) -> (Run, Duration) {
    let started = Instant::now();
    let run = home.run_json(
        &json!({
            "nodes": [{"id": "h", "type": "hostile-py", "params": params, "sandbox": sandbox}],
            "edges": [],
            "outputs": {"result": {"source": "${h.result}"}}
        }),
        &[],
    );
    (run, started.elapsed())
}

#[test]
fn hostile_python_node_is_contained() {
    let home = TestHome::new();
    hostile(&home);

    let (run, _) = run_hostile(&home, json!({"mode": "loop"}), json!({"fuel": 200_000_000}));
    assert_eq!(
        run.report()["error"]["category"],
        "fuel_exhausted",
        "{}",
        run.stdout
    );

    let (run, _) = run_hostile(&home, json!({"mode": "memory"}), json!({"memory_mb": 64}));
    assert_eq!(
        run.report()["error"]["category"],
        "memory_limit",
        "{}",
        run.stdout
    );

    // A sleep is a blocking host call that no epoch tick interrupts: it must still end at the
    // node's deadline, not an hour later.
    let (run, took) = run_hostile(
        &home,
        json!({"mode": "sleep"}),
        json!({"timeout_seconds": 1}),
    );
    assert_eq!(
        run.report()["error"]["category"],
        "timeout",
        "{}",
        run.stdout
    );
    assert!(
        took < Duration::from_secs(10),
        "the sleep held the run for {took:?}"
    );

    // No environment, no files, no sockets.
    let server = TestServer::start();
    std::env::set_var("PFLOW_TEST_SECRET", "do-not-leak");
    let (run, _) = run_hostile(
        &home,
        json!({"mode": "secrets", "port": server.port}),
        json!({}),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let found = &run.report()["outputs"]["result"];
    assert_eq!(found["environ"], json!({}), "{found}");
    for path in ["/etc/passwd", "."] {
        assert!(
            found[path].as_str().unwrap().starts_with("refused"),
            "{found}"
        );
    }
    assert!(
        found["socket"].as_str().unwrap().starts_with("refused"),
        "{found}"
    );
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[test]
fn python_node_gets_http_only_when_granted() {
    let home = TestHome::new();
    hostile(&home);
    let listed = plugin(&home, &["list", "--output-format", "json"]);
    let plugins: Value = serde_json::from_str(&listed.stdout).unwrap();
    let entry = plugins
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "hostile-py")
        .unwrap();
    assert_eq!(entry["capabilities"], json!(["log", "http"]), "{entry}");
    assert_eq!(entry["denied"], json!(["http"]), "{entry}");
    assert_eq!(entry["language"], "python");

    let server = TestServer::start();
    let params = json!({"mode": "http", "url": server.url("/json")});
    let (run, _) = run_hostile(&home, params.clone(), json!({}));
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(
        run.report()["error"]["category"],
        "policy_denied",
        "{}",
        run.stdout
    );
    assert!(
        server.requests().is_empty(),
        "a denied call reached the server"
    );

    home.write_settings(&json!({"plugins": {"grants": {"hostile-py": ["http"]}}}));
    let (run, _) = run_hostile(&home, params, json!({}));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["outputs"]["result"], json!({"status": 200}));
    assert_eq!(server.requests(), vec!["GET /json".to_string()]);
}
