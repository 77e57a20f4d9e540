//! Validation of a generated 100-node workflow with 300 templates. Prints the median (the
//! issue's target: at most 1 ms).

use pflow_validate::{validate, NodeCatalog, Port};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ITERATIONS: usize = 2000;

struct Catalog(Vec<Port>, Vec<Port>);

impl NodeCatalog for Catalog {
    fn params(&self, node_type: &str) -> Option<&[Port]> {
        (node_type == "shell").then_some(self.0.as_slice())
    }
    fn outputs(&self, node_type: &str) -> Option<&[Port]> {
        (node_type == "shell").then_some(self.1.as_slice())
    }
    fn types(&self) -> Vec<&str> {
        vec!["shell"]
    }
}

fn port(name: &str, type_name: &str, required: bool) -> Port {
    Port {
        name: name.to_string(),
        type_name: type_name.to_string(),
        description: String::new(),
        required,
        schema: None,
    }
}

/// A chain of 100 shell nodes; each (after the first) uses three templates: the input and two
/// outputs of earlier nodes.
fn workflow() -> Value {
    let nodes: Vec<Value> = (0..100)
        .map(|i| {
            let earlier = if i == 0 { 0 } else { i - 1 };
            let params = if i == 0 {
                json!({"command": "echo ${text} ${text} ${text}"})
            } else {
                json!({
                    "command": format!("echo ${{text}} ${{n{earlier}.stdout}}"),
                    "env": {"CODE": format!("${{n{}.exit_code}}", earlier / 2)}
                })
            };
            json!({"id": format!("n{i}"), "type": "shell", "params": params})
        })
        .collect();
    let edges: Vec<Value> = (1..100)
        .map(|i| json!({"from": format!("n{}", i - 1), "to": format!("n{i}")}))
        .collect();
    json!({
        "ir_version": "0.1.0",
        "inputs": {"text": {"type": "string", "description": "Some text"}},
        "nodes": nodes,
        "edges": edges,
        "outputs": {"last": {"source": "${n99.stdout}"}}
    })
}

fn main() {
    let catalog = Catalog(
        vec![port("command", "string", true), port("env", "dict", false)],
        vec![
            port("stdout", "str", true),
            port("stderr", "str", true),
            port("exit_code", "int", true),
        ],
    );
    let doc = workflow();
    let report = validate(&doc, &catalog, None);
    assert!(report.valid, "{:?}", report.errors.first());
    let mut samples: Vec<Duration> = (0..ITERATIONS)
        .map(|_| {
            let started = Instant::now();
            let report = validate(&doc, &catalog, None);
            let elapsed = started.elapsed();
            assert!(report.valid);
            elapsed
        })
        .collect();
    samples.sort();
    println!(
        "validate_large: 100 nodes, 300 templates: median {:.3} ms (p90 {:.3} ms, n = {ITERATIONS}); target <= 1 ms",
        samples[ITERATIONS / 2].as_secs_f64() * 1e3,
        samples[ITERATIONS * 9 / 10].as_secs_f64() * 1e3,
    );
}
