//! `pflow-llm-standin SCRIPT.json [PORT]` serves a script of replies (a JSON list of
//! [`pflow_llm_standin::Scripted`]) on 127.0.0.1 until killed.
//!
//! `pflow-llm-standin SCRIPT.json -- COMMAND [ARGS...]` serves it while COMMAND runs, with
//! `ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL` and placeholder API keys pointing COMMAND at it, and
//! exits with COMMAND's code: a way to try the planner without a provider account.

use pflow_llm_standin::{Scripted, StandIn};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (ours, command) = match args.iter().position(|a| a == "--") {
        Some(split) => (&args[..split], Some(&args[split + 1..])),
        None => (&args[..], None),
    };
    let Some(script_path) = ours.first() else {
        fail("usage: pflow-llm-standin SCRIPT.json [PORT | -- COMMAND ARGS...]");
    };
    let port: u16 = ours.get(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    let script: Vec<Scripted> = std::fs::read_to_string(script_path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
        .unwrap_or_else(|error| fail(&format!("cannot read {script_path}: {error}")));
    let standin = StandIn::start(port, script)
        .unwrap_or_else(|error| fail(&format!("cannot listen on port {port}: {error}")));
    match command {
        Some([program, rest @ ..]) => {
            let status = std::process::Command::new(program)
                .args(rest)
                .env("ANTHROPIC_BASE_URL", standin.anthropic_url())
                .env("OPENAI_BASE_URL", standin.openai_url())
                .env("ANTHROPIC_API_KEY", "stand-in")
                .env("OPENAI_API_KEY", "stand-in")
                .status()
                .unwrap_or_else(|error| fail(&format!("cannot run {program}: {error}")));
            std::process::exit(status.code().unwrap_or(1));
        }
        Some([]) => fail("nothing to run after --"),
        None => {
            println!(
                "ANTHROPIC_BASE_URL={} OPENAI_BASE_URL={}",
                standin.anthropic_url(),
                standin.openai_url()
            );
            loop {
                std::thread::park();
            }
        }
    }
}

fn fail(message: &str) -> ! {
    eprintln!("pflow-llm-standin: {message}");
    std::process::exit(2);
}
