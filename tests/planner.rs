//! The planner end to end: the real binary plans against the LLM stand-in (a local server
//! speaking Anthropic's and OpenAI's wire formats and replaying scripted answers), validates,
//! dry-runs in the sandbox, runs and saves. Every scenario runs against both formats and checks
//! how many calls were made and what the later prompts said.

mod common;
#[path = "common/http_server.rs"]
mod http_server;

use common::{Run, TestHome};
use http_server::TestServer;
use pflow_llm_standin::{Recorded, Reply, Scripted, StandIn};
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Api {
    Anthropic,
    OpenAi,
}

/// `pflow-host` with this home, pointed at `standin` through the provider's own variables.
fn planner_command(home: &TestHome, api: Api, standin: &StandIn) -> Command {
    let mut command = home.command();
    for variable in [
        "PFLOW_MODEL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ] {
        command.env_remove(variable);
    }
    match api {
        Api::Anthropic => command
            .env("ANTHROPIC_BASE_URL", standin.anthropic_url())
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("PFLOW_MODEL", "claude-sonnet-4-5"),
        Api::OpenAi => command
            .env("OPENAI_BASE_URL", standin.openai_url())
            .env("OPENAI_API_KEY", "test-key")
            .env("PFLOW_MODEL", "gpt-4o"),
    };
    command
}

fn plan(home: &TestHome, api: Api, standin: &StandIn, args: &[&str]) -> Run {
    let output = planner_command(home, api, standin)
        .args(args)
        .args(["--output-format", "json"])
        .output()
        .unwrap();
    Run::from(output)
}

fn standin(script: Vec<Scripted>) -> StandIn {
    StandIn::start(0, script).unwrap()
}

fn submit(workflow: Value, params: Value) -> Scripted {
    Reply::Tool {
        input: json!({
            "workflow": workflow,
            "name": "count-words",
            "description": "Counts the words of a text.",
            "params": params,
        }),
    }
    .into()
}

fn count_words(node_type: &str) -> Value {
    json!({
        "inputs": {"text": {"type": "string", "description": "The text"}},
        "nodes": [{"id": "count", "type": node_type, "params": {"command": "wc -w", "stdin": "${text}"}}],
        "outputs": {"words": {"source": "${count.stdout}"}}
    })
}

/// An http node that extracts `path` from the test server's `/json`.
fn fetch_name(path: &str) -> Value {
    json!({
        "inputs": {"url": {"type": "string", "description": "Where the user is"}},
        "nodes": [{"id": "fetch", "type": "http", "params": {"url": "${url}", "extract": {"name": path}}}],
        "outputs": {"name": {"source": "${fetch.extracted.name}"}}
    })
}

fn fetch(path: &str, server: &TestServer, endpoint: &str) -> Scripted {
    Reply::Tool {
        input: json!({
            "workflow": fetch_name(path),
            "name": "user-name",
            "description": "Fetches the user's name.",
            "params": {"url": format!("http://127.0.0.1:{}{endpoint}", server.port)},
        }),
    }
    .into()
}

fn prompts(standin: &StandIn) -> Vec<String> {
    standin.requests().iter().map(Recorded::prompt).collect()
}

fn words(run: &Run) -> String {
    run.report()["run"]["outputs"]["words"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Each scenario once per wire format.
macro_rules! both_apis {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[test]
            fn anthropic() {
                super::$scenario(super::Api::Anthropic)
            }
            #[test]
            fn openai() {
                super::$scenario(super::Api::OpenAi)
            }
        }
    )*};
}

both_apis!(
    success_on_the_first_try,
    a_misspelled_node_type_is_retried_with_the_suggestion,
    three_invalid_answers_fail,
    a_missed_extract_path_is_fixed_at_run_time,
    an_auth_error_is_not_fixable,
    runtime_fixes_run_out,
    an_identical_candidate_is_a_failed_attempt,
    a_runtime_fix_that_retypes_a_node_is_rejected,
    a_rate_limit_is_waited_out,
    an_answer_off_the_schema_is_a_failed_attempt,
    a_saved_workflow_is_reused,
    a_dry_run_writes_nothing,
    ctrl_c_stops_a_slow_answer,
    llm_errors_are_named,
    a_provider_that_does_not_answer_times_out,
);

