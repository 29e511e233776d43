//! Misuse the C ABI cannot report: one line on stderr, then abort.
//!
//! The ABI has no error channel, and continuing after a double completion or
//! a negative reference count would corrupt memory silently. Every check is
//! active in every build, not only in debug builds.

/// Prints `mlir_async_runtime: <call>: <what>` on stderr and aborts.
#[cold]
#[inline(never)]
pub(crate) fn abort_misuse(call: &str, what: &str) -> ! {
    // One write of the whole line, so concurrent aborts do not interleave.
    write_stderr(&format!("mlir_async_runtime: {call}: {what}\n"));
    std::process::abort();
}

/// Prints one `mlir_async_runtime: <what>` line on stderr (a warning or a
/// report; the runtime goes on).
#[cold]
pub(crate) fn warn(what: &str) {
    write_stderr(&format!("mlir_async_runtime: {what}\n"));
}

/// Writes `text` to file descriptor 2 with `write(2)`, not through std's
/// stderr, whose lock a thread of the parent may hold at `fork` (a child's
/// warning would then wait forever). One call for a whole line, so lines
/// of concurrent writers do not interleave (pipes keep writes of up to
/// 4 KiB whole).
pub(crate) fn write_stderr(text: &str) {
    let mut rest = text.as_bytes();
    while !rest.is_empty() {
        // SAFETY: writes from a live buffer of `rest.len()` bytes.
        let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return;
        }
        rest = &rest[n as usize..];
    }
}
