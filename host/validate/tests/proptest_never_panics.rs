//! The validator never panics, whatever JSON (or text) it is given.
//!
//! The second half stands in for a coverage-guided fuzzer (cargo-fuzz needs a nightly toolchain,
//! which this project does not have): the entry points that read untrusted workflows (the IR
//! parser, templates and the validator) never panic, never overflow the stack and agree with
//! each other, on input shaped to hurt: templates nested far past the limit, JSON nested past
//! serde's recursion limit, duplicate keys, and mutated workflows.

use pflow_ir::template::{malformed, nesting_depth, Template, MAX_NESTING};
use pflow_ir::Workflow;
use pflow_validate::{validate, validate_text, NodeCatalog, Port};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

struct Empty;

impl NodeCatalog for Empty {
    fn params(&self, _: &str) -> Option<&[Port]> {
        None
    }
    fn outputs(&self, _: &str) -> Option<&[Port]> {
        None
    }
    fn types(&self) -> Vec<&str> {
        Vec::new()
    }
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        // Strings rich in template syntax.
        "[a-z${}.\\[\\]0-9#:_-]{0,24}".prop_map(Value::String),
        prop_oneof![
            Just("shell"),
            Just("0.1.0"),
            Just("a"),
            Just("b"),
            Just("default"),
            Just("error")
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        let key = prop_oneof![
            "[a-z_]{1,8}",
            prop_oneof![
                Just("ir_version"),
                Just("nodes"),
                Just("edges"),
                Just("inputs"),
                Just("outputs"),
                Just("id"),
                Just("type"),
                Just("params"),
                Just("from"),
                Just("to"),
                Just("action"),
                Just("batch"),
                Just("items"),
                Just("source"),
                Just("start_node"),
                Just("required"),
                Just("default"),
            ]
            .prop_map(str::to_string),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn never_panics_on_arbitrary_json(doc in arbitrary_json()) {
        let report = validate(&doc, &Empty, None);
        prop_assert_eq!(report.valid, report.errors.is_empty());
    }

    #[test]
    fn never_panics_on_near_workflows(nodes in prop::collection::vec(arbitrary_json(), 1..4), edges in arbitrary_json()) {
        let doc = json!({"ir_version": "0.1.0", "nodes": nodes, "edges": edges});
        let _ = validate(&doc, &Empty, Some(&Map::new()));
    }

    #[test]
    fn never_panics_on_arbitrary_text(text in "\\PC{0,64}") {
        let _ = validate_text(&text, &Empty, None);
    }
}

/// Text built from template fragments, nested `depth` deep with a random opener per level.
fn nested_text() -> impl Strategy<Value = String> {
    let opener = prop_oneof![
        Just("${a["),
        Just("${a.b[${"),
        Just("${v:-"),
        Just("$${"),
        Just("${"),
        Just("x${n."),
    ];
    let closer = prop_oneof![Just("]}"), Just("}"), Just("]"), Just(""), Just("}}")];
    (
        0usize..30_000,
        prop::collection::vec(opener, 1..4),
        prop::collection::vec(closer, 1..4),
    )
        .prop_map(|(depth, openers, closers)| {
            let mut text = String::new();
            for level in 0..depth {
                text.push_str(openers[level % openers.len()]);
            }
            text.push_str("x}");
            for level in 0..depth {
                text.push_str(closers[level % closers.len()]);
            }
            text
        })
}

fn workflow_with(command: &str) -> String {
    json!({"ir_version": "0.1.0", "nodes": [{"id": "a", "type": "shell", "params": {"command": command}}]})
        .to_string()
}

/// The same verdict from `validate` and `run`'s parser on whether the text is a readable
/// workflow at all: both refuse what is not JSON, names a key twice, or nests too deep.
fn parser_and_validator_agree(text: &str) -> Result<(), TestCaseError> {
    let parsed = Workflow::from_json(text);
    let report = validate_text(text, &Empty, None);
    prop_assert_eq!(report.valid, report.errors.is_empty());
    if parsed.is_err() {
        // The validator may say more, but never that an unreadable workflow is valid.
        prop_assert!(!report.valid, "run refuses, validate accepts: {:?}", parsed);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn deep_templates_parse_resolve_and_validate_without_overflow(text in nested_text()) {
        let template = Template::parse(&text);
        prop_assert!(template.references().iter().all(|r| nesting_depth(&r.to_string()) <= MAX_NESTING));
        let store: Map<String, Value> = json!({"x": 0, "a": [1], "n": {"b": [2]}, "v": "v"})
            .as_object().unwrap().clone();
        let _ = template.resolve(&store, true);
        let _ = template.resolve(&store, false);
        let _ = malformed(&text);
        let workflow = workflow_with(&text);
        parser_and_validator_agree(&workflow)?;
        if nesting_depth(&text) > MAX_NESTING {
            prop_assert!(Workflow::from_json(&workflow).is_err());
        }
    }

    #[test]
    fn deep_json_is_refused_not_overflowed(depth in 0usize..5_000, object in any::<bool>()) {
        let (open, close) = if object { ("{\"k\":", "}") } else { ("[", "]") };
        let params = format!("{}1{}", open.repeat(depth), close.repeat(depth));
        let text = format!(
            "{{\"ir_version\": \"0.1.0\", \"nodes\": [{{\"id\": \"a\", \"type\": \"shell\", \"params\": {{\"command\": \"x\", \"deep\": {params}}}}}]}}"
        );
        parser_and_validator_agree(&text)?;
    }

    #[test]
    fn duplicate_keys_are_refused_by_both(key in prop_oneof![Just("id"), Just("type"), Just("params"), Just("nodes"), Just("command")]) {
        let text = workflow_with("true");
        let duplicated = text.replacen(&format!("\"{key}\":"), &format!("\"{key}\": null, \"{key}\":"), 1);
        prop_assert!(Workflow::from_json(&duplicated).is_err());
        prop_assert!(!validate_text(duplicated.clone(), &Empty, None).valid);
    }

    #[test]
    fn mutated_workflows_never_panic(cuts in prop::collection::vec((0usize..400, any::<u8>()), 1..6)) {
        let mut bytes = json!({
            "ir_version": "0.1.0",
            "inputs": {"name": {"type": "string", "default": "x"}},
            "nodes": [
                {"id": "a", "type": "shell", "params": {"command": "echo ${name}"}},
                {"id": "b", "type": "http", "params": {"url": "${a.stdout[0].x}"}, "batch": {"items": "${a.stdout}"}}
            ],
            "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a", "action": "error"}],
            "outputs": {"out": {"source": "${b.results[0]}"}}
        })
        .to_string()
        .into_bytes();
        for (at, byte) in cuts {
            let at = at % bytes.len();
            bytes[at] = byte;
        }
        let text = String::from_utf8_lossy(&bytes);
        parser_and_validator_agree(&text)?;
    }
}
