//! A drop-in replacement for MLIR 19's C++ async runtime, and the same
//! runtime as a Rust library for programs that JIT-compile MLIR
//! themselves (see "The Rust API" below, and `examples/melior-client`).
//!
//! The modules form a stack: each imports only from those listed before it
//! (`../shared/tools/import-cycles.py runtime/src` checks there is no cycle).
//!
//! Foundations:
//! - [`sync`]: atomics, locks and parking (`std`, or `loom` under `cfg(loom)`).
//! - [`tls`]: thread-local slots that cost one load (`csrc/tls.c`).
//! - [`misuse`]: the one-line abort for misuse the ABI cannot report.
//! - [`mutation`]: test-only switches that bring historic bugs back.
//! - [`task`]: a coroutine to resume once, and what made it ready.
//!
//! Probes, at the side: called by the core, never calling back; off by
//! default.
//! - [`fuzz`]: schedule fuzzing (`MLIR_ASYNC_RUNTIME_FUZZ`).
//! - [`clock`]: the trace's time, logical under a deterministic schedule.
//! - [`trace`], [`counters`], and their switch [`observe`]
//!   (`MLIR_ASYNC_RUNTIME_TRACE`, `MLIR_ASYNC_RUNTIME_STATS`).
//!
//! Objects:
//! - [`recycle`]: per-thread recycling of the runtime's small allocations.
//! - [`object`]: the header (kind tag, reference count, free function).
//! - [`live`]: live-object counts.
//! - [`completion`]: the state word and waiter list of every object; a
//!   waiter carries its own fire function.
//! - [`token`], [`value`], [`group`]: the three object kinds.
//! - [`future_waiter`]: a waiter that wakes a Rust `Waker`, shared by the
//!   completion and the future until both are done with it.
//!
//! Execution:
//! - [`config`]: workers and the thread cap, from the environment.
//! - [`schedule`]: which executor an instance uses
//!   (`MLIR_ASYNC_RUNTIME_SCHEDULE`, or a tool's selection).
//! - [`strategy`]: a deterministic schedule's ready set and its seeded
//!   choice of what runs next (random, PCT).
//! - [`drainers`]: the atomic word that counts drainers, permits and
//!   blocked threads (the protocol of `docs/scheduler.md`).
//! - [`gate`]: an instance's door for threads outside its pool.
//! - [`spares`]: spare threads, started when blocked ones need stand-ins.
//! - [`deques`]: the runtime threads' own deques, and stealing.
//! - [`scheduler`]: one instance's queue, rayon pool, drain loop,
//!   hand-over of blocked threads, idleness and shutdown.
//! - [`explore`]: the deterministic executor: one thread runs at a time,
//!   chosen by the strategy at every scheduling point.
//! - [`wait`]: blocking waits.
//! - [`runtime`]: the current instance, where tasks go, destroy, fork.
//!
//! The C ABI:
//! - [`introspection`]: what tools read (live objects, tasks in flight).
//! - [`thread_id`]: `mlirAsyncRuntimePrintCurrentThreadId`.
//! - [`symbol_map`]: the init hooks' filling of the engine's
//!   `llvm::StringMap<void *>`, through the caller's LLVM.
//! - [`abi`]: the exported functions, thin adapters over the rest.
//!
//! The Rust API, for embedders:
//! - [`handles`]: [`AsyncToken`], [`AsyncValue`], [`AsyncGroup`]: one
//!   reference each to an object compiled code returned; blocking waits,
//!   payload reads, and `impl Future`.
//! - [`embed`]: [`Runtime`] and [`RuntimeGuard`] (start, shutdown with the
//!   destroy hook's semantics), and [`symbols()`] to register in an engine.
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

pub(crate) mod sync;
pub(crate) mod tls;
pub(crate) mod misuse;
pub(crate) mod mutation;
pub(crate) mod task;

pub(crate) mod fuzz;
pub(crate) mod clock;
pub(crate) mod trace;
pub(crate) mod counters;
pub(crate) mod observe;

pub(crate) mod recycle;
pub(crate) mod object;
pub(crate) mod live;
pub(crate) mod completion;
pub(crate) mod token;
pub(crate) mod value;
pub(crate) mod group;
pub(crate) mod future_waiter;

pub(crate) mod config;
pub(crate) mod schedule;
pub(crate) mod strategy;
pub(crate) mod drainers;
pub(crate) mod gate;
pub(crate) mod spares;
pub(crate) mod deques;
pub(crate) mod scheduler;
pub(crate) mod explore;
pub(crate) mod wait;
pub(crate) mod runtime;

pub mod introspection;
pub(crate) mod thread_id;
pub(crate) mod symbol_map;
pub mod abi;

pub mod handles;
pub mod embed;

// What the tests and benches name besides the ABI functions.
pub use completion::{Completion, Outcome};
pub use embed::{symbols, Leaks, Runtime, RuntimeGuard, ShutdownError};
pub use handles::{AsyncError, AsyncGroup, AsyncToken, AsyncValue, AvailableValue, Payload};
pub use config::DEFAULT_MAX_THREADS;
pub use group::Group;
pub use introspection::{schedule_steps, select_schedule, stats, RuntimeStats};
pub use token::Token;
pub use value::Value;

/// True on a runtime thread, running a task (tests check where tasks run).
pub fn on_runtime_thread() -> bool {
    runtime::on_runtime_thread()
}
