//! The validator never panics, whatever JSON (or text) it is given.

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
