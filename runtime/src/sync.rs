//! Atomics, locks and thread parking: the one place the runtime imports
//! them from.
//!
//! Production code never names `std::sync::atomic` directly, so the `loom`
//! models (built with `RUSTFLAGS="--cfg loom"`) replace the items of this
//! module's root with loom's instrumented versions, as tokio does. Loom
//! runs every model thread on one OS thread, so a blocking wait must park
//! through loom too.
//!
//! [`process`] holds the std versions under every configuration: for
//! process-wide statics (switches read once, probe registries), which need
//! `const` constructors that loom's types lack and which no loom model
//! exercises.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// `std`'s atomics and locks in every build, for process-wide statics.
pub(crate) mod process {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
    pub(crate) use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

    /// Locks `mutex`, ignoring poisoning: nothing in the runtime panics
    /// while holding one of its locks (a panic aborts the process anyway).
    pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `std::thread`'s parking, or loom's under `cfg(loom)`.
pub(crate) mod thread {
    #[cfg(not(loom))]
    pub(crate) use std::thread::{current, park, park_timeout, yield_now, Thread};

    #[cfg(loom)]
    pub(crate) use loom::thread::{current, park, yield_now, Thread};

    /// Loom has no timed park; in a model nothing relies on the timeout
    /// (it only paces diagnostics), so a plain park is equivalent.
    #[cfg(loom)]
    pub(crate) fn park_timeout(_timeout: std::time::Duration) {
        park();
    }
}

/// A cell whose contents are reached through a raw pointer, as
/// `std::cell::UnsafeCell`, with loom's access checks under `cfg(loom)`:
/// there, two accesses that are not ordered by the model's atomics fail
/// the model (a data race on the contents).
#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> UnsafeCell<T> {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a pointer to the contents; the caller of `f`'s
    /// dereference guarantees exclusive access (loom's signature).
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
