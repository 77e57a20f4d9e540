//! Planner overhead: plan (one LLM call to the stand-in, answering at once), validate, dry-run
//! and run for real a five-node shell workflow, save it and trace it, minus the nodes' own
//! time in the dry run and the real run. Prints the median (the target: <= 20 ms), then
//! the LLM calls and tokens of each planner scenario (tokens as the stand-in counts them: a
//! quarter of the characters, close to what providers bill for English and JSON).

use pflow_llm::{Client, LlmConfig, Provider};
use pflow_llm_standin::{Reply, Scripted, StandIn};
use pflow_planner::trace::Trace;
use pflow_planner::{PlanStatus, Planner, WorkflowLibrary};
use pflow_runtime::{Host, PflowHome, Status};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::time::{Duration, Instant};

const ITERATIONS: usize = 40;

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let builtin = repo.join("target/plugins");
    assert!(
        builtin.join("shell.wasm").exists(),
        "run `just plugins` first"
    );
    let home = tempfile::tempdir().unwrap();
    let host = Host::open(PflowHome::at(home.path()), builtin).unwrap();
    let standin = StandIn::start(0, Vec::new()).unwrap();
    let llm = Client::new(LlmConfig {
        provider: Provider::Anthropic,
        model: "claude-sonnet-4-5".into(),
        base_url: standin.anthropic_url(),
        api_key: Some("bench".into()),
        timeout: Duration::from_secs(30),
        max_retries: 0,
        max_retry_wait: Duration::from_secs(1),
    })
    .unwrap();
    let library = WorkflowLibrary::new(home.path().join("workflows"));
    let cancel = pflow_runtime::CancelToken::new();
    let planner = Planner {
        host: &host,
        llm: &llm,
        library: &library,
        cancel: &cancel,
    };

    let once = || {
        standin.push([answer(five_shell_nodes())]);
        let started = Instant::now();
        let mut trace = Trace::create(&home.path().join("traces")).unwrap();
        let shared = planner.plan("shout, reverse and count a word", Map::new(), &mut |e| {
            trace.record(e)
        });
        let output = shared.planner_output.as_ref().unwrap();
        assert_eq!(output.status, PlanStatus::Planned, "{:?}", output.errors);
        let workflow_json = output.workflow.clone().unwrap();
        library
            .save("bench", "d", &workflow_json, Some("request"))
            .unwrap();
        let workflow = pflow_ir::Workflow::from_json(&workflow_json.to_string()).unwrap();
        let report = host
            .executor(&Default::default())
            .run(&workflow, output.execution_params.clone(), &mut |_| {})
            .unwrap();
        let total = started.elapsed();
        assert_eq!(report.status, Status::Succeeded);
        assert_eq!(report.outputs["chars"].as_str().map(str::trim), Some("6"));
        let dry_nodes: f64 = shared
            .runtime_validation
            .as_ref()
            .unwrap()
            .nodes
            .iter()
            .map(|n| n.duration_ms)
            .sum();
        let real_nodes: f64 = report.nodes.iter().map(|n| n.duration_ms).sum();
        total.saturating_sub(Duration::from_secs_f64((dry_nodes + real_nodes) / 1e3))
    };
    for _ in 0..5 {
        once();
    }
    let mut overheads: Vec<Duration> = (0..ITERATIONS).map(|_| once()).collect();
    overheads.sort();
    println!(
        "planner_overhead: plan + validate + dry run + real run + save of 5 shell nodes, beyond \
         the nodes' own time: median {:.2} ms (p90 {:.2} ms, n = {ITERATIONS}); target <= 20 ms",
        overheads[ITERATIONS / 2].as_secs_f64() * 1e3,
        overheads[ITERATIONS * 9 / 10].as_secs_f64() * 1e3,
    );

    println!(
        "\n{:<46} LLM calls  tokens in  tokens out  result",
        "scenario"
    );
    let scenarios: Vec<(&str, Vec<Scripted>)> = vec![
        ("success on the first try", vec![answer(five_shell_nodes())]),
        (
            "misspelled node type, then fixed",
            vec![
                answer(retyped(five_shell_nodes(), "shel")),
                answer(five_shell_nodes()),
            ],
        ),
        (
            "template path misses at run time, fixed",
            vec![answer(missed_path()), answer(five_shell_nodes())],
        ),
        (
            "three invalid answers",
            vec![
                answer(retyped(five_shell_nodes(), "shel")),
                answer(retyped(five_shell_nodes(), "shelll")),
                answer(retyped(five_shell_nodes(), "sh")),
            ],
        ),
        (
            "runtime fixes run out",
            ["total", "sum", "count", "n"]
                .iter()
                .map(|field| answer(missed_path_at(field)))
                .collect(),
        ),
        (
            "an identical candidate, then fixed",
            vec![
                answer(retyped(five_shell_nodes(), "shel")),
                answer(retyped(five_shell_nodes(), "shel")),
                answer(five_shell_nodes()),
            ],
        ),
        (
            "a runtime fix that retypes a node, then fixed",
            vec![
                answer(missed_path()),
                answer(retyped(missed_path(), "http")),
                answer(five_shell_nodes()),
            ],
        ),
        (
            "an answer off the schema, then fixed",
            vec![
                Reply::Tool {
                    input: json!({"workflow": "{}", "nam": "x"}),
                }
                .into(),
                answer(five_shell_nodes()),
            ],
        ),
        (
            "reuse of a saved workflow",
            vec![Reply::Tool {
                input: json!({"reuse": "bench", "params": {"word": "hello"}}),
            }
            .into()],
        ),
    ];
    for (name, script) in scenarios {
        standin.push(script);
        let shared = planner.plan("shout, reverse and count a word", Map::new(), &mut |_| {});
        let output = shared.planner_output.unwrap();
        println!(
            "{name:<46} {:>9}  {:>9}  {:>10}  {:?}",
            output.llm_calls, output.usage.input_tokens, output.usage.output_tokens, output.status
        );
    }
}

