//! A drop-in replacement for MLIR 19's C++ async runtime, and the same
//! runtime as a Rust library for programs that JIT-compile MLIR
//! themselves (see "The Rust API" below, and `examples/melior-client`).
//!
//! The layers, lowest first: each folder imports only from itself and the
//! layers declared before it below (`scripts/check/layers.py`, run by
//! `make check-layers` and `make test`, checks that order, read from the
//! `mod` lines of this file, and that no module is in an import cycle).
//!
//! - `sync`: atomics, locks and parking (`std`, or `loom` under
//!   `cfg(loom)`), the fork-safe lock, thread-local slots that cost one
//!   load, the one-line abort for misuse the ABI cannot report, and the
//!   test-only switches that bring historic bugs back.
//! - `base`: a task to resume once and what made it ready; the three
//!   object kinds.
//! - `probe`: schedule fuzzing, the trace, the counters, and their clock:
//!   called by the layers above, never calling back; off by default.
//! - `object`: the reference-counted objects (header, completion, token,
//!   value, group), their recycling and live counts.
//! - `exec`: the executors, how an instance runs its tasks, chosen once
//!   per instance through one enum (`exec::Executor`): the multithreaded
//!   scheduler (`exec::threads`: queue, rayon pool, drainers, spares,
//!   deques, task stacks, blocking waits; the protocol in
//!   `exec/threads/README.md`) or a deterministic schedule
//!   (`exec::deterministic`: one thread runs at a time, chosen by a seeded
//!   strategy at every scheduling point); and their configuration, read
//!   from the environment when an instance starts (`exec::config`).
//! - `instance`: the lifecycle of a runtime instance: the current one
//!   (started lazily), where a ready task goes, its gate for threads
//!   outside its pool, destroy, process exit and fork.
//! - [`abi`]: the exported C functions, thin adapters over the rest, with
//!   what tools read ([`introspection`]), the thread-id print, and the init
//!   hooks' filling of the engine's `llvm::StringMap<void *>`.
//! - [`api`]: the Rust API, for embedders: [`AsyncToken`], [`AsyncValue`],
//!   [`AsyncGroup`] (one reference each to an object compiled code
//!   returned; blocking waits, payload reads, and `impl Future`),
//!   [`Runtime`] and [`RuntimeGuard`] (start, shutdown with the destroy
//!   hook's semantics), and [`symbols()`] to register in an engine.
//!
//! ```
//! use mlir_async_runtime::{abi, AsyncToken, Runtime};
//!
//! let runtime = Runtime::start().guard();
//! // Compiled code would return this token from `async.execute`.
//! let raw = abi::mlirAsyncRuntimeCreateToken();
//! // SAFETY: a live token, and one reference for us.
//! let token = unsafe { AsyncToken::from_raw(raw.cast()) };
//! // SAFETY: the producer completes it and drops its reference.
//! unsafe { abi::mlirAsyncRuntimeEmplaceToken(raw) };
//! assert_eq!(token.wait(), Ok(()));
//! drop(token);
//! runtime.shutdown().unwrap();
//! ```

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

// The layer order, lowest first (scripts/check/layers.py reads it here).
pub(crate) mod sync;
pub(crate) mod base;
pub(crate) mod probe;
pub(crate) mod object;
pub(crate) mod exec;
pub(crate) mod instance;
pub mod abi;
pub mod api;

pub use abi::introspection;
pub use api::{embed, handles};

// What the tests and benches name besides the ABI functions.
pub use object::completion::{Completion, Outcome};
pub use embed::{symbols, Leaks, Runtime, RuntimeGuard, ShutdownError};
pub use handles::{AsyncError, AsyncGroup, AsyncToken, AsyncValue, AvailableValue, Payload};
pub use exec::config::DEFAULT_MAX_THREADS;
pub use object::group::Group;
pub use introspection::{schedule_steps, schedule_task_counts, select_schedule, stats, migration_check, RuntimeStats};
pub use object::token::Token;
pub use object::value::Value;

/// True on a runtime thread, running a task (tests check where tasks run).
pub fn on_runtime_thread() -> bool {
    instance::on_runtime_thread()
}
