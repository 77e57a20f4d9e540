//! `pflow-llm-standin SCRIPT.json [PORT]`: serves a script of replies (a JSON list of
//! [`pflow_llm_standin::Scripted`]) on 127.0.0.1 until killed, for trying the planner without
//! a provider account.

use pflow_llm_standin::{Scripted, StandIn};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(script_path) = args.next() else {
        eprintln!("usage: pflow-llm-standin SCRIPT.json [PORT]");
        std::process::exit(2);
    };
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let script: Vec<Scripted> = match std::fs::read_to_string(&script_path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(script) => script,
        Err(error) => {
            eprintln!("pflow-llm-standin: cannot read {script_path}: {error}");
            std::process::exit(2);
        }
    };
    let standin = match StandIn::start(port, script) {
        Ok(standin) => standin,
        Err(error) => {
            eprintln!("pflow-llm-standin: cannot listen on port {port}: {error}");
            std::process::exit(2);
        }
    };
    println!(
        "ANTHROPIC_BASE_URL={} OPENAI_BASE_URL={}",
        standin.anthropic_url(),
        standin.openai_url()
    );
    loop {
        std::thread::park();
    }
}
