//! A drop-in replacement for MLIR 19's C++ async runtime.
//!
//! Layout, one concept per module:
//! - [`abi`]: the exported C functions, thin adapters over the rest.
//! - [`object`]: the header every token, value and group starts with
//!   (kind tag and reference count) and the destruction that follows the
//!   last reference.
//! - [`completion`]: the state machine shared by tokens, values and groups:
//!   one atomic word holding either the final state or the list of waiters.
//! - [`token`], [`value`], [`group`]: the three object kinds.
//! - [`scheduler`]: the runtime instance that owns the rayon pool, task
//!   spawning, in-flight accounting and teardown.
//! - [`exit`]: the teardown at process exit when nobody called the
//!   destroy hook (ahead-of-time compiled programs).
//! - [`stats`]: live-object counters read by tools (leak checks).
//! - [`observe`]: the switch and hooks of observability, off by default:
//!   the task trace ([`trace`], `MLIR_ASYNC_RUNTIME_TRACE`) and the
//!   counters ([`counters`], `MLIR_ASYNC_RUNTIME_STATS`).
//! - [`fuzz`]: schedule fuzzing for tests (`MLIR_ASYNC_RUNTIME_FUZZ`), off
//!   by default.
//! - [`misuse`]: the one-line abort for misuse the ABI cannot report.
//! - [`sync`]: atomics, `std` normally and `loom` under `cfg(loom)`.

pub mod abi;
pub mod completion;
pub mod counters;
mod exit;
pub mod fuzz;
pub mod group;
pub mod misuse;
pub mod object;
pub mod observe;
pub mod scheduler;
pub mod stats;
pub mod sync;
pub mod thread_id;
pub mod token;
pub mod trace;
pub mod value;

pub use completion::Outcome;
pub use scheduler::Task;
