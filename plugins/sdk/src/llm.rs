//! The `llm` capability: one completion through the host's configured provider.

use crate::abi::{read_node_error, read_u32, read_u8, take_string};
use crate::{NodeError, Value};

#[link(wasm_import_module = "pflow:node/llm@0.1.0")]
extern "C" {
    // `complete: func(request: json) -> result<json, node-error>`.
    #[link_name = "complete"]
    fn import_complete(request_ptr: *const u8, request_len: usize, return_area: *mut u8);
}

/// Sends `request` (see the WIT for its fields) and returns the answer object.
pub fn complete(request: &Value) -> Result<Value, NodeError> {
    let request = request.to_string();
    let mut area = [0u32; 13];
    let base = area.as_mut_ptr() as *mut u8;
    let text = unsafe {
        import_complete(request.as_ptr(), request.len(), base);
        let payload = base.add(4);
        if read_u8(base, 0) != 0 {
            return Err(read_node_error(payload));
        }
        take_string(
            read_u32(payload, 0) as *mut u8,
            read_u32(payload, 4) as usize,
        )
    };
    serde_json::from_str(&text)
        .map_err(|e| NodeError::new("bad_output", format!("The host's answer is not JSON: {}", e)))
}
