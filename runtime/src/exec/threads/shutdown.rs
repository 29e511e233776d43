//! A scheduler's idleness (no task queued, running, switched out or held
//! by a waiter, none in an outside thread's entry) and its shutdown: what
//! the destroy hook and `wait_idle` rest on (README.md beside this file,
//! "Idle, and the destroy hook").

use std::time::Duration;

use crate::exec::threads::Scheduler;
use crate::sync::misuse::{abort_misuse, warn};
use crate::sync::process::lock;

impl Scheduler {
    /// True when no task is queued or running. The holders of tasks
    /// taken out of the queue and the entries (waiters) are read after
    /// them: a look that finds a task gone finds its holder counted
    /// (README.md beside this file, "Fences and re-checks", row 10).
    pub(super) fn is_idle(&self) -> bool {
        self.drainers.snapshot().drainers() == 0
            && self.queue.is_empty()
            && !self.deques.any_outside_task()
            && self.deques.outside_running() == 0
            && self.idle.held() == 0
    }

    /// True when some task is queued or running; false when none is, or
    /// every task in flight waits in an `Await*` (switched out, or
    /// blocking a runtime thread with task stacks off): the destroy hook's
    /// bounds on staying current apply only while this holds
    /// (`config::drain_while_current`). A hint, read field by field: a
    /// drainer that looks for work before it leaves counts as running.
    pub(crate) fn has_runnable_tasks(&self) -> bool {
        let drainers = self.drainers.snapshot();
        drainers.drainers() > drainers.blocked()
            || !self.queue.is_empty()
            || self.deques.any_outside_task()
            || self.deques.outside_running() > 0
    }

    /// Zero exactly when no task is queued or running; else the shared
    /// queue's length plus the drainers, each counted once whatever it runs,
    /// awaits or holds in its slot and deque (docs/introspection-abi.md).
    pub(crate) fn tasks_in_flight(&self) -> usize {
        self.queue.len()
            + self.drainers.snapshot().drainers()
            + self.idle.held()
            + self.deques.outside_running()
    }

    /// Blocks until no task is queued or running, or `timeout` passed;
    /// true when idle.
    pub(crate) fn wait_idle(&self, timeout: Option<Duration>) -> bool {
        self.take_back_owed_starts();
        self.idle.wait(timeout, || self.is_idle())
    }

    /// Waits until no task is queued or running, saying on stderr what it
    /// waits for if that takes long.
    pub(crate) fn drain(&self) {
        if !self.wait_idle(Some(Duration::from_secs(5))) {
            warn(&format!("destroy: waiting for {} task(s) still in flight", self.tasks_in_flight()));
            self.wait_idle(None);
        }
    }

    /// Ends the pool's and the spares' threads and joins them: no thread of
    /// this scheduler runs after this returns. The caller drained the
    /// scheduler and guarantees that nothing queues tasks here any more
    /// (the instance's gate is closed).
    pub(crate) fn join_threads(&self) {
        // Dropping the pool lets its threads leave once their queues are
        // empty (they are: idle); joining them means none runs anything
        // after this function returns.
        self.pool_starts.close();
        drop(lock(&self.pool).take());
        let handles = std::mem::take(&mut *lock(&self.pool_threads));
        for handle in handles {
            if handle.join().is_err() {
                abort_misuse("__mlir_execution_engine_destroy", "a worker thread panicked");
            }
        }
        self.spares.shutdown();
    }

    /// False once the threads were joined: nothing runs a task queued now.
    pub(super) fn takes_tasks(&self) -> bool {
        lock(&self.pool).is_some()
    }

    /// Runtime threads alive: the pool's and the spares (the drainers
    /// word counts them).
    pub(crate) fn threads(&self) -> usize {
        self.drainers.snapshot().threads()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::exec::config::Config;
    use crate::exec::threads::drainers::Start;
    use crate::exec::threads::Scheduler;

    /// A drainer that leaves while another one runs may see a task in that
    /// one's slot, which its owner then runs before it leaves too: the
    /// scheduler goes idle, destroy joins its threads, and the first one's
    /// start comes after, with nothing to run. It gives its permit back.
    /// (Found under ThreadSanitizer, whose timing opens the window: with
    /// the opt-out, 3 runs of 12 of `tests/lifecycle.rs`'s
    /// `no_task_is_lost_when_destroy_runs_while_another_thread_queues`
    /// aborted on "the pool lives until its threads are joined".)
    #[test]
    fn a_start_after_the_threads_were_joined_gives_its_permit_back() {
        let scheduler = Scheduler::start(Config::from_env());
        scheduler.drain();
        scheduler.join_threads();
        let start = scheduler.drainers.try_start();
        assert_eq!(start, Start::Wake);
        scheduler.start_drainer(start);
        assert_eq!(scheduler.drainers.snapshot().permits(), 0, "the permit was not given back");
        assert!(scheduler.is_idle());
    }
}
