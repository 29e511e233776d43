//! `mlirAsyncRuntimePrintCurrentThreadId`, written through C stdio.
//!
//! The runner utilities (`printI64`, `printMemref*`, …) print through C
//! `stdout`; writing through Rust's own buffered stdout would reorder lines
//! when stdout is a pipe. So this goes through `printf` and `fflush`, as the
//! C++ runtime's `std::cout << … << std::endl` does.

use crate::instance;

/// Prints `Current thread id: <id>` on C stdout. The id is the thread's
/// `pthread_t`, like `std::this_thread::get_id()` prints it; under a
/// deterministic schedule it is the thread's logical number instead (the
/// order in which threads joined the schedule), the same in every replay.
pub(super) fn print_current_thread_id() {
    let id = instance::logical_thread_id().unwrap_or_else(|| {
        // SAFETY: `pthread_self` has no preconditions.
        unsafe { libc::pthread_self() as u64 }
    });
    // SAFETY: a NUL-terminated format whose one conversion matches the one
    // `c_ulong` argument; `stdout` is C's stream, flushed like `std::endl`.
    unsafe {
        libc::printf(c"Current thread id: %lu\n".as_ptr(), id as libc::c_ulong);
        libc::fflush(std::ptr::null_mut());
    }
}
