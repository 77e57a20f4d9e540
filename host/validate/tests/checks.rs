//! One test per check, with the exact message the LLM and the person get.

use pflow_validate::{
    extract_metadata, route, top_errors, validate, validate_text, Issue, NodeCatalog, Port, Report,
    Route, Severity,
};
use serde_json::{json, Map, Value};

struct Catalog {
    shell: (Vec<Port>, Vec<Port>),
    http: (Vec<Port>, Vec<Port>),
    mcp: (Vec<Port>, Vec<Port>),
}

fn port(name: &str, type_name: &str, required: bool) -> Port {
    Port {
        name: name.to_string(),
        type_name: type_name.to_string(),
        description: format!("the {name}"),
        required,
        schema: None,
    }
}

fn catalog() -> Catalog {
    let mut extracted = port("extracted", "dict", false);
    extracted.schema = Some(json!({"type": "object", "x-keys-from-param": "extract"}));
    let mut weather = port("weather", "dict", true);
    weather.schema = Some(json!({
        "type": "object",
        "properties": {
            "temp": {"type": "number"},
            "days": {"type": "array", "items": {"type": "object", "properties": {"high": {"type": "number"}}}}
        }
    }));
    Catalog {
        shell: (
            vec![
                port("command", "string", true),
                port("stdin", "any", false),
                port("env", "dict", false),
            ],
            vec![
                port("stdout", "str", true),
                port("stderr", "str", true),
                port("exit_code", "int", true),
            ],
        ),
        http: (
            vec![port("url", "string", true), port("extract", "dict", false)],
            vec![
                port("response", "dict|str", true),
                port("status_code", "int", true),
                extracted,
            ],
        ),
        mcp: (
            vec![port("city", "string", true)],
            vec![weather, port("result", "any", false)],
        ),
    }
}

impl NodeCatalog for Catalog {
    fn params(&self, node_type: &str) -> Option<&[Port]> {
        self.ports(node_type).map(|p| p.0.as_slice())
    }
    fn outputs(&self, node_type: &str) -> Option<&[Port]> {
        self.ports(node_type).map(|p| p.1.as_slice())
    }
    fn types(&self) -> Vec<&str> {
        vec!["http", "mcp-weather-get", "shell"]
    }
}

impl Catalog {
    fn ports(&self, node_type: &str) -> Option<&(Vec<Port>, Vec<Port>)> {
        match node_type {
            "shell" => Some(&self.shell),
            "http" => Some(&self.http),
            "mcp-weather-get" => Some(&self.mcp),
            _ => None,
        }
    }
}

fn check(doc: Value) -> Report {
    validate(&doc, &catalog(), None)
}

/// A two-node workflow: `fetch` (http) then `use` (shell) whose command is `command`.
fn pipeline(command: &str) -> Value {
    json!({
        "ir_version": "0.1.0",
        "inputs": {"city": {"type": "string"}},
        "nodes": [
            {"id": "fetch", "type": "http", "params": {"url": "https://api.example.com/${city}", "extract": {"name": "$.name"}}},
            {"id": "use", "type": "shell", "params": {"command": command}}
        ],
        "edges": [{"from": "fetch", "to": "use"}]
    })
}

fn only_error(report: &Report) -> &Issue {
    assert_eq!(report.errors.len(), 1, "{:#?}", report.errors);
    &report.errors[0]
}

#[test]
fn a_valid_multi_node_workflow_passes() {
    let report = check(pipeline(
        "echo ${fetch.extracted.name} ${fetch.status_code} ${fetch.response.items[0].id}",
    ));
    assert!(report.valid, "{:#?}", report.errors);
    assert!(report.warnings.is_empty(), "{:#?}", report.warnings);
}

#[test]
fn empty_inputs_without_templates_pass() {
    let report = check(
        json!({"ir_version": "0.1.0", "inputs": {}, "nodes": [{"id": "a", "type": "shell", "params": {"command": "date"}}]}),
    );
    assert!(report.valid, "{:#?}", report.errors);
}

