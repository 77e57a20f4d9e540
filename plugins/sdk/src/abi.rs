//! The component model's canonical ABI for the `pflow:node` world, written by hand because
//! `wit-bindgen`'s guest code needs a far newer rustc than the wasm toolchain here has.
//!
//! Layouts follow the canonical ABI: records are laid out field by field, each field aligned to
//! its own alignment; strings and lists are an (i32 pointer, i32 length) pair; `option` and
//! `result` are a u8 discriminant followed by the payload at the payload's alignment. Functions
//! whose flattened results exceed one value return (exports) or receive (imports) a pointer to a
//! "return area" holding the result in memory. Offsets below are commented with the WIT they
//! come from; the host's typed bindings check every one of them at run time.

use crate::{NodeError, NodeSpec, Outcome, Params, Port};
use std::alloc::{self, Layout};

/// `cabi_realloc`: the host allocates guest memory through this to pass strings and lists in.
///
/// # Safety
/// Called by the canonical ABI with a pointer this allocator returned (or null) and its layout.
pub unsafe fn realloc(old: *mut u8, old_size: usize, align: usize, new_size: usize) -> *mut u8 {
    if new_size == 0 {
        return align as *mut u8;
    }
    let ptr = if old.is_null() || old_size == 0 {
        alloc::alloc(Layout::from_size_align_unchecked(new_size, align))
    } else {
        alloc::realloc(
            old,
            Layout::from_size_align_unchecked(old_size, align),
            new_size,
        )
    };
    if ptr.is_null() {
        alloc::handle_alloc_error(Layout::from_size_align_unchecked(new_size, align));
    }
    ptr
}

extern "C" {
    /// Synthesised by the linker: runs the static constructors of wasi-libc and friends.
    fn __wasm_call_ctors();
}

static mut INITIALIZED: bool = false;

/// Runs the static constructors once, from `describe` or `run`.
///
/// Without an explicit call, wasm-ld wraps *every* export, `cabi_realloc` included, in a call
/// to the constructors (and destructors). wasi-libc's constructors call WASI (to read the
/// environment), and the component model forbids calling out of an instance while the host is
/// in `cabi_realloc`, so such a module traps with "cannot leave component instance" as soon
/// as the host passes it a string. Referencing the constructors here stops the wrapping.
unsafe fn initialize_once() {
    if !INITIALIZED {
        INITIALIZED = true;
        __wasm_call_ctors();
    }
}

/// Room for the largest result an export returns: `result<node-output, node-error>` is
/// 4 bytes of discriminant plus a 48-byte `node-error`.
#[repr(C, align(4))]
struct ReturnArea([u8; 52]);

static mut RETURN_AREA: ReturnArea = ReturnArea([0; 52]);

pub(crate) unsafe fn write_u8(base: *mut u8, offset: usize, value: u8) {
    *base.add(offset) = value;
}

pub(crate) unsafe fn write_u32(base: *mut u8, offset: usize, value: u32) {
    (base.add(offset) as *mut u32).write_unaligned(value);
}

pub(crate) unsafe fn read_u8(base: *const u8, offset: usize) -> u8 {
    *base.add(offset)
}

pub(crate) unsafe fn read_u32(base: *const u8, offset: usize) -> u32 {
    (base.add(offset) as *const u32).read_unaligned()
}

/// Hands `bytes` to the host: the memory stays valid for the rest of this (one-shot) instance.
unsafe fn write_leaked_bytes(base: *mut u8, offset: usize, bytes: Vec<u8>) {
    let boxed = bytes.into_boxed_slice();
    let len = boxed.len();
    let ptr = Box::into_raw(boxed) as *mut u8;
    write_u32(base, offset, ptr as u32);
    write_u32(base, offset + 4, len as u32);
}

unsafe fn write_string(base: *mut u8, offset: usize, value: String) {
    write_leaked_bytes(base, offset, value.into_bytes());
}

/// A zeroed array of `count` elements of `size` bytes, aligned to 4, owned by the host from now.
unsafe fn alloc_elements(count: usize, size: usize) -> *mut u8 {
    if count == 0 {
        return 4 as *mut u8;
    }
    let ptr = realloc(std::ptr::null_mut(), 0, 4, count * size);
    std::ptr::write_bytes(ptr, 0, count * size);
    ptr
}

/// `list<string>`: an array of 8-byte (pointer, length) elements.
unsafe fn write_string_list(base: *mut u8, offset: usize, values: Vec<String>) {
    let array = alloc_elements(values.len(), 8);
    let count = values.len();
    for (i, value) in values.into_iter().enumerate() {
        write_string(array, i * 8, value);
    }
    write_u32(base, offset, array as u32);
    write_u32(base, offset + 4, count as u32);
}

/// `option<string>`: discriminant at +0, string at +4.
unsafe fn write_option_string(base: *mut u8, offset: usize, value: Option<String>) {
    match value {
        None => write_u8(base, offset, 0),
        Some(value) => {
            write_u8(base, offset, 1);
            write_string(base, offset + 4, value);
        }
    }
}

