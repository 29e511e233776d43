//! Helpers shared by the runtime's integration tests: Rust closures as
//! coroutine tasks, and a completion latch to wait on from tests.

#![allow(dead_code)]

use std::ffi::c_void;
use std::sync::mpsc;
use std::time::Duration;

/// The `resume` half of a task whose handle is a boxed Rust closure.
unsafe extern "C" fn run_boxed(handle: *mut c_void) {
    // SAFETY: `handle` came from `into_handle` and is resumed once.
    let f = unsafe { Box::from_raw(handle.cast::<Box<dyn FnOnce() + Send>>()) };
    f();
}

/// A `(handle, resume)` pair that runs `f` when resumed.
pub fn task(
    f: impl FnOnce() + Send + 'static,
) -> (*mut c_void, Option<unsafe extern "C" fn(*mut c_void)>) {
    let boxed: Box<Box<dyn FnOnce() + Send>> = Box::new(Box::new(f));
    (Box::into_raw(boxed).cast(), Some(run_boxed))
}

/// A one-shot signal from a task to the test thread.
pub fn signal() -> (mpsc::Sender<()>, mpsc::Receiver<()>) {
    mpsc::channel()
}

pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Waits for `n` signals, failing the test if they do not come in time.
pub fn expect_signals(rx: &mpsc::Receiver<()>, n: usize) {
    for i in 0..n {
        rx.recv_timeout(TIMEOUT)
            .unwrap_or_else(|_| panic!("only {i} of {n} signals arrived"));
    }
}
