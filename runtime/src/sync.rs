//! Atomics used by the objects' state machines.
//!
//! Production code imports them from here, never from `std` directly, so
//! the `loom` models (built with `RUSTFLAGS="--cfg loom"`) can replace them
//! with loom's instrumented versions, as tokio does.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicI64, AtomicU32, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicI64, AtomicU32, AtomicUsize, Ordering};