fn success_on_the_first_try(api: Api) {
    let home = TestHome::new();
    let llm = standin(vec![submit(
        count_words("shell"),
        json!({"text": "one two three"}),
    )]);
    let run = plan(
        &home,
        api,
        &llm,
        &["count the words in 'one two three'", "--yes"],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(words(&run), "3");
    let report = run.report();
    assert_eq!(report["planner"]["llm_calls"], 1);
    assert_eq!(report["planner"]["generation_attempts"], 1);
    assert!(report["planner"]["usage"]["input_tokens"].as_u64().unwrap() > 0);

    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    match api {
        Api::Anthropic => {
            assert_eq!(requests[0].path, "/v1/messages");
            assert_eq!(requests[0].header("x-api-key"), Some("test-key"));
            assert_eq!(
                body["tool_choice"],
                json!({"type": "tool", "name": "submit_workflow"})
            );
            assert_eq!(body["tools"][0]["name"], "submit_workflow");
        }
        Api::OpenAi => {
            assert_eq!(requests[0].path, "/v1/chat/completions");
            assert_eq!(requests[0].header("authorization"), Some("Bearer test-key"));
            assert_eq!(
                body["tool_choice"],
                json!({"type": "function", "function": {"name": "submit_workflow"}})
            );
        }
    }
    let prompt = requests[0].prompt();
    assert!(prompt.contains("count the words in 'one two three'"));
    assert!(
        prompt.contains("### shell"),
        "the catalog lists the node types"
    );
    assert!(
        prompt.contains("$${"),
        "the prompt teaches the shell escape"
    );

    let saved = home.path().join("workflows/count-words.json");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    assert_eq!(saved["ir"]["nodes"][0]["id"], "count");
    assert_eq!(saved["description"], "Counts the words of a text.");
    // The saved file runs as it is.
    let again = home.run_args(&[
        "run",
        home.path()
            .join("workflows/count-words.json")
            .to_str()
            .unwrap(),
        "text=a b",
    ]);
    assert_eq!(
        (again.code, again.stdout.trim()),
        (0, "2"),
        "{}",
        again.stderr
    );

    let traces: Vec<_> = std::fs::read_dir(home.path().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(traces.len(), 1);
    let events: Vec<Value> = std::fs::read_to_string(&traces[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for kind in [
        "llm_request",
        "llm_answer",
        "validation",
        "runtime_validation",
        "route",
    ] {
        assert!(
            events.iter().any(|e| e["event"] == kind),
            "no {kind} in the trace"
        );
    }
}

fn a_misspelled_node_type_is_retried_with_the_suggestion(api: Api) {
    let home = TestHome::new();
    let llm = standin(vec![
        submit(count_words("shel"), json!({"text": "a b"})),
        submit(count_words("shell"), json!({"text": "a b"})),
    ]);
    // Unquoted words are the request too.
    let run = plan(
        &home,
        api,
        &llm,
        &["count", "words", "in", "'a b'", "--yes"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(words(&run), "2");
    let prompts = prompts(&llm);
    assert_eq!(prompts.len(), 2);
    assert!(prompts[0].contains("# The request\n\ncount words in 'a b'\n"));
    assert!(!prompts[0].contains("not accepted"));
    assert!(
        prompts[1].contains("Unknown node type: 'shel'"),
        "{}",
        prompts[1]
    );
    assert!(
        prompts[1].contains("Did you mean: shell?"),
        "{}",
        prompts[1]
    );
    assert!(
        prompts[1].contains("\"type\": \"shel\""),
        "the retry shows the candidate"
    );
}

fn three_invalid_answers_fail(api: Api) {
    let home = TestHome::new();
    let llm = standin(vec![
        submit(count_words("shel"), json!({"text": "a"})),
        submit(count_words("shelll"), json!({"text": "a"})),
        submit(count_words("sh"), json!({"text": "a"})),
    ]);
    let output = planner_command(&home, api, &llm)
        .args(["count words", "--yes"])
        .output()
        .unwrap();
    let run = Run::from(output);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(llm.requests().len(), 3);
    assert!(prompts(&llm)[2].contains("attempt 2 of 3"));
    assert!(
        run.stderr.contains("planning failed after 3 LLM call(s)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("\"type\": \"sh\""),
        "the last candidate is printed"
    );
    assert!(
        run.stderr.contains("Unknown node type: 'sh'"),
        "{}",
        run.stderr
    );
    assert!(!home.path().join("workflows").exists(), "nothing is saved");
}

fn a_missed_extract_path_is_fixed_at_run_time(api: Api) {
    let (home, server) = (TestHome::new(), TestServer::start());
    let llm = standin(vec![
        fetch("$.name", &server, "/json"),
        fetch("$.user.name", &server, "/json"),
    ]);
    let run = plan(&home, api, &llm, &["get the user's name", "--yes"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["run"]["outputs"]["name"], "Ada");
    let report = run.report();
    assert_eq!(report["planner"]["llm_calls"], 2);
    assert_eq!(report["planner"]["runtime_attempts"], 1);
    let prompts = prompts(&llm);
    let fix = &prompts[1];
    assert!(fix.contains("failed when it ran (fix 1 of 3)"), "{fix}");
    assert!(fix.contains("\"category\": \"extraction_error\""), "{fix}");
    assert!(
        fix.contains("\"available\": [\n      \"items\",\n      \"total\",\n      \"user\""),
        "{fix}"
    );
    assert!(
        fix.contains("\"attempted\": [\n      \"name: $.name\""),
        "{fix}"
    );
}

fn an_auth_error_is_not_fixable(api: Api) {
    let (home, server) = (TestHome::new(), TestServer::start());
    let llm = standin(vec![fetch("$.name", &server, "/status/401")]);
    let run = plan(&home, api, &llm, &["get the user's name", "--yes"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(
        llm.requests().len(),
        1,
        "an auth error is not sent back to the model: {}",
        run.stdout
    );
    let report = run.report();
    assert_eq!(report["planner"]["runtime_errors"][0]["category"], "auth");
    assert_eq!(report["planner"]["runtime_errors"][0]["fixable"], false);
}

fn runtime_fixes_run_out(api: Api) {
    let (home, server) = (TestHome::new(), TestServer::start());
    let llm = standin(
        ["$.name", "$.nme", "$.title", "$.label"]
            .iter()
            .map(|path| fetch(path, &server, "/json"))
            .collect(),
    );
    let run = plan(&home, api, &llm, &["get the user's name", "--yes"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(llm.requests().len(), 4, "one draft and three fixes");
    assert_eq!(run.report()["planner"]["runtime_attempts"], 3);
    assert!(prompts(&llm)[3].contains("fix 3 of 3"));
    assert_eq!(
        server
            .received()
            .iter()
            .filter(|r| r["path"] == "/json")
            .count(),
        4,
        "each candidate was dry-run once"
    );
}

fn an_identical_candidate_is_a_failed_attempt(api: Api) {
    let home = TestHome::new();
    let llm = standin(vec![
        submit(count_words("shel"), json!({"text": "a"})),
        submit(count_words("shel"), json!({"text": "a"})),
        submit(count_words("shell"), json!({"text": "a"})),
    ]);
    let run = plan(&home, api, &llm, &["count words", "--yes"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let prompts = prompts(&llm);
    assert_eq!(prompts.len(), 3);
    assert!(
        prompts[2].contains("identical to the one you submitted in answer 1"),
        "{}",
        prompts[2]
    );
    assert_eq!(run.report()["planner"]["generation_attempts"], 3);
}

fn a_runtime_fix_that_retypes_a_node_is_rejected(api: Api) {
    let (home, server) = (TestHome::new(), TestServer::start());
    let mut retyped = fetch_name("$.user.name");
    retyped["nodes"][0]["type"] = json!("shell");
    retyped["nodes"][0]["params"] = json!({"command": "echo Ada"});
    retyped["outputs"]["name"]["source"] = json!("${fetch.stdout}");
    let llm = standin(vec![
        fetch("$.name", &server, "/json"),
        Reply::Tool {
            input: json!({"workflow": retyped, "name": "user-name", "description": "d", "params": {"url": "x"}}),
        }
        .into(),
        fetch("$.user.name", &server, "/json"),
    ]);
    let run = plan(&home, api, &llm, &["get the user's name", "--yes"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["run"]["outputs"]["name"], "Ada");
    let prompts = prompts(&llm);
    assert_eq!(prompts.len(), 3);
    assert!(
        prompts[2].contains("node 'fetch' was retyped from 'http' to 'shell'"),
        "{}",
        prompts[2]
    );
    assert_eq!(
        server
            .received()
            .iter()
            .filter(|r| r["path"] == "/json")
            .count(),
        3,
        "the rejected fix never ran: two dry runs and the real one"
    );
}

fn a_rate_limit_is_waited_out(api: Api) {
    let home = TestHome::new();
    let llm = standin(vec![
        Reply::Error {
            status: 429,
            message: "rate limited".into(),
            retry_after: Some("1".into()),
        }
        .into(),
        submit(count_words("shell"), json!({"text": "a b c d"})),
    ]);
    let started = Instant::now();
    let run = plan(&home, api, &llm, &["count words", "--yes"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retry-after was honoured"
    );
    assert_eq!(words(&run), "4");
    assert_eq!(llm.requests().len(), 2);
    let planner = &run.report()["planner"];
    assert_eq!(
        (
            planner["llm_calls"].as_u64(),
            planner["http_requests"].as_u64()
        ),
        (Some(1), Some(2))
    );
}

fn an_answer_off_the_schema_is_a_failed_attempt(api: Api) {
    let home = TestHome::new();
    let fenced = format!(
        "Here is the workflow:\n\n```json\n{}\n```\n",
        json!({"workflow": count_words("shell"), "name": "count-words", "description": "Counts.", "params": {"text": "x y"}})
    );
    let llm = standin(vec![
        Reply::Tool {
            input: json!({"workflow": "{\"nodes\": []}", "nam": "x"}),
        }
        .into(),
        // A provider that answers in text: the fenced block carries the same object.
        Reply::Text { text: fenced }.into(),
    ]);
    let run = plan(&home, api, &llm, &["count words", "--yes"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(words(&run), "2");
    let prompts = prompts(&llm);
    assert_eq!(prompts.len(), 2);
    assert!(
        prompts[1].contains("did not fit `submit_workflow`"),
        "{}",
        prompts[1]
    );
    assert!(
        prompts[1].contains("unknown field(s) \"nam\""),
        "{}",
        prompts[1]
    );
    assert!(
        prompts[1].contains("\"workflow\" must be a JSON object"),
        "{}",
        prompts[1]
    );
}

fn a_saved_workflow_is_reused(api: Api) {
    let home = TestHome::new();
    std::fs::create_dir_all(home.path().join("workflows")).unwrap();
    let saved = json!({
        "name": "count-words", "description": "Counts the words of a text.",
        "ir": count_words("shell"), "created_at": 1, "updated_at": 1
    });
    std::fs::write(
        home.path().join("workflows/count-words.json"),
        saved.to_string(),
    )
    .unwrap();
    let llm = standin(vec![Reply::Tool {
        input: json!({"reuse": "count-words", "params": {"text": "to be or not"}}),
    }
    .into()]);
    let run = plan(
        &home,
        api,
        &llm,
        &["how many words in 'to be or not'", "--yes"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(words(&run), "4");
    assert_eq!(run.report()["planner"]["reused"], "count-words");
    let prompt = &prompts(&llm)[0];
    assert!(
        prompt.contains("- `count-words`: Counts the words of a text. Inputs: `text` (required)."),
        "{prompt}"
    );
    assert_eq!(
        std::fs::read_dir(home.path().join("workflows"))
            .unwrap()
            .count(),
        1
    );
}

fn a_dry_run_writes_nothing(api: Api) {
    let home = TestHome::new();
    let target = home.path().join("log.txt");
    let workflow = json!({
        "inputs": {"path": {"type": "string", "description": "The file"}},
        "nodes": [{"id": "append", "type": "shell", "params": {"command": "echo line >> \"${path}\""}}]
    });
    let script = || {
        vec![Reply::Tool {
            input: json!({"workflow": workflow, "name": "append-line", "description": "Appends a line.",
                          "params": {"path": target.to_str().unwrap()}}),
        }
        .into()]
    };
    // Without a terminal and without --yes nothing runs.
    let llm = standin(script());
    let run = plan(&home, api, &llm, &["append a line to log.txt"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.report()["ran"], false);
    assert!(!target.exists(), "neither the dry run nor a real run wrote");
    let not_done = run.report()["dry_run"]["not_done"].to_string();
    assert!(
        not_done.contains("log.txt"),
        "the dry run's effect is shown: {not_done}"
    );

    let llm = standin(script());
    let run = plan(&home, api, &llm, &["append a line to log.txt", "--yes"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "line\n");
}

fn ctrl_c_stops_a_slow_answer(api: Api) {
    let home = TestHome::new();
    let llm = standin(vec![Scripted {
        reply: Reply::Text {
            text: "late".into(),
        },
        delay_ms: 30_000,
    }]);
    let mut child = planner_command(&home, api, &llm)
        .args(["count words", "--yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while llm.requests().is_empty() {
        assert!(Instant::now() < deadline, "the request never arrived");
        std::thread::sleep(Duration::from_millis(10));
    }
    let signalled = Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(5),
            "still running after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = signalled.elapsed();
    assert_eq!(status.code(), Some(130));
    assert!(
        took < Duration::from_secs(1),
        "exited {took:?} after Ctrl-C"
    );
    assert_eq!(llm.requests().len(), 1);
}

fn llm_errors_are_named(api: Api) {
    let home = TestHome::new();
    let llm = standin(vec![
        Reply::Refusal {
            text: "I can't help with that.".into(),
        }
        .into(),
        Reply::Error {
            status: 404,
            message: "model: nope".into(),
            retry_after: None,
        }
        .into(),
    ]);
    let run = plan(&home, api, &llm, &["count words", "--yes"]);
    assert_eq!(run.code, 3);
    assert!(
        run.report()["planner"]["errors"][0]
            .as_str()
            .unwrap()
            .contains("refused to answer: I can't help with that."),
        "{}",
        run.stdout
    );
    let run = plan(&home, api, &llm, &["count words", "--yes"]);
    assert_eq!(run.code, 3);
    assert!(
        run.stdout.contains("does not know the model"),
        "{}",
        run.stdout
    );

    let mut missing_key = planner_command(&home, api, &llm);
    missing_key
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY");
    missing_key.env_remove("OPENAI_BASE_URL");
    let run = Run::from(missing_key.args(["count words"]).output().unwrap());
    assert_eq!(run.code, 3);
    let variable = match api {
        Api::Anthropic => "ANTHROPIC_API_KEY",
        Api::OpenAi => "OPENAI_API_KEY",
    };
    assert!(
        run.stderr
            .contains(&format!("needs an API key: set {variable}")),
        "{}",
        run.stderr
    );
}

fn a_provider_that_does_not_answer_times_out(api: Api) {
    let home = TestHome::new();
    home.write_settings(&json!({"llm": {"timeout_seconds": 0.3, "max_retries": 0}}));
    let llm = standin(vec![Scripted {
        reply: Reply::Text {
            text: "late".into(),
        },
        delay_ms: 5_000,
    }]);
    let started = Instant::now();
    let run = plan(&home, api, &llm, &["count words", "--yes"]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the timeout did not hold"
    );
    assert!(
        run.stdout.contains("did not answer within 300ms"),
        "{}",
        run.stdout
    );
}
