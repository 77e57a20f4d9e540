//! The `log` capability: diagnostics that the host writes to its log, tagged with the node id.

#[link(wasm_import_module = "pflow:node/log@0.1.0")]
extern "C" {
    #[link_name = "log"]
    fn import_log(level: i32, message: *const u8, len: usize);
}

/// Severity, in the order of the WIT enum `level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Trace = 0,
    Debug = 1,
    Info = 2,
    Warn = 3,
    Error = 4,
}

pub fn log(level: Level, message: &str) {
    unsafe { import_log(level as i32, message.as_ptr(), message.len()) }
}

pub fn debug(message: &str) {
    log(Level::Debug, message)
}

pub fn info(message: &str) {
    log(Level::Info, message)
}

pub fn warn(message: &str) {
    log(Level::Warn, message)
}