#[test]
fn unknown_edge_fields_say_use_from_and_to() {
    let mut doc = pipeline("echo ${city}");
    doc["edges"] = json!([{"from_node": "fetch", "to_node": "use"}]);
    let report = check(doc);
    assert_eq!(report.errors.len(), 2);
    assert_eq!(
        report.errors[0].to_string(),
        "Validation error at edges[0].from_node: Edges have no field 'from_node'; use 'from'\nEdges use `from` and `to`: {\"from\": \"a\", \"to\": \"b\"}"
    );
}

#[test]
fn missing_and_mistyped_fields_and_unknown_top_level_fields() {
    let report = check(json!({"nodes": [{"id": "a", "params": {}}], "edges": {}, "name": "x"}));
    let lines: Vec<String> = report
        .errors
        .iter()
        .map(|e| format!("{}: {}", e.path, e.message))
        .collect();
    assert_eq!(
        lines,
        [
            "name: Unknown field 'name'",
            "nodes[0].type: Required field is missing",
            "edges: Must be a list, got an object",
        ]
    );
}

#[test]
fn a_missing_ir_version_is_pflows_default() {
    let mut doc = pipeline("echo ${city}");
    doc.as_object_mut().unwrap().remove("ir_version");
    assert!(check(doc).valid);
}

#[test]
fn ir_version_format() {
    let mut doc = pipeline("echo ${city}");
    doc["ir_version"] = json!("1.0");
    assert_eq!(
        only_error(&check(doc)).to_string(),
        "Validation error at ir_version: '1.0' is not a version of the form MAJOR.MINOR.PATCH\nUse \"0.1.0\""
    );
}

#[test]
fn duplicate_ids_unknown_edge_targets_and_start_node() {
    let doc = json!({
        "ir_version": "0.1.0",
        "start_node": "strat",
        "nodes": [{"id": "start", "type": "shell", "params": {"command": "a"}}, {"id": "start", "type": "shell", "params": {"command": "b"}}],
        "edges": [{"from": "start", "to": "finish"}]
    });
    let lines: Vec<String> = check(doc).errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "Validation error at nodes[1].id: Duplicate node id 'start'\nGive every node a unique id",
            "Validation error at edges[0].to: Node 'finish' does not exist\nNodes: start, start",
            "Validation error at start_node: Node 'strat' does not exist\nDid you mean 'start'? Nodes: start, start",
        ]
    );
}

#[test]
fn unknown_node_type_with_did_you_mean() {
    let doc = json!({"ir_version": "0.1.0", "nodes": [{"id": "a", "type": "htp", "params": {}}]});
    assert_eq!(
        only_error(&check(doc)).to_string(),
        "Validation error at nodes[0].type: Unknown node type: 'htp'\nDid you mean: http? Known types: http, mcp-weather-get, shell"
    );
}

#[test]
fn a_missing_required_param_is_an_error_and_an_unknown_one_a_warning() {
    let doc = json!({"ir_version": "0.1.0", "nodes": [{"id": "a", "type": "shell", "params": {"cmd": "ls"}}]});
    let report = check(doc);
    assert_eq!(
        only_error(&report).message,
        "Node 'a' (type: shell) is missing required parameter 'command' (the command)"
    );
    assert_eq!(report.warnings.len(), 1);
    assert_eq!(
        report.warnings[0].to_string(),
        "Warning at nodes[0].params.cmd: Node type 'shell' has no parameter 'cmd'; it is ignored\nDid you mean 'command'? Parameters: command, stdin, env"
    );
}

#[test]
fn a_template_naming_neither_input_nor_node() {
    assert_eq!(
        only_error(&check(pipeline("echo ${town}"))).to_string(),
        "Validation error at nodes[1].params.command: Template ${town} references 'town', which is neither a declared input nor a node\nDeclare 'town' under inputs, or use a node id. A shell variable is written $town without braces, or $${town}."
    );
    assert_eq!(
        only_error(&check(pipeline("echo ${fetc.response}")))
            .suggestion
            .as_deref(),
        Some("Did you mean 'fetch'? Or declare 'fetc' under inputs.")
    );
}

#[test]
fn an_output_the_node_does_not_write_lists_what_it_does_write() {
    assert_eq!(
        only_error(&check(pipeline("echo ${fetch.respons}"))).to_string(),
        "Validation error at nodes[1].params.command: Node 'fetch' (type: http) does not output 'respons'\n\
         Available outputs from 'fetch':\n  ${fetch.response} (dict|str)\n  ${fetch.status_code} (int)\n  ${fetch.extracted} (dict)\n\
         Did you mean: ${fetch.response}?"
    );
}

