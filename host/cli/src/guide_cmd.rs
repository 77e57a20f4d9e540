//! `pflow-host guide [topic ...]`: concise instructions for an agent (and a person), kept in
//! the binary. `tests/guide.rs` checks that every example workflow in them validates.

use crate::exit;
use anyhow::Result;
use clap::Args;

/// (topic, text), in the order a newcomer needs them.
pub const TOPICS: &[(&str, &str)] = &[
    ("core", include_str!("../guide/core.md")),
    ("batch", include_str!("../guide/batch.md")),
    ("control-flow", include_str!("../guide/control-flow.md")),
    ("dry-and-live", include_str!("../guide/dry-and-live.md")),
    ("fix-loop", include_str!("../guide/fix-loop.md")),
];

#[derive(Args)]
pub struct GuideArgs {
    /// Topics to print (all of them when none is given).
    topics: Vec<String>,
}

pub fn run(args: GuideArgs) -> Result<u8> {
    let names: Vec<&str> = TOPICS.iter().map(|(name, _)| *name).collect();
    let chosen: Vec<&str> = if args.topics.is_empty() {
        names.clone()
    } else {
        let mut chosen = Vec::new();
        for topic in &args.topics {
            match TOPICS.iter().find(|(name, _)| name == topic) {
                Some((name, _)) => chosen.push(*name),
                None => {
                    eprintln!(
                        "error: no guide topic '{topic}'. Topics: {}",
                        names.join(", ")
                    );
                    return Ok(exit::CANNOT_START);
                }
            }
        }
        chosen
    };
    let texts: Vec<&str> = chosen
        .iter()
        .filter_map(|topic| TOPICS.iter().find(|(name, _)| name == topic))
        .map(|(_, text)| *text)
        .collect();
    outln!("{}", texts.join("\n---\n\n"));
    Ok(0)
}