fn answer(workflow: Value) -> Scripted {
    Reply::Tool {
        input: json!({
            "workflow": workflow, "name": "shout-reverse-count",
            "description": "Shouts, reverses and counts a word.", "params": {"word": "hello"}
        }),
    }
    .into()
}

fn five_shell_nodes() -> Value {
    json!({
        "inputs": {"word": {"type": "string", "description": "The word"}},
        "nodes": [
            {"id": "say", "type": "shell", "params": {"command": "echo ${word}"}},
            {"id": "shout", "type": "shell", "params": {"command": "tr a-z A-Z", "stdin": "${say.stdout}"}},
            {"id": "reverse", "type": "shell", "params": {"command": "rev", "stdin": "${shout.stdout}"}},
            {"id": "count", "type": "shell", "params": {"command": "wc -c", "stdin": "${reverse.stdout}"}},
            {"id": "show", "type": "shell", "params": {"command": "cat", "stdin": "${count.stdout}"}}
        ],
        "edges": [
            {"from": "say", "to": "shout"}, {"from": "shout", "to": "reverse"},
            {"from": "reverse", "to": "count"}, {"from": "count", "to": "show"}
        ],
        "outputs": {"chars": {"source": "${show.stdout}"}}
    })
}

fn retyped(mut workflow: Value, node_type: &str) -> Value {
    workflow["nodes"][1]["type"] = json!(node_type);
    workflow
}

/// Valid statically, but `${count.stdout.total}` reads into text: a runtime fix.
fn missed_path() -> Value {
    missed_path_at("total")
}

fn missed_path_at(field: &str) -> Value {
    let mut workflow = five_shell_nodes();
    workflow["nodes"][4]["params"]["stdin"] = json!(format!("${{count.stdout.{field}}}"));
    workflow
}
