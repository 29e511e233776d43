//! The executors: how a runtime instance runs its tasks, chosen once when
//! the instance starts ([`Executor`], as tokio's `Handle` chooses its
//! scheduler) and never looked at again on the threads' own paths.
//!
//! - [`threads`]: the multithreaded scheduler, the default: a rayon pool
//!   drains the queue, tasks run on stacks of their own, and a thread that
//!   waits outside the pool runs the tasks that produce what it waits for
//!   (`threads/README.md` is its specification).
//! - [`deterministic`]: a deterministic schedule, selected by
//!   `MLIR_ASYNC_RUNTIME_SCHEDULE` (`deterministic/spec.rs`): one thread
//!   runs at a time, chosen by a seeded strategy at every scheduling
//!   point, for exploring interleavings (docs/exploration.md).
//! - [`config`]: what both read from the environment when an instance
//!   starts (workers, thread cap, task stacks, the waiters' policy).
//!
//! `instance/` above keeps the lifecycle: the current instance, its gate,
//! destroy, process exit and fork.

pub(crate) mod config;
pub(crate) mod deterministic;
pub(crate) mod threads;

use std::sync::Arc;
use std::time::Duration;

use crate::base::task::Task;
use crate::exec::config::Config;
use crate::exec::deterministic::spec::{self, Schedule};
use crate::exec::deterministic::Deterministic;
use crate::exec::threads::Scheduler;

/// How an instance runs its tasks.
pub(crate) enum Executor {
    /// The ordinary multithreaded scheduler.
    Threads(Arc<Scheduler>),
    /// The deterministic executor of a selected schedule.
    Deterministic(Arc<Deterministic>),
}

impl Executor {
    /// The executor the environment selects (`spec::for_new_instance`),
    /// started with `config`.
    pub(crate) fn start(config: Config) -> Executor {
        match spec::for_new_instance() {
            Schedule::Threads => Executor::Threads(Scheduler::start(config)),
            Schedule::Deterministic(spec) => Executor::Deterministic(Deterministic::start(spec, config)),
        }
    }

    pub(crate) fn config(&self) -> Config {
        match self {
            Executor::Threads(scheduler) => scheduler.config(),
            Executor::Deterministic(executor) => executor.config(),
        }
    }

    /// The deterministic executor, if this is one.
    pub(crate) fn deterministic(&self) -> Option<&Arc<Deterministic>> {
        match self {
            Executor::Deterministic(executor) => Some(executor),
            Executor::Threads(_) => None,
        }
    }

    /// Queues a task from a thread outside the pools; a deterministic
    /// executor closed by the destroy hook gives it back.
    #[inline(always)]
    pub(crate) fn push(&self, task: Task) -> Result<(), Task> {
        match self {
            Executor::Threads(scheduler) => {
                scheduler.push_from_outside(task);
                Ok(())
            }
            Executor::Deterministic(executor) => executor.make_ready(task),
        }
    }

    /// Blocks until no task is queued or running, or `timeout` passed;
    /// true when idle.
    pub(crate) fn wait_idle(&self, timeout: Option<Duration>) -> bool {
        match self {
            Executor::Threads(scheduler) => scheduler.wait_idle(timeout),
            Executor::Deterministic(executor) => executor.wait_idle(timeout),
        }
    }

    /// Tasks queued or running.
    pub(crate) fn tasks_in_flight(&self) -> usize {
        match self {
            Executor::Threads(scheduler) => scheduler.tasks_in_flight(),
            Executor::Deterministic(executor) => executor.tasks_in_flight(),
        }
    }
}