/// `list<port>`; a port is { name @0, type @8, description @16, required @24,
/// schema: option<json> @28 }, 40 bytes.
unsafe fn write_ports(base: *mut u8, offset: usize, ports: Vec<Port>) {
    let array = alloc_elements(ports.len(), 40);
    let count = ports.len();
    for (i, port) in ports.into_iter().enumerate() {
        let element = array.add(i * 40);
        write_string(element, 0, port.name);
        write_string(element, 8, port.type_name);
        write_string(element, 16, port.description);
        write_u8(element, 24, port.required as u8);
        write_option_string(element, 28, port.schema.map(|s| s.to_string()));
    }
    write_u32(base, offset, array as u32);
    write_u32(base, offset + 4, count as u32);
}

/// `node-error` { category @0, message @8, fixable @16, attempted @20, available @28,
/// sample @36 }, 48 bytes.
unsafe fn write_node_error(base: *mut u8, error: NodeError) {
    write_string(base, 0, error.category);
    write_string(base, 8, error.message);
    write_u8(base, 16, error.fixable as u8);
    write_string_list(base, 20, error.attempted);
    write_string_list(base, 28, error.available);
    write_option_string(base, 36, error.sample);
}

/// The `describe` export: `node-spec` { name @0, description @8, params @16, outputs @24 }.
///
/// # Safety
/// Called once per instance by the host through the component's `describe` export.
pub unsafe fn export_describe(node_describe: fn() -> NodeSpec) -> *mut u8 {
    initialize_once();
    let spec = node_describe();
    let area = RETURN_AREA.0.as_mut_ptr();
    write_string(area, 0, spec.name);
    write_string(area, 8, spec.description);
    write_ports(area, 16, spec.params);
    write_ports(area, 24, spec.outputs);
    area
}

/// The `run` export: takes the params JSON the host wrote into our memory and returns
/// `result<node-output, node-error>`: discriminant @0, payload @4, where `node-output` is
/// { outputs @0, action: option<string> @8 }.
///
/// # Safety
/// `params`/`len` must be a string the host allocated through `cabi_realloc`.
pub unsafe fn export_run(
    params: *mut u8,
    len: usize,
    node_run: fn(Params) -> Result<Outcome, NodeError>,
) -> *mut u8 {
    initialize_once();
    let text = take_string(params, len);
    let result = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(serde_json::Value::Object(map)) => node_run(Params::new(map)),
        Ok(other) => Err(NodeError::bad_params(format!(
            "Params must be a JSON object, got: {}",
            other
        ))),
        Err(e) => Err(NodeError::bad_params(format!(
            "Params are not valid JSON: {}",
            e
        ))),
    };
    let area = RETURN_AREA.0.as_mut_ptr();
    match result {
        Ok(outcome) => {
            write_u8(area, 0, 0);
            write_string(area, 4, outputs_json(outcome.outputs, outcome.raw_outputs));
            write_option_string(area, 12, outcome.action);
        }
        Err(error) => {
            write_u8(area, 0, 1);
            write_node_error(area.add(4), error);
        }
    }
    area
}

/// The outputs object, with the raw (already JSON) outputs spliced in as they are.
fn outputs_json(outputs: serde_json::Map<String, serde_json::Value>, raw: Vec<(String, String)>) -> String {
    let mut text = serde_json::Value::Object(outputs).to_string();
    for (key, json) in raw {
        text.pop(); // the closing brace
        if text.len() > 1 {
            text.push(',');
        }
        text.push_str(&serde_json::Value::String(key).to_string());
        text.push(':');
        text.push_str(&json);
        text.push('}');
    }
    text
}

/// Takes ownership of bytes the host allocated through `cabi_realloc` with alignment 1.
pub(crate) unsafe fn take_bytes(ptr: *mut u8, len: usize) -> Vec<u8> {
    if len == 0 {
        return Vec::new();
    }
    Vec::from_raw_parts(ptr, len, len)
}

/// Takes ownership of a string the host wrote; the canonical ABI guarantees valid UTF-8.
pub(crate) unsafe fn take_string(ptr: *mut u8, len: usize) -> String {
    String::from_utf8_unchecked(take_bytes(ptr, len))
}

unsafe fn read_string(base: *const u8, offset: usize) -> String {
    take_string(
        read_u32(base, offset) as *mut u8,
        read_u32(base, offset + 4) as usize,
    )
}

unsafe fn read_string_list(base: *const u8, offset: usize) -> Vec<String> {
    let array = read_u32(base, offset) as *mut u8;
    let count = read_u32(base, offset + 4) as usize;
    let values = (0..count).map(|i| read_string(array, i * 8)).collect();
    free_elements(array, count, 8);
    values
}

/// Frees an array of `count` elements of `size` bytes the host allocated (alignment 4).
pub(crate) unsafe fn free_elements(array: *mut u8, count: usize, size: usize) {
    if count > 0 {
        alloc::dealloc(array, Layout::from_size_align_unchecked(count * size, 4));
    }
}

/// Reads a `node-error` the host returned from an import (layout as in `write_node_error`).
pub(crate) unsafe fn read_node_error(base: *const u8) -> NodeError {
    NodeError {
        category: read_string(base, 0),
        message: read_string(base, 8),
        fixable: read_u8(base, 16) != 0,
        attempted: read_string_list(base, 20),
        available: read_string_list(base, 28),
        sample: if read_u8(base, 36) == 0 {
            None
        } else {
            Some(read_string(base, 40))
        },
    }
}
