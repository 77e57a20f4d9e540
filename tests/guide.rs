//! Every example workflow in the guide (`host/cli/guide/*.md`, the fenced ````markdown blocks)
//! validates, and runs; `guide` prints every topic.

mod common;

use common::{repo_root, TestHome};

fn examples() -> Vec<(String, String)> {
    let mut found = Vec::new();
    let dir = repo_root().join("host/cli/guide");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut rest = text.as_str();
        let mut index = 0;
        while let Some(start) = rest.find("````markdown\n") {
            let body = &rest[start + "````markdown\n".len()..];
            let end = body.find("\n````").expect("an example is closed");
            index += 1;
            let name = format!("{}-{index}", path.file_stem().unwrap().to_string_lossy());
            found.push((name, body[..end].to_string() + "\n"));
            rest = &body[end..];
        }
    }
    found
}

#[test]
fn every_guide_example_validates_and_runs() {
    let home = TestHome::new();
    let work = tempfile::tempdir().unwrap();
    let examples = examples();
    assert!(examples.len() >= 3, "{} examples", examples.len());
    for (name, text) in examples {
        let path = work.path().join(format!("{name}.pflow.md"));
        std::fs::write(&path, text).unwrap();
        let validated = home.run_args(&["validate", path.to_str().unwrap()]);
        assert_eq!(validated.code, 0, "{name}: {}", validated.stdout);
        let ran = home.run_args(&["run", path.to_str().unwrap(), "--no-repair"]);
        assert_eq!(ran.code, 0, "{name}: {}{}", ran.stdout, ran.stderr);
    }
}

#[test]
fn guide_prints_every_topic_and_refuses_an_unknown_one() {
    let home = TestHome::new();
    let all = home.run_args(&["guide"]);
    for heading in [
        "# pflow-host: workflows for agents",
        "# Batch",
        "# Control flow",
        "# Dry and live",
        "# The fix loop",
    ] {
        assert!(all.stdout.contains(heading), "{heading}");
    }
    let unknown = home.run_args(&["guide", "nope"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("Topics: core, batch"),
        "{}",
        unknown.stderr
    );
}
