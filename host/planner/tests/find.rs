//! `find` ranks the intended workflow first among 50 saved ones, for 10 different queries.

use pflow_planner::library::{SavedWorkflow, WorkflowLibrary};
use serde_json::json;

/// (name, description, node types, input names)
const SAVED: &[(&str, &str, &[&str], &[&str])] = &[
    (
        "fetch-github-issues",
        "List the open issues of a GitHub repository",
        &["http"],
        &["repo", "token"],
    ),
    (
        "summarize-pull-request",
        "Summarize the changes of a pull request for a reviewer",
        &["http", "llm"],
        &["repo", "number"],
    ),
    (
        "resize-images",
        "Resize every PNG and JPEG in a folder to a given width",
        &["shell"],
        &["folder", "width"],
    ),
    (
        "backup-database",
        "Dump a Postgres database and upload the dump to S3",
        &["shell"],
        &["database_url", "bucket"],
    ),
    (
        "translate-document",
        "Translate a markdown document into another language",
        &["read-file", "llm", "write-file"],
        &["path", "language"],
    ),
    (
        "weekly-sales-report",
        "Build a weekly sales report from the orders CSV and email it",
        &["read-file", "llm"],
        &["csv_path", "recipient"],
    ),
    (
        "slack-standup-digest",
        "Collect yesterday's Slack messages and post a standup digest",
        &["mcp-slack-list-messages", "llm"],
        &["channel"],
    ),
    (
        "check-website-uptime",
        "Check that a list of URLs answer with status 200",
        &["http"],
        &["urls"],
    ),
    (
        "count-words",
        "Count the words of a text file, most frequent first",
        &["shell"],
        &["file", "top"],
    ),
    (
        "rotate-logs",
        "Compress and rotate log files older than a week",
        &["shell"],
        &["log_dir"],
    ),
];

fn filler(i: usize) -> (String, String) {
    const TOPICS: &[&str] = &[
        "calendar",
        "invoice",
        "weather",
        "stock",
        "recipe",
        "podcast",
        "tweet",
        "ticket",
        "playlist",
        "expense",
        "contract",
        "survey",
        "newsletter",
        "inventory",
        "shipment",
        "timesheet",
        "meeting",
        "budget",
        "lead",
        "forecast",
    ];
    const VERBS: &[&str] = &["export", "archive", "sync", "tag", "clean"];
    let topic = TOPICS[i % TOPICS.len()];
    let verb = VERBS[i % VERBS.len()];
    (
        format!("{verb}-{topic}-{i}"),
        format!("{} {topic} entries from the {topic} service", verb),
    )
}

#[test]
fn the_intended_workflow_ranks_first_among_fifty() {
    let dir = tempfile::tempdir().unwrap();
    let library = WorkflowLibrary::new(dir.path());
    let mut all: Vec<(String, String, Vec<String>, Vec<String>)> = SAVED
        .iter()
        .map(|(n, d, t, i)| {
            (
                n.to_string(),
                d.to_string(),
                t.iter().map(|s| s.to_string()).collect(),
                i.iter().map(|s| s.to_string()).collect(),
            )
        })
        .collect();
    for i in 0..40 {
        let (name, description) = filler(i);
        all.push((name, description, vec!["shell".into()], vec!["id".into()]));
    }
    for (name, description, types, inputs) in &all {
        let nodes: Vec<_> = types
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"id": format!("n{i}"), "type": t}))
            .collect();
        let inputs: serde_json::Map<String, serde_json::Value> = inputs
            .iter()
            .map(|i| (i.clone(), json!({"type": "string"})))
            .collect();
        let saved = SavedWorkflow {
            name: name.clone(),
            description: description.clone(),
            ir: json!({"inputs": inputs, "nodes": nodes}),
            ..Default::default()
        };
        std::fs::write(
            library.path_of(name),
            serde_json::to_string(&saved).unwrap(),
        )
        .unwrap();
    }
    assert_eq!(library.list().len(), 50);
    for (query, intended) in [
        ("show me open github issues", "fetch-github-issues"),
        ("summary of a PR", "summarize-pull-request"),
        ("make my photos smaller", "resize-images"),
        ("postgres backup to s3", "backup-database"),
        ("translate this markdown to french", "translate-document"),
        ("sales numbers every week by email", "weekly-sales-report"),
        ("standup summary from slack", "slack-standup-digest"),
        ("is my site up", "check-website-uptime"),
        ("word frequency of a file", "count-words"),
        ("old logs compress", "rotate-logs"),
    ] {
        let found = library.find(query);
        let first = found.first().map(|f| f.name.as_str());
        assert_eq!(
            first,
            Some(intended),
            "query '{query}': {:?}",
            found
                .iter()
                .map(|f| (f.name.clone(), f.score))
                .take(3)
                .collect::<Vec<_>>()
        );
    }
}

/// The index behind `find` follows the library: new, changed, deleted and hand-edited
/// workflows are found as they are now, and a corrupt index is rebuilt.
#[test]
fn find_sees_every_change_to_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let library = WorkflowLibrary::new(dir.path());
    let ir = json!({"nodes": [{"id": "a", "type": "shell", "params": {"command": "true"}}]});
    let names = |query: &str| -> Vec<String> {
        library
            .find(query)
            .into_iter()
            .map(|found| found.name)
            .collect()
    };
    library
        .save(
            "backup-photos",
            "Copy the photo folder to the NAS",
            &ir,
            None,
        )
        .unwrap();
    assert_eq!(names("photo backup"), ["backup-photos"]);
    assert!(dir.path().join(".meta/search-index.json").exists());

    library
        .save("media-job", "Make pictures smaller", &ir, None)
        .unwrap();
    assert_eq!(names("shrink pictures"), ["media-job"]);

    // Replaced with another description (and edited by hand, in place, after that).
    library.delete("media-job").unwrap();
    library
        .save("media-job", "Convert videos to mp4", &ir, None)
        .unwrap();
    assert_eq!(names("shrink pictures"), Vec::<String>::new());
    assert_eq!(names("videos"), ["media-job"]);
    let path = dir.path().join("media-job.json");
    let edited = std::fs::read_to_string(&path).unwrap().replace(
        "Convert videos to mp4",
        "Crop screenshots, then upload them",
    );
    std::fs::write(&path, edited).unwrap();
    assert_eq!(names("screenshots"), ["media-job"]);

    library.delete("backup-photos").unwrap();
    assert_eq!(names("photo backup"), Vec::<String>::new());

    std::fs::write(dir.path().join(".meta/search-index.json"), "{not json").unwrap();
    assert_eq!(names("screenshots"), ["media-job"]);
}
