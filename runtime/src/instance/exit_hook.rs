//! The process-exit hook: registered once per process, it lets the
//! instance drain the tasks still queued when the program exits without
//! calling the destroy hook (`mod.rs` beside this file, `at_exit`).

/// Registers `hook` with `atexit`, once per process.
pub(super) fn install(hook: extern "C" fn()) {
    // The loom models never exit the process through here (`cfg!`, not
    // `#[cfg]`: the handler stays compiled, so nothing goes dead).
    if cfg!(loom) {
        return;
    }
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: registers a plain function with no captured state; the
        // library is linked -z nodelete (build.rs), so its code is still
        // mapped at exit even after a dlclose.
        if unsafe { libc::atexit(hook) } != 0 {
            crate::sync::misuse::warn("cannot register the exit handler: tasks still queued at exit are not drained");
        }
    });
}
