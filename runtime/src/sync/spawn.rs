//! Runtime threads start and end outside `fork`.
//!
//! std takes a process-wide lock of its own while a thread starts (before
//! its first line: the stack-overflow handler registers the thread) and
//! while it ends (after its last line: the handler deregisters it). A child
//! forked while one of the parent's threads holds that lock inherits it
//! held, by a thread that does not exist there, and every thread the child
//! starts then blocks in its start forever: the fork-during-destroy
//! lifecycle test's hang under load (issue 27; gdb showed the child's new
//! workers in `stack_overflow::thread_info::set_current_info`).
//!
//! Every runtime thread is started through [`spawn`], which counts it as
//! *in transition* from before the `spawn` call to its first line, and
//! from its last line until a thread-local destructor of its own runs,
//! which is after std deregistered it. The fork handler
//! ([`hold_for_fork`]) waits until no runtime thread is in transition and
//! keeps new transitions from starting until the fork is done. A thread
//! the program starts itself is the program's business.

use std::io;
use std::thread::{Builder, JoinHandle};
use std::time::Duration;

use crate::sync::process::{AtomicBool, AtomicUsize, Ordering};

/// Runtime threads between a spawn and their first line, or between their
/// last line and their exit.
static IN_TRANSITION: AtomicUsize = AtomicUsize::new(0);
/// A fork is under way: no transition may begin.
static FORKING: AtomicBool = AtomicBool::new(false);

/// Waits until no fork is under way, then counts one transition.
fn begin_transition() {
    loop {
        // SeqCst (here, and on the fork side): a Dekker pair. Either this
        // thread sees `FORKING` and backs off, or the forking thread sees
        // the count above zero and waits: never both miss.
        while FORKING.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_micros(50));
        }
        IN_TRANSITION.fetch_add(1, Ordering::SeqCst);
        if !FORKING.load(Ordering::SeqCst) {
            return;
        }
        IN_TRANSITION.fetch_sub(1, Ordering::SeqCst);
    }
}

fn end_transition() {
    IN_TRANSITION.fetch_sub(1, Ordering::SeqCst);
}

/// Ends the exit transition of the thread whose locals it is in: its
/// destructor runs after std's own end-of-thread work.
struct ExitTransition;

impl Drop for ExitTransition {
    fn drop(&mut self) {
        end_transition();
    }
}

thread_local! {
    static EXIT: ExitTransition = const { ExitTransition };
}

/// Starts a runtime thread with `builder`, running `main`, outside any
/// fork (see the module doc).
pub(crate) fn spawn<T: Send + 'static>(builder: Builder, main: impl FnOnce() -> T + Send + 'static) -> io::Result<JoinHandle<T>> {
    begin_transition();
    let spawned = builder.spawn(move || {
        // Started: std's start-of-thread work is done.
        end_transition();
        let result = main();
        begin_transition();
        // Registers the destructor that ends this transition. If the
        // thread's locals are already being destroyed (cannot happen after
        // `main` returns, but cheap to cover), end it here.
        if EXIT.try_with(|_| {}).is_err() {
            end_transition();
        }
        result
    });
    if spawned.is_err() {
        end_transition();
    }
    spawned
}

/// Before `fork`: waits until no runtime thread starts or ends, and keeps
/// them from starting to, until [`release_after_fork`].
pub(crate) fn hold_for_fork() {
    FORKING.store(true, Ordering::SeqCst);
    while IN_TRANSITION.load(Ordering::SeqCst) != 0 {
        std::thread::yield_now();
    }
}

/// After `fork`, in the parent and in the child (where no thread is in
/// transition: the fork waited for that).
pub(crate) fn release_after_fork() {
    FORKING.store(false, Ordering::SeqCst);
}
