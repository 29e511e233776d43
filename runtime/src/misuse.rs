//! Misuse the C ABI cannot report: one line on stderr, then abort.
//!
//! The ABI has no error channel, and continuing after a double completion or
//! a negative reference count would corrupt memory silently. Every check is
//! active in every build, not only in debug builds.

use std::io::Write;

/// Prints `mlir_async_runtime: <call>: <what>` on stderr and aborts.
#[cold]
#[inline(never)]
pub(crate) fn abort_misuse(call: &str, what: &str) -> ! {
    // One write of the whole line, so concurrent aborts do not interleave.
    let line = format!("mlir_async_runtime: {call}: {what}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    std::process::abort();
}

/// Prints one `mlir_async_runtime: <what>` line on stderr (a warning or a
/// report; the runtime goes on).
#[cold]
pub(crate) fn warn(what: &str) {
    let line = format!("mlir_async_runtime: {what}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
