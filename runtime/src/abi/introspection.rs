//! What tools read through `rust_mlir_async_runtime_stats`
//! (docs/introspection-abi.md): live objects and tasks in flight; and the
//! schedule they select for the next instances.

use crate::exec::deterministic::spec::{self, Schedule};
use crate::instance;
use crate::object::live;

/// A snapshot of the runtime's counters (C layout: the introspection ABI).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    pub live_tokens: i64,
    pub live_values: i64,
    pub live_groups: i64,
    /// Zero exactly when no task is queued or running. Above zero: the
    /// shared queue's length plus the threads draining it (one each, whatever
    /// its next-task slot and deque hold), or, under a deterministic
    /// schedule, the tasks ready or running (docs/introspection-abi.md).
    pub tasks_in_flight: i64,
}

impl RuntimeStats {
    pub fn live_objects(&self) -> i64 {
        self.live_tokens + self.live_values + self.live_groups
    }
}

/// The counters now.
pub fn stats() -> RuntimeStats {
    let live = live::live_objects();
    RuntimeStats {
        live_tokens: live.tokens,
        live_values: live.values,
        live_groups: live.groups,
        tasks_in_flight: instance::tasks_in_flight() as i64,
    }
}

/// Selects the schedule of the instances started from now on (`None`: the
/// environment's); a malformed spec is refused with what is expected.
pub fn select_schedule(spec: Option<&str>) -> Result<(), String> {
    let schedule = spec.map(Schedule::parse).transpose()?;
    spec::select(schedule);
    Ok(())
}

/// Scheduling steps of the current deterministic instance, or else of the
/// last one destroyed.
pub fn schedule_steps() -> u64 {
    instance::schedule_steps()
}

/// Tasks queued and tasks run by the last deterministic instance
/// destroyed: equal unless it lost tasks.
pub fn schedule_task_counts() -> (u64, u64) {
    instance::schedule_task_counts()
}


/// The migration check's results (`MLIR_ASYNC_RUNTIME_CHECK_MIGRATION=1`,
/// `exec/threads/migration.rs`): tasks resumed on another thread than
/// they left, and thread-locals read stale after such a switch.
pub fn migration_check() -> (u64, u64) {
    crate::exec::threads::migration::results()
}
