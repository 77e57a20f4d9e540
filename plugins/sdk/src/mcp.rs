//! The `mcp` capability: call a tool of a configured MCP server through the host.

use crate::abi::{read_node_error, read_u32, read_u8, take_string};
use crate::NodeError;

#[link(wasm_import_module = "pflow:node/mcp@0.1.0")]
extern "C" {
    // `call: func(call: tool-call) -> result<tool-result, node-error>` with `tool-call`
    // flattened field by field and a pointer to the return area last.
    #[link_name = "call"]
    fn import_call(
        server_ptr: *const u8,
        server_len: usize,
        tool_ptr: *const u8,
        tool_len: usize,
        arguments_ptr: *const u8,
        arguments_len: usize,
        timeout_present: i32,
        timeout_ms: u32,
        return_area: *mut u8,
    );
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The content blocks as a JSON list.
    pub content: String,
    /// `structuredContent` as JSON, when the tool returned one.
    pub structured: Option<String>,
    pub is_error: bool,
}

/// Calls `tool` on `server` with `arguments` (a JSON object as text).
pub fn call(
    server: &str,
    tool: &str,
    arguments: &str,
    timeout_ms: Option<u32>,
) -> Result<ToolResult, NodeError> {
    let (timeout_present, timeout) = match timeout_ms {
        Some(ms) => (1, ms),
        None => (0, 0),
    };
    let mut area = [0u32; 13];
    let base = area.as_mut_ptr() as *mut u8;
    unsafe {
        import_call(
            server.as_ptr(),
            server.len(),
            tool.as_ptr(),
            tool.len(),
            arguments.as_ptr(),
            arguments.len(),
            timeout_present,
            timeout,
            base,
        );
        let payload = base.add(4);
        if read_u8(base, 0) != 0 {
            return Err(read_node_error(payload));
        }
        // tool-result { content @0, structured: option<json> @8, is-error @20 }
        Ok(ToolResult {
            content: take_string(
                read_u32(payload, 0) as *mut u8,
                read_u32(payload, 4) as usize,
            ),
            structured: if read_u8(payload, 8) == 0 {
                None
            } else {
                Some(take_string(
                    read_u32(payload, 12) as *mut u8,
                    read_u32(payload, 16) as usize,
                ))
            },
            is_error: read_u8(payload, 20) != 0,
        })
    }
}