#[test]
fn nested_paths_follow_the_declared_structure() {
    let workflow = |template: &str| {
        json!({
            "ir_version": "0.1.0",
            "nodes": [
                {"id": "w", "type": "mcp-weather-get", "params": {"city": "Oslo"}},
                {"id": "say", "type": "shell", "params": {"command": template}}
            ],
            "edges": [{"from": "w", "to": "say"}]
        })
    };
    assert!(check(workflow("echo ${w.weather.days[0].high} ${w.weather.temp}")).valid);
    assert_eq!(
        only_error(&check(workflow("echo ${w.weather.days[0].low}"))).message,
        "Template ${w.weather.days[0].low}: 'w.weather.days[0]' has no field 'low'; it has: high"
    );
    assert_eq!(
        only_error(&check(workflow("echo ${w.weather.days.high}"))).message,
        "Template ${w.weather.days.high}: 'w.weather.days' is a list; use an index such as [0]"
    );
    assert_eq!(
        only_error(&check(workflow("echo ${w.weather[0]}"))).message,
        "Template ${w.weather[0]}: 'w.weather' is an object, not a list"
    );
}

#[test]
fn extracted_keys_come_from_the_extract_param() {
    assert_eq!(
        only_error(&check(pipeline("echo ${fetch.extracted.email}"))).message,
        "Template ${fetch.extracted.email}: 'fetch.extracted' only has the keys given in param 'extract' (name), not 'email'"
    );
}

#[test]
fn paths_into_any_are_a_warning_checked_at_run_time() {
    let doc = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "w", "type": "mcp-weather-get", "params": {"city": "Oslo"}},
            {"id": "say", "type": "shell", "params": {"command": "echo ${w.result.deep.path}"}}
        ],
        "edges": [{"from": "w", "to": "say"}]
    });
    let report = check(doc);
    assert!(report.valid);
    assert_eq!(
        report.warnings[0].message,
        "Template ${w.result.deep.path}: the structure of 'w.result' (any) is not declared; the path is checked when the workflow runs"
    );
}

#[test]
fn paths_into_numbers_are_errors() {
    assert_eq!(
        only_error(&check(pipeline("echo ${fetch.status_code.value}"))).message,
        "Template ${fetch.status_code.value}: 'fetch.status_code' is int, which has no fields or items"
    );
}

#[test]
fn a_reference_to_a_node_that_runs_later() {
    let doc = json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "first", "type": "shell", "params": {"command": "echo ${second.stdout}"}},
            {"id": "second", "type": "shell", "params": {"command": "echo ${first.stdout}"}}
        ],
        "edges": [{"from": "first", "to": "second"}]
    });
    assert_eq!(
        only_error(&check(doc)).to_string(),
        "Validation error at nodes[0].params.command: Template ${second.stdout} in node 'first' uses node 'second', which does not run before it\nAdd an edge path from 'second' to 'first', or take the value from a node that runs earlier"
    );
}

#[test]
fn malformed_templates() {
    assert_eq!(
        only_error(&check(pipeline("echo ${fetch.response"))).message,
        "Malformed template: '${fetch.response' is never closed with '}'"
    );
    assert!(check(pipeline("n=${#arr[@]}; echo ${v:-default} ${city}")).valid);
}

#[test]
fn unused_inputs() {
    let mut doc = pipeline("echo hi");
    doc["inputs"]["limit"] = json!({"type": "integer"});
    doc["nodes"][0]["params"]["url"] = json!("https://api.example.com/");
    assert_eq!(
        only_error(&check(doc)).to_string(),
        "Validation error at inputs: Declared input(s) never used as template variable: city, limit\nUse each input in a node's params as ${name}, or remove it"
    );
}

