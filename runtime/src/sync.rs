//! Atomics and thread parking used by the objects' state machines.
//!
//! Production code imports them from here, never from `std` directly, so
//! the `loom` models (built with `RUSTFLAGS="--cfg loom"`) can replace them
//! with loom's instrumented versions, as tokio does. Loom runs every model
//! thread on one OS thread, so a blocking wait must park through loom too.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU32, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU32, AtomicUsize, Ordering};

/// `std::thread`'s parking, or loom's under `cfg(loom)`.
pub(crate) mod thread {
    #[cfg(not(loom))]
    pub(crate) use std::thread::{current, park, park_timeout, yield_now, Thread};

    #[cfg(loom)]
    pub(crate) use loom::thread::{current, park, yield_now, Thread};

    /// Loom has no timed park; a loom model never runs on a pool worker
    /// (the only caller of timed parking), so a plain park is equivalent.
    #[cfg(loom)]
    pub(crate) fn park_timeout(_timeout: std::time::Duration) {
        park();
    }
}
