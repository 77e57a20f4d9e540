//! The command's output on stdout (see the `out!` and `outln!` macros in `main.rs`).

use std::io::Write;

/// Writes `text` (and a newline) to stdout. When the reader has gone away, the process exits 0
/// at once: there is nobody left to tell anything. Any other write error is said on stderr.
pub fn write(text: std::fmt::Arguments<'_>, newline: bool) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(text).and_then(|()| {
        if newline {
            stdout.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    match written {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(error) => eprintln!("error: cannot write the output: {error}"),
    }
}
