//! The `fs` capability: files on the host, under the host's file policy (and, in a dry run,
//! in its scratch layer).

use crate::abi::{read_node_error, read_u32, read_u8, take_bytes};
use crate::NodeError;

#[link(wasm_import_module = "pflow:node/fs@0.1.0")]
extern "C" {
    // Strings and lists flatten to (pointer, length); `bool` to an i32; the result goes to the
    // return area passed last: a discriminant at 0, the payload at 4.
    #[link_name = "read"]
    fn import_read(path_ptr: *const u8, path_len: usize, return_area: *mut u8);
    #[link_name = "write"]
    fn import_write(
        path_ptr: *const u8,
        path_len: usize,
        contents_ptr: *const u8,
        contents_len: usize,
        append: i32,
        return_area: *mut u8,
    );
    #[link_name = "copy"]
    fn import_copy(
        source_ptr: *const u8,
        source_len: usize,
        destination_ptr: *const u8,
        destination_len: usize,
        overwrite: i32,
        return_area: *mut u8,
    );
    #[link_name = "rename"]
    fn import_rename(
        source_ptr: *const u8,
        source_len: usize,
        destination_ptr: *const u8,
        destination_len: usize,
        overwrite: i32,
        return_area: *mut u8,
    );
    #[link_name = "remove"]
    fn import_remove(path_ptr: *const u8, path_len: usize, return_area: *mut u8);
}

/// Room for `result<_, node-error>` and `result<list<u8>, node-error>`: the discriminant and
/// a 48-byte `node-error`.
type Area = [u32; 13];

/// The error of a unit result, if any.
unsafe fn unit_result(area: &Area) -> Result<(), NodeError> {
    let base = area.as_ptr() as *const u8;
    if read_u8(base, 0) == 0 {
        Ok(())
    } else {
        Err(read_node_error(base.add(4)))
    }
}

pub fn read(path: &str) -> Result<Vec<u8>, NodeError> {
    let mut area: Area = [0; 13];
    let base = area.as_mut_ptr() as *mut u8;
    unsafe {
        import_read(path.as_ptr(), path.len(), base);
        let payload = base.add(4);
        if read_u8(base, 0) != 0 {
            return Err(read_node_error(payload));
        }
        Ok(take_bytes(
            read_u32(payload, 0) as *mut u8,
            read_u32(payload, 4) as usize,
        ))
    }
}

pub fn write(path: &str, contents: &[u8], append: bool) -> Result<(), NodeError> {
    let mut area: Area = [0; 13];
    unsafe {
        import_write(
            path.as_ptr(),
            path.len(),
            contents.as_ptr(),
            contents.len(),
            append as i32,
            area.as_mut_ptr() as *mut u8,
        );
        unit_result(&area)
    }
}

/// `copy` and `rename` take the same arguments.
type TwoPaths = unsafe extern "C" fn(*const u8, usize, *const u8, usize, i32, *mut u8);

fn two_paths(
    import: TwoPaths,
    source: &str,
    destination: &str,
    overwrite: bool,
) -> Result<(), NodeError> {
    let mut area: Area = [0; 13];
    unsafe {
        import(
            source.as_ptr(),
            source.len(),
            destination.as_ptr(),
            destination.len(),
            overwrite as i32,
            area.as_mut_ptr() as *mut u8,
        );
        unit_result(&area)
    }
}

pub fn copy(source: &str, destination: &str, overwrite: bool) -> Result<(), NodeError> {
    two_paths(import_copy, source, destination, overwrite)
}

pub fn rename(source: &str, destination: &str, overwrite: bool) -> Result<(), NodeError> {
    two_paths(import_rename, source, destination, overwrite)
}

pub fn remove(path: &str) -> Result<(), NodeError> {
    let mut area: Area = [0; 13];
    unsafe {
        import_remove(path.as_ptr(), path.len(), area.as_mut_ptr() as *mut u8);
        unit_result(&area)
    }
}
