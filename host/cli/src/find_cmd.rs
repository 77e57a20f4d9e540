//! `pflow-host find "query"`: the saved workflows that match, best first, ranked locally
//! (BM25; no LLM and no engine needed).

use crate::OutputFormat;
use anyhow::Result;
use clap::Args;
use pflow_runtime::home::PflowHome;
use serde_json::{json, Value};

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

/// The saved workflows that match `query`, best first, as `find --output-format json` and the
/// MCP tool give them.
pub fn matches(home: &PflowHome, query: &str, limit: usize) -> Vec<Value> {
    crate::library_cmd::library(home)
        .find(query)
        .into_iter()
        .take(limit)
        .map(|found| {
            json!({
                "name": found.name,
                "description": found.description,
                "score": (found.score * 1000.0).round() / 1000.0,
            })
        })
        .collect()
}

pub fn run(home: &PflowHome, args: FindArgs) -> Result<u8> {
    let matches = matches(home, &args.query, args.limit);
    if args.output_format == OutputFormat::Json {
        outln!("{}", serde_json::to_string_pretty(&matches)?);
        return Ok(0);
    }
    if matches.is_empty() {
        eprintln!("No saved workflow matches '{}'.", args.query);
        return Ok(0);
    }
    let name = |m: &Value| m["name"].as_str().unwrap_or_default().to_string();
    let width = matches.iter().map(|m| name(m).len()).max().unwrap_or(0);
    for m in &matches {
        outln!(
            "{:width$}  {:5.2}  {}",
            name(m),
            m["score"].as_f64().unwrap_or_default(),
            m["description"].as_str().unwrap_or_default()
        );
    }
    Ok(0)
}
