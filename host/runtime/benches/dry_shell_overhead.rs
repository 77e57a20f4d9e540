//! What a dry run costs per shell node: the same one-node workflow (`true`) run live and dry,
//! alternately. The difference is the sandbox's set-up and teardown: bubblewrap with every
//! namespace, the overlay mounted and read back, the scratch directory removed. Prints the
//! medians (the target: at most 15 ms per node).

mod support;

use pflow_runtime::dry::DryRun;
use pflow_runtime::registry::Origin;
use pflow_runtime::{Executor, Status};
use serde_json::{json, Map};
use std::sync::Arc;

const ITERATIONS: usize = 200;

fn main() {
    let support::Loaded {
        sandbox,
        registry,
        cache: _cache,
    } = support::load_plugins("plugins", "shell.wasm", Origin::Builtin);
    let workflow: pflow_ir::Workflow = serde_json::from_value(json!({
        "ir_version": "0.1.0",
        "nodes": [{"id": "sh", "type": "shell", "params": {"command": "true"}}]
    }))
    .unwrap();
    let run = |dry: Option<Arc<DryRun>>| {
        let executor = Executor {
            mcp_allowed: Vec::new(),
            dry: dry.clone(),
            ..support::executor(&sandbox, &registry)
        };
        let report = executor
            .run(&workflow, Map::new(), &mut |_| {})
            .expect("the workflow starts");
        assert_eq!(report.status, Status::Succeeded, "{:?}", report.error);
        if let Some(dry) = dry {
            assert!(
                dry.skipped().is_empty(),
                "the dry run did not use the overlay launcher: {:?}",
                dry.skipped()
            );
        }
    };
    let (live, dry) = support::interleaved_medians(
        20,
        ITERATIONS,
        || run(None),
        || run(Some(Arc::new(DryRun::default()))),
    );
    println!(
        "dry_shell_overhead: one shell node (`true`), live {:.2} ms, dry {:.2} ms: the dry-run \
         sandbox adds {:.2} ms per node (median, n = {ITERATIONS}); target <= 15 ms",
        support::ms(live),
        support::ms(dry),
        support::ms(dry.saturating_sub(live)),
    );
}
