//! The `http` capability: send an HTTP request from the host, under the node's time limit and
//! the host's HTTP policy (allowed hosts and schemes, response-size cap).

use crate::abi::{read_u32, read_u8, take_bytes, take_string};
use crate::NodeError;

#[link(wasm_import_module = "pflow:node/http@0.1.0")]
extern "C" {
    // `send: func(request: request) -> result<response, node-error>` with `request` flattened
    // field by field and a pointer to the return area last.
    #[link_name = "send"]
    fn import_send(
        method_ptr: *const u8,
        method_len: usize,
        url_ptr: *const u8,
        url_len: usize,
        headers_ptr: *const [usize; 4],
        headers_len: usize,
        query_ptr: *const [usize; 4],
        query_len: usize,
        body_present: i32,
        body_ptr: *const u8,
        body_len: usize,
        timeout_present: i32,
        timeout_ms: u32,
        retries: i32,
        return_area: *mut u8,
    );
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub timeout_ms: Option<u32>,
    /// Extra attempts after a transient failure (network error, timeout, 5xx).
    pub retries: u8,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    pub attempts: u8,
    /// Names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub duration_us: u32,
}

impl Response {
    /// The first header called `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn pairs(pairs: &[(String, String)]) -> Vec<[usize; 4]> {
    pairs
        .iter()
        .map(|(k, v)| [k.as_ptr() as usize, k.len(), v.as_ptr() as usize, v.len()])
        .collect()
}

/// Sends `request`. Every status is a response; errors are `policy_denied`, `network`,
/// `timeout`, `response_too_large` and `bad_params`.
pub fn send(request: &Request) -> Result<Response, NodeError> {
    let headers = pairs(&request.headers);
    let query = pairs(&request.query);
    let (body_present, body_ptr, body_len) = match &request.body {
        Some(body) => (1, body.as_ptr(), body.len()),
        None => (0, std::ptr::null(), 0),
    };
    let (timeout_present, timeout_ms) = match request.timeout_ms {
        Some(ms) => (1, ms),
        None => (0, 0),
    };
    // result<response, node-error>: discriminant @0, payload @4; node-error is the larger case.
    let mut area = [0u32; 13];
    let base = area.as_mut_ptr() as *mut u8;
    unsafe {
        import_send(
            request.method.as_ptr(),
            request.method.len(),
            request.url.as_ptr(),
            request.url.len(),
            headers.as_ptr(),
            headers.len(),
            query.as_ptr(),
            query.len(),
            body_present,
            body_ptr,
            body_len,
            timeout_present,
            timeout_ms,
            request.retries as i32,
            base,
        );
        let payload = base.add(4);
        if read_u8(base, 0) != 0 {
            return Err(crate::abi::read_node_error(payload));
        }
        // response { status @0 (u16), attempts @2, headers @4, body @12, duration-us @20 }
        let header_array = read_u32(payload, 4) as *mut u8;
        let header_count = read_u32(payload, 8) as usize;
        let headers = (0..header_count)
            .map(|i| {
                let element = header_array.add(i * 16);
                (
                    take_string(
                        read_u32(element, 0) as *mut u8,
                        read_u32(element, 4) as usize,
                    ),
                    take_string(
                        read_u32(element, 8) as *mut u8,
                        read_u32(element, 12) as usize,
                    ),
                )
            })
            .collect();
        crate::abi::free_elements(header_array, header_count, 16);
        Ok(Response {
            status: (read_u32(payload, 0) & 0xffff) as u16,
            attempts: read_u8(payload, 2),
            headers,
            body: take_bytes(
                read_u32(payload, 12) as *mut u8,
                read_u32(payload, 16) as usize,
            ),
            duration_us: read_u32(payload, 20),
        })
    }
}