#[test]
fn required_inputs_without_a_value_when_values_are_given() {
    let doc = pipeline("echo ${city}");
    assert!(validate(&doc, &catalog(), None).valid);
    let given: Map<String, Value> = Map::from_iter([("town".to_string(), json!("Oslo"))]);
    let report = validate(&doc, &catalog(), Some(&given));
    let lines: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "Validation error at inputs.city: Required input 'city' has no value\nGive it as city=... or declare a default",
            "Validation error at inputs: A value is given for 'town' (a string), which is not a declared input",
        ]
    );
}

#[test]
fn cycles() {
    let mut doc = pipeline("echo ${fetch.status_code}");
    doc["edges"] = json!([{"from": "fetch", "to": "use"}, {"from": "use", "to": "fetch"}]);
    assert_eq!(
        only_error(&check(doc)).message,
        "Data flow error: Circular dependency detected involving nodes: fetch, use"
    );
}

#[test]
fn unreachable_nodes() {
    let mut doc = pipeline("echo ${city}");
    doc["edges"] = json!([]);
    assert_eq!(
        only_error(&check(doc)).to_string(),
        "Validation error at nodes[1]: Node 'use' is unreachable: no edge path leads to it from the start node 'fetch'\nThe workflow has no edges: connect the nodes in the order they run, e.g. {\"from\": \"a\", \"to\": \"b\"}"
    );
}

#[test]
fn output_sources_that_do_not_resolve() {
    let mut doc = pipeline("echo ${city}");
    doc["outputs"] =
        json!({"name": {"source": "${fetch.extracted.nom}"}, "out": {"source": "${use.stdout}"}});
    let report = check(doc);
    let error = only_error(&report);
    assert_eq!(error.path, "outputs.name.source");
    assert_eq!(
        error.message,
        "Template ${fetch.extracted.nom}: 'fetch.extracted' only has the keys given in param 'extract' (name), not 'nom'"
    );
}

#[test]
fn invalid_json_is_one_error_with_line_and_column() {
    let report = validate_text("{\n  \"nodes\": [\n}", &catalog(), None);
    assert_eq!(
        only_error(&report).to_string(),
        "Validation error at (document): Invalid JSON at line 3, column 1: expected value"
    );
}

#[test]
fn errors_come_most_important_first_and_the_planner_gets_three_strings() {
    let doc = json!({
        "ir_version": "0.1.0",
        "inputs": {"unused": {"type": "string"}},
        "nodes": [
            {"id": "a", "type": "shell", "params": {"command": "echo ${ghost}"}},
            {"id": "b", "type": "shel", "params": {}},
            {"id": "c", "type": "shell", "params": {"command": "echo ${a.nope}"}}
        ],
        "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}]
    });
    let report = check(doc);
    assert_eq!(report.errors.len(), 4, "{:#?}", report.errors);
    let top = top_errors(&report, 3);
    assert_eq!(top.len(), 3);
    assert!(
        top[0].starts_with("Validation error at nodes[1].type: Unknown node type: 'shel'"),
        "{}",
        top[0]
    );
    assert!(top[1].contains("references 'ghost'"), "{}", top[1]);
    assert!(top[2].contains("does not output 'nope'"), "{}", top[2]);
    for text in &top {
        assert!(
            !text.contains("Issue {") && !text.contains("Some("),
            "a debug dump: {text}"
        );
    }
}

#[test]
fn planner_routing() {
    let valid = check(pipeline("echo ${city}"));
    let invalid = check(pipeline("echo ${town}"));
    assert_eq!(route(Some(&valid), 1), Route::MetadataGeneration);
    assert_eq!(route(Some(&invalid), 1), Route::Retry);
    assert_eq!(route(Some(&invalid), 2), Route::Retry);
    assert_eq!(route(Some(&invalid), 3), Route::Failed);
    assert_eq!(route(None, 0), Route::Failed);
    assert_eq!(
        valid
            .errors
            .iter()
            .filter(|e| e.severity == Severity::Error)
            .count(),
        0
    );
}

