//! A plugin that attacks its sandbox in the way its `attack` param names. The host must contain
//! every attack as a node error of its own category and carry on.
//!
//! attacks: `loop` (burns CPU forever), `memory` (allocates until refused), `recursion`
//! (overflows the stack), `panic`, `huge_output` (returns `size_mb` MiB of JSON), `bad_json`
//! (returns outputs that are not JSON), `spawn` (uses the process capability, which a user
//! plugin is not granted by default), `environment` and `files` (look for the host's
//! environment variables and file system, which a node does not get).

use pflow_sdk::process::Command;
use pflow_sdk::{json, Node, NodeError, NodeSpec, Outcome, Params};

struct Hostile;

impl Node for Hostile {
    fn describe() -> NodeSpec {
        NodeSpec::new("hostile", "Attacks its sandbox (tests only)")
            .param("attack", "string", "Which attack to run", true)
            .param("size_mb", "int", "Output size for huge_output", false)
            .output("result", "any", "Whatever the attack returns", false)
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        match params.str("attack")? {
            "loop" => {
                let mut counter = 0u64;
                loop {
                    counter = unsafe { std::ptr::read_volatile(&counter) }.wrapping_add(1);
                }
            }
            "memory" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                }
            }
            "recursion" => Ok(json!({ "result": recurse(u64::MAX) }).into()),
            "panic" => panic!("hostile plugin panicked on purpose"),
            "huge_output" => {
                let size = params.f64_opt("size_mb")?.unwrap_or(32.0) as usize;
                Ok(json!({ "result": "x".repeat(size << 20) }).into())
            }
            // Reading the environment links wasi-libc's environ constructor, which calls WASI:
            // the SDK must run it from `run`, not let wasm-ld wrap `cabi_realloc` with it.
            "environment" => {
                let names: Vec<String> = std::env::vars().map(|(name, _)| name).collect();
                Ok(json!({ "result": names }).into())
            }
            "files" => Ok(json!({ "result": std::fs::read_dir("/").is_ok() }).into()),
            "spawn" => {
                let output = Command::new("true").run()?;
                Ok(json!({ "result": output.exit_code }).into())
            }
            other => Err(NodeError::bad_params(format!("unknown attack '{}'", other))),
        }
    }
}

/// Not a tail call (the result is multiplied, then added to), with a frame the optimiser
/// cannot drop, so every level really takes stack.
fn recurse(depth: u64) -> u64 {
    if depth == 0 {
        return 0;
    }
    let mut frame = [0u8; 256];
    unsafe { std::ptr::write_volatile(&mut frame[depth as usize % 256], depth as u8) };
    let below = recurse(depth - 1);
    below
        .wrapping_mul(3)
        .wrapping_add(unsafe { std::ptr::read_volatile(&frame[7]) } as u64)
}

// `bad_json` needs to return something the SDK would never produce, so this plugin writes its
// own `run` export and hands every other attack to the SDK's.
pflow_sdk::export_node_describe_only!(Hostile);

/// result<node-output, node-error> return area: ok, outputs = "{not json", action = none.
#[repr(C, align(4))]
struct ReturnArea([u8; 52]);
static mut BAD_JSON_AREA: ReturnArea = ReturnArea([0; 52]);
static NOT_JSON: &[u8] = b"{not json";

#[no_mangle]
pub unsafe extern "C" fn run(params: *mut u8, len: usize) -> *mut u8 {
    let text = std::slice::from_raw_parts(params, len);
    if text.windows(8).any(|w| w == b"bad_json") {
        let area = BAD_JSON_AREA.0.as_mut_ptr();
        *area = 0;
        (area.add(4) as *mut u32).write_unaligned(NOT_JSON.as_ptr() as u32);
        (area.add(8) as *mut u32).write_unaligned(NOT_JSON.len() as u32);
        *area.add(12) = 0;
        return area;
    }
    pflow_sdk::abi::export_run(params, len, <Hostile as Node>::run)
}
