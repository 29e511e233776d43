//! The Rust API, for embedders.
//! - [`handles`]: `AsyncToken`, `AsyncValue`, `AsyncGroup`: one reference
//!   each to an object compiled code returned; blocking waits, payload
//!   reads, and `impl Future`.
//! - `future_waiter`: a waiter that wakes a Rust `Waker`, shared by the
//!   completion and the future until both are done with it.
//! - [`embed`]: `Runtime` and `RuntimeGuard` (start, shutdown with the
//!   destroy hook's semantics), and `symbols()` to register in an engine.

pub mod embed;
pub(super) mod future_waiter;
#[cfg(all(test, loom))]
mod loom_future_waiter;
pub mod handles;
