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

pub(crate) mod asymmetric;
pub(crate) mod backoff;
pub(crate) mod fenv;
pub(crate) mod misuse;
pub(crate) mod mutation;
pub(crate) mod spawn;
pub(crate) mod tls;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(all(not(loom), not(mlir_async_tsan)))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// Under ThreadSanitizer (`make sanitize-tsan`), whose std is not
/// instrumented, a std mutex is invisible to it and every access under one
/// is reported as a race: the lock is one built from this crate's own
/// (instrumented) atomics instead.
#[cfg(all(not(loom), mlir_async_tsan))]
pub(crate) use fork_safe::{ForkSafeGuard as MutexGuard, ForkSafeLock as Mutex};

/// Locks `mutex` (std's, or loom's in a model), ignoring poisoning: nothing
/// in the runtime panics while holding one of its locks (a panic aborts the
/// process anyway).
#[cfg(not(mlir_async_tsan))]
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks `mutex` (see the TSan `Mutex` above).
#[cfg(mlir_async_tsan)]
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock()
}

/// `std`'s atomics and locks in every build, for process-wide statics.
pub(crate) mod process {
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
    pub(crate) use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

    pub(crate) use super::fork_safe::{ForkSafeGuard, ForkSafeLock};

    /// Locks `mutex`, ignoring poisoning: nothing in the runtime panics
    /// while holding one of its locks (a panic aborts the process anyway).
    pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The one lock for process-wide state that a forked child needs: the
/// `fork` handlers take every such lock before `fork` and release it after,
/// in the parent and in the child, so the child never inherits one held by
/// a thread that does not exist there (a `std` mutex held by another thread
/// at `fork` stays locked in the child forever). Guarded sections are
/// short; a waiter spins, then yields, then sleeps briefly.
mod fork_safe {
    use std::cell::UnsafeCell;
    use std::ops::{Deref, DerefMut};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    pub(crate) struct ForkSafeLock<T> {
        locked: AtomicBool,
        data: UnsafeCell<T>,
    }

    // SAFETY: `data` is only reached with `locked` held (a guard, or the
    // fork handlers' hold), so it moves between threads as under a mutex.
    unsafe impl<T: Send> Sync for ForkSafeLock<T> {}

    /// Holds a [`ForkSafeLock`] until dropped.
    pub(crate) struct ForkSafeGuard<'a, T> {
        lock: &'a ForkSafeLock<T>,
    }

    impl<T> ForkSafeLock<T> {
        pub(crate) const fn new(data: T) -> ForkSafeLock<T> {
            ForkSafeLock { locked: AtomicBool::new(false), data: UnsafeCell::new(data) }
        }

        fn acquire(&self) {
            let mut round = 0u32;
            // Acquire: pairs with `release`'s Release, so the holder sees
            // the previous holder's writes to `data`.
            while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
                round += 1;
                if round < 16 {
                    std::hint::spin_loop();
                } else if round < 64 {
                    std::thread::yield_now();
                } else {
                    // A long hold (a destroy in progress): do not burn a core.
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }

        fn release(&self) {
            self.locked.store(false, Ordering::Release);
        }

        pub(crate) fn lock(&self) -> ForkSafeGuard<'_, T> {
            self.acquire();
            ForkSafeGuard { lock: self }
        }

        /// The lock, if it is free now.
        pub(crate) fn try_lock(&self) -> Option<ForkSafeGuard<'_, T>> {
            // Acquire: as in `acquire`.
            self.locked
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .ok()
                .map(|_| ForkSafeGuard { lock: self })
        }

        /// Takes the lock in a `fork` handler, without a guard: released
        /// by [`ForkSafeLock::release_after_fork`] in the parent and in the
        /// child.
        pub(crate) fn hold_for_fork(&self) {
            self.acquire();
        }

        /// Releases a [`ForkSafeLock::hold_for_fork`].
        pub(crate) fn release_after_fork(&self) {
            self.release();
        }

        /// The data, while this thread holds the lock for `fork`.
        ///
        /// # Safety
        /// The caller took [`ForkSafeLock::hold_for_fork`] and has not
        /// released it, and uses no other reference to the data meanwhile.
        #[allow(clippy::mut_from_ref)]
        pub(crate) unsafe fn held_for_fork(&self) -> &mut T {
            // SAFETY: per the contract, this thread holds the lock.
            unsafe { &mut *self.data.get() }
        }

        /// In a forked child: frees the lock whoever held it. Only for a
        /// lock whose data stays consistent when its holder stops at any
        /// point (no data, or data the child resets): the holder is a
        /// thread of the parent that does not exist in the child.
        pub(crate) fn reset_in_child(&self) {
            self.release();
        }
    }

    impl<T> Deref for ForkSafeGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            // SAFETY: the guard holds the lock.
            unsafe { &*self.lock.data.get() }
        }
    }

    impl<T> DerefMut for ForkSafeGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            // SAFETY: the guard holds the lock.
            unsafe { &mut *self.lock.data.get() }
        }
    }

    impl<T> Drop for ForkSafeGuard<'_, T> {
        fn drop(&mut self) {
            self.lock.release();
        }
    }
}

/// `std::thread`'s parking, or loom's under `cfg(loom)`.
pub(crate) mod thread {
    #[cfg(not(loom))]
    pub(crate) use std::thread::{current, park, park_timeout, yield_now, Builder, JoinHandle, Thread};

    #[cfg(loom)]
    pub(crate) use loom::thread::{current, park, yield_now, Builder, JoinHandle, Thread};

    /// Loom has no timed park; in a model nothing relies on the timeout
    /// (it only paces diagnostics), so a plain park is equivalent.
    #[cfg(loom)]
    pub(crate) fn park_timeout(_timeout: std::time::Duration) {
        park();
    }
}

/// A lock and condition variable for a thread that sleeps until it is
/// told (the idle signal): std's, or loom's under `cfg(loom)`, where a std
/// condvar would block the one OS thread loom runs a model on. Std's under
/// TSan too, as before: only the lock built for TSan (`fork_safe`) differs
/// there, and a condvar cannot wait on it.
pub(crate) mod signal {
    #[cfg(not(loom))]
    pub(crate) use super::process::{lock, Condvar, Mutex};

    #[cfg(loom)]
    pub(crate) use super::lock;
    #[cfg(loom)]
    pub(crate) use loom::sync::{Condvar, Mutex};
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

/// `UnsafeCell` with loom's access API (`with`, `with_mut`): std's, or
/// loom's, which checks in a model that accesses are ordered.
pub(crate) mod cell {
    #[cfg(loom)]
    pub(crate) use loom::cell::UnsafeCell;

    #[cfg(not(loom))]
    #[derive(Debug, Default)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    #[cfg(not(loom))]
    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(value: T) -> UnsafeCell<T> {
            UnsafeCell(std::cell::UnsafeCell::new(value))
        }

        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

/// Runs one side of a loom model's race on a thread of its own. A model
/// runs every racing side this way and keeps its main thread for set-up,
/// joins and checks: a side left on the main thread after it spawned the
/// others ran, in loom's executions, only before their writes (a look
/// that never saw them, and mutations that went unseen).
#[cfg(all(test, loom))]
pub(crate) fn side<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> loom::thread::JoinHandle<T> {
    loom::thread::spawn(f)
}
