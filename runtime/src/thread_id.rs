//! `mlirAsyncRuntimePrintCurrentThreadId`, written through C stdio.
//!
//! The runner utilities (`printI64`, `printMemref*`, …) print through C
//! `stdout`; writing through Rust's own buffered stdout would reorder lines
//! when stdout is a pipe. So this goes through `printf` and `fflush`, as the
//! C++ runtime's `std::cout << … << std::endl` does.

/// Prints `Current thread id: <id>` on C stdout; the id is the thread's
/// `pthread_t`, like `std::this_thread::get_id()` prints it.
pub(crate) fn print_current_thread_id() {
    // SAFETY: `pthread_self` has no preconditions.
    let id = unsafe { libc::pthread_self() } as libc::c_ulong;
    // SAFETY: a NUL-terminated format whose one conversion matches the one
    // `c_ulong` argument; `stdout` is C's stream, flushed like `std::endl`.
    unsafe {
        libc::printf(c"Current thread id: %lu\n".as_ptr(), id);
        libc::fflush(std::ptr::null_mut());
    }
}
