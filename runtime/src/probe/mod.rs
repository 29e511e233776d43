//! Probes, at the side: called by the objects and the executors, never
//! calling back; off by default.
//! - [`fuzz`]: schedule fuzzing (`MLIR_ASYNC_RUNTIME_FUZZ`).
//! - [`clock`]: the trace's time, logical under a deterministic schedule.
//! - [`trace`], [`counters`], and their switch [`observe`]
//!   (`MLIR_ASYNC_RUNTIME_TRACE`, `MLIR_ASYNC_RUNTIME_STATS`).

pub(crate) mod clock;
pub(crate) mod counters;
pub(crate) mod fuzz;
pub(crate) mod observe;
pub(crate) mod trace;
