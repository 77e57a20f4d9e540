//! `pflow-host find "query"`: the saved workflows that match, best first, ranked locally
//! (BM25; no LLM and no engine needed).

use crate::OutputFormat;
use anyhow::Result;
use clap::Args;
use pflow_planner::library::WorkflowLibrary;
use pflow_runtime::home::PflowHome;
use serde_json::json;

#[derive(Args)]
pub struct FindArgs {
    /// What the workflow should do, in a few words.
    query: String,
    /// At most this many matches.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output_format: OutputFormat,
}

pub fn run(home: &PflowHome, args: FindArgs) -> Result<u8> {
    let library = WorkflowLibrary::new(home.root().join("workflows"));
    let matches: Vec<_> = library
        .find(&args.query)
        .into_iter()
        .take(args.limit)
        .collect();
    if args.output_format == OutputFormat::Json {
        let list: Vec<_> = matches
            .iter()
            .map(|(saved, score)| {
                json!({
                    "name": saved.name,
                    "description": saved.description,
                    "score": (score * 1000.0).round() / 1000.0,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(0);
    }
    if matches.is_empty() {
        eprintln!("No saved workflow matches '{}'.", args.query);
        return Ok(0);
    }
    let width = matches.iter().map(|(s, _)| s.name.len()).max().unwrap_or(0);
    for (saved, score) in &matches {
        println!("{:width$}  {score:5.2}  {}", saved.name, saved.description);
    }
    Ok(0)
}
