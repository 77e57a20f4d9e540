//! The `llm` node against the LLM stand-in, which speaks both providers' real wire formats:
//! text and structured answers, usage, retries, a missing configuration, and that no key
//! reaches the node.

mod common;

use common::{Run, TestHome};
use pflow_llm_standin::{Reply, Scripted, StandIn};
use serde_json::{json, Value};

#[derive(Clone, Copy)]
enum Api {
    Anthropic,
    OpenAi,
}

/// `run` of `workflow` with the stand-in as the model's provider.
fn run_with(home: &TestHome, llm: &StandIn, api: Api, workflow: &Value, inputs: &[&str]) -> Run {
    let path = home.workflow("llm.json", workflow);
    let mut command = home.command();
    match api {
        Api::Anthropic => command
            .env("ANTHROPIC_BASE_URL", llm.anthropic_url())
            .env("ANTHROPIC_API_KEY", "sk-test-secret")
            .env("PFLOW_MODEL", "claude-sonnet-4-5"),
        Api::OpenAi => command
            .env("OPENAI_BASE_URL", llm.openai_url())
            .env("OPENAI_API_KEY", "sk-test-secret")
            .env("PFLOW_MODEL", "gpt-4o"),
    };
    let output = command
        .arg("run")
        .arg(&path)
        .args(inputs)
        .args(["--output-format", "json", "--no-repair"])
        .output()
        .unwrap();
    Run::from(output)
}

fn summarize() -> Value {
    json!({
        "inputs": {"text": {"type": "string"}},
        "nodes": [{"id": "summarize", "type": "llm",
                   "params": {"prompt": "Summarize: ${text}", "system": "Be brief."}}],
        "outputs": {"summary": {"source": "${summarize.response}"},
                    "usage": {"source": "${summarize.llm_usage}"}}
    })
}

#[test]
fn a_text_answer_in_both_wire_formats() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let home = TestHome::new();
        let llm = StandIn::start(
            0,
            vec![Reply::Text {
                text: "Short.".into(),
            }
            .into()],
        )
        .unwrap();
        let run = run_with(&home, &llm, api, &summarize(), &["text=a long story"]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        let outputs = &run.report()["outputs"];
        assert_eq!(outputs["summary"], "Short.");
        assert!(
            outputs["usage"]["input_tokens"].as_u64().unwrap() > 0,
            "{outputs}"
        );
        let requests = llm.requests();
        assert_eq!(requests.len(), 1);
        let prompt = requests[0].prompt();
        assert!(prompt.contains("Summarize: a long story"), "{prompt}");
        assert!(prompt.contains("Be brief."), "{prompt}");
        // The key went to the provider, and nowhere into the node's outputs.
        let auth = requests[0]
            .header("x-api-key")
            .or(requests[0].header("authorization"))
            .unwrap_or_default();
        assert!(auth.contains("sk-test-secret"));
        assert!(!run.stdout.contains("sk-test-secret"));
    }
}

#[test]
fn an_output_schema_gives_structured_json() {
    let home = TestHome::new();
    let answer = json!({"sentiment": "positive", "score": 0.9});
    let llm = StandIn::start(
        0,
        vec![Reply::Tool {
            input: answer.clone(),
        }
        .into()],
    )
    .unwrap();
    let workflow = json!({
        "nodes": [{"id": "rate", "type": "llm", "params": {
            "prompt": "Rate: great product",
            "output_schema": {"type": "object", "properties": {
                "sentiment": {"type": "string"}, "score": {"type": "number"}},
                "required": ["sentiment", "score"]}}},
            {"id": "use", "type": "shell", "params": {"command": "echo ${rate.response.sentiment}"}}],
        "edges": [{"from": "rate", "to": "use"}],
        "outputs": {"rating": {"source": "${rate.response}"}, "word": {"source": "${use.stdout}"}}
    });
    let run = run_with(&home, &llm, Api::Anthropic, &workflow, &[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.report()["outputs"]["rating"], answer);
    assert_eq!(run.report()["outputs"]["word"], "positive");
    // The schema was sent as the forced tool's input schema.
    let body = &llm.requests()[0].body;
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["sentiment", "score"])
    );
}

#[test]
fn a_rate_limit_is_retried_and_a_missing_model_is_a_clear_error() {
    let home = TestHome::new();
    let llm = StandIn::start(
        0,
        vec![
            Reply::Error {
                status: 429,
                message: "slow down".into(),
                retry_after: Some("0".into()),
            }
            .into(),
            Scripted::from(Reply::Text {
                text: "Done.".into(),
            }),
        ],
    )
    .unwrap();
    let run = run_with(&home, &llm, Api::OpenAi, &summarize(), &["text=x"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.report()["outputs"]["summary"], "Done.");
    assert_eq!(llm.requests().len(), 2);

    let unconfigured = home.run_json(&summarize(), &["text=x"]);
    assert_eq!(unconfigured.code, 1);
    let error = &unconfigured.report()["error"];
    assert_eq!(error["category"], "llm_unavailable", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("PFLOW_MODEL"),
        "{error}"
    );
}

/// A batch of prompts in parallel, each answered in order of the items.
#[test]
fn a_parallel_batch_of_prompts() {
    let home = TestHome::new();
    let replies: Vec<Scripted> = (0..4)
        .map(|_| Reply::Text { text: "ok".into() }.into())
        .collect();
    let llm = StandIn::start(0, replies).unwrap();
    let workflow = json!({
        "nodes": [{"id": "ask", "type": "llm", "params": {"prompt": "Say ${item}"},
                   "batch": {"items": ["a", "b", "c", "d"], "parallel": true}}],
        "outputs": {"prompts": {"source": "${ask.results}"}}
    });
    let run = run_with(&home, &llm, Api::Anthropic, &workflow, &[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let report = run.report();
    let prompts: Vec<&str> = report["outputs"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["prompt"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["Say a", "Say b", "Say c", "Say d"]);
}
