//! Thin entry point; the harness lives in the library part.

fn main() {
    std::process::exit(jit_harness::main_with_args(std::env::args_os()));
}

/// The process's `pthread_create`: libc's, with an alternate signal stack
/// for every new thread, so that a stack overflow on a thread that a
/// runtime library creates (Rust std's or C++'s) is still reported. The
/// executable exports it (build.rs), so the dynamic loader binds every
/// library's `pthread_create` to it; see `jit_harness::crash::threads`.
///
/// # Safety
/// The contract of `pthread_create(3)`.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: jit_harness::crash::threads::StartRoutine,
    arg: *mut std::ffi::c_void,
) -> libc::c_int {
    // SAFETY: the caller's promise, passed on.
    unsafe { jit_harness::crash::threads::create(thread, attr, routine, arg) }
}
