//! Process exit without the destroy hook.
//!
//! A runner (mlir-cpu-runner, the JIT harness) calls the destroy hook
//! before it exits; an ahead-of-time compiled program (docs/aot.md) has no
//! runner, and nobody calls it. So the first time a runtime instance starts,
//! this module registers an `atexit` handler that gives such a process the
//! destroy hook's teardown when it exits (`exit`, or a return from `main`):
//! every task still queued or running (work nobody awaited) runs to the end,
//! the workers are joined, the trace and the counters are written and
//! objects still alive are reported, as at destroy. The C++ runtime's
//! static destructor likewise waits for its pool.
//!
//! The handler does nothing when no instance is running (the destroy hook
//! ran, or nothing started one), nor when `exit` is called from a task: that
//! task can never finish, so waiting for it would hang. The observability
//! exit handler ([`crate::observe`]) then writes the trace and counters as
//! recorded so far. `_exit`, `quick_exit`, a fatal signal or an abort run no
//! handler at all.
//!
//! Order: `atexit` handlers run in the reverse order of their registration,
//! so this one, registered when the instance starts, runs before the
//! handlers and static destructors of the libraries the program was linked
//! or started with (the runner utils a task may still call), and before the
//! observability handler, which by then has nothing left to write.

use std::sync::Once;

use crate::scheduler;

static REGISTER: Once = Once::new();

/// A runtime instance started: make sure the exit handler is registered.
pub(crate) fn instance_started() {
    // The loom models never exit the process through here. (`cfg!`, not
    // `#[cfg]`: the handler stays compiled, so nothing goes dead.)
    if cfg!(loom) {
        return;
    }
    REGISTER.call_once(|| {
        // SAFETY: registers a plain function with no captured state; the
        // library is linked -z nodelete (build.rs), so its code is still
        // mapped at exit even if it was dlclose'd.
        unsafe { libc::atexit(at_exit) };
    });
}

extern "C" fn at_exit() {
    scheduler::teardown_at_exit();
}