#[test]
fn metadata_without_an_llm() {
    let workflow: pflow_ir::Workflow = serde_json::from_value(json!({
        "ir_version": "0.1.0",
        "inputs": {"city": {"type": "string", "description": "Where"}, "days": {"type": "integer", "default": 3}},
        "nodes": [
            {"id": "fetch", "type": "http", "purpose": "fetch the forecast", "params": {"url": "${city}${days}"}},
            {"id": "say", "type": "shell", "purpose": "print it", "params": {"command": "echo"}}
        ],
        "edges": [{"from": "fetch", "to": "say"}],
        "outputs": {"text": {"source": "${say.stdout}", "description": "The forecast"}}
    }))
    .unwrap();
    let metadata = extract_metadata(&workflow, None);
    assert_eq!(metadata.suggested_name, "fetch-say");
    assert_eq!(metadata.description, "Fetch the forecast, then print it.");
    assert_eq!(metadata.inputs.len(), 2);
    assert!(metadata.inputs[0].required && !metadata.inputs[1].required);
    assert_eq!(metadata.outputs[0].description, "The forecast");
    let long = extract_metadata(
        &workflow,
        Some("Get the 3-day weather forecast for any city in the world and summarise it for me please"),
    );
    assert_eq!(
        long.suggested_name,
        "get-the-3-day-weather-forecast-for-any-city-in-the"
    );
    assert!(long.suggested_name.len() <= 50);
}

/// `fetch` as a batch over two cities, then `use` whose command is `command`.
fn batched(command: &str) -> Value {
    let mut doc = pipeline(command);
    doc["nodes"][0]["batch"] = json!({"items": ["${city}", "rome"], "as": "c"});
    doc["nodes"][0]["params"]["url"] = json!("https://api.example.com/${c}");
    doc
}

#[test]
fn a_batch_node_outputs_pflows_batch_fields_and_each_items_outputs() {
    for command in [
        "echo ${fetch.results[0].status_code}",
        "echo ${fetch.results}",
        "echo ${fetch.count} ${fetch.success_count} ${fetch.error_count} ${fetch.errors}",
    ] {
        let report = check(batched(command));
        assert!(report.valid, "{command}: {:?}", report.errors);
    }
}

#[test]
fn a_batch_nodes_outputs_are_checked_per_item() {
    let report = check(batched("echo ${fetch.results[0].status}"));
    let issue = only_error(&report);
    assert!(
        issue
            .message
            .contains("${fetch.results[0].status_code} (int)"),
        "{}",
        issue.message
    );
    assert_eq!(
        issue.suggestion.as_deref(),
        Some("Did you mean: ${fetch.results[0].status_code}?")
    );
    let report = check(batched("echo ${fetch.status_code}"));
    let issue = only_error(&report);
    assert!(
        issue
            .message
            .starts_with("Node 'fetch' runs as a batch and does not output 'status_code'"),
        "{}",
        issue.message
    );
    assert_eq!(
        issue.suggestion.as_deref(),
        Some("One item's 'status_code' is ${fetch.results[0].status_code}")
    );
    let report = check(batched("echo ${fetch.results.status_code}"));
    assert!(only_error(&report)
        .message
        .contains("use an index such as [0]"));
}

#[test]
fn shape_errors_do_not_hide_the_rest_of_the_report() {
    let report = check(json!({
        "ir_version": "0.1.0",
        "nodes": [
            {"id": "a", "type": "shel", "params": {"command": "echo hi"}},
            {"id": "b", "type": "shell", "params": {"command": "echo ${a.stdout} ${ghost.x}"}, "surprise": 1}
        ],
        "edges": [{"from_node": "a", "to_node": "b"}]
    }));
    let paths: Vec<&str> = report.errors.iter().map(|i| i.path.as_str()).collect();
    // The shape (an unknown field, edges written from_node/to_node) and, in the same report,
    // the unknown node type and the template to nowhere; the edge is read as meant, so no
    // "unreachable" noise.
    assert_eq!(
        paths,
        [
            "nodes[1].surprise",
            "edges[0].from_node",
            "edges[0].to_node",
            "nodes[0].type",
            "nodes[1].params.command"
        ],
        "{report:#?}"
    );
}

#[test]
fn an_approval_gate_is_refused_rather_than_skipped() {
    let mut doc = pipeline("echo hi");
    doc["nodes"][0]["approval"] = json!("required");
    let report = check(doc);
    let issue = only_error(&report);
    assert_eq!(issue.path, "nodes[0].approval");
    assert!(
        issue.message.contains("does not run yet"),
        "{}",
        issue.message
    );
}
