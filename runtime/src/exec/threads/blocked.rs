//! A runtime thread blocked inside a task ([`Blocked`]): it gives its run
//! permit back, so that another drainer takes its place, and says once on
//! stderr when every thread is blocked at the cap while tasks wait.

use crate::exec::threads::{current, with_state, Scheduler};
use crate::sync::misuse::warn;
use crate::sync::Ordering;

/// A runtime thread blocked inside a task, from [`Blocked::begin`] to its
/// drop: it holds no permit meanwhile, so another drainer takes its place.
pub(crate) struct Blocked<'a> {
    scheduler: &'a Scheduler,
    /// This thread found the pool stuck at its last check.
    stuck_before: bool,
}

impl<'a> Blocked<'a> {
    /// Called by a thread about to block: on a runtime thread, hands its
    /// place over and returns the guard; elsewhere returns `None`.
    pub(crate) fn begin() -> Option<Blocked<'a>> {
        let scheduler = current()?;
        scheduler.release_local_tasks();
        let holds_permit = with_state(|s| s.holds_permit.replace(false));
        let after = scheduler.drainers.block(holds_permit);
        scheduler.after_leave(after);
        Some(Blocked { scheduler, stuck_before: false })
    }

    /// Called every [`super::STUCK_CHECK_INTERVAL`] while blocked: starts
    /// a drainer if tasks wait and a permit is free (a spare the system
    /// refused, `Scheduler::look_while_blocked`); and if every runtime thread is
    /// blocked, tasks wait in the queue and the cap kept a spare from
    /// starting, twice in a row, says so once on stderr.
    pub(crate) fn check_stuck(&mut self) {
        let s = self.scheduler;
        s.look_while_blocked();
        let snapshot = s.drainers.snapshot();
        // Read from the word, not kept in a flag: a flag set by the
        // thread whose start failed could be cleared afterwards by the
        // thread that had started the last spare, and the stuck pool went
        // unreported (seen once in CI).
        let stuck = s.drainers.at_cap()
            && snapshot.blocked() >= snapshot.drainers()
            && !s.queue.is_empty();
        if stuck && self.stuck_before && !s.stuck_reported.swap(true, Ordering::Relaxed) {
            warn(&format!(
                "all {} runtime threads are blocked in an await while {} task(s) wait in the queue; \
                 the thread cap is {} (MLIR_ASYNC_RUNTIME_MAX_THREADS): raise it if the program needs \
                 more tasks blocked at once",
                s.threads(),
                s.queue.len(),
                s.config.max_threads
            ));
        }
        self.stuck_before = stuck;
    }
}

impl Drop for Blocked<'_> {
    fn drop(&mut self) {
        let _ = self.scheduler.drainers.unblock();
    }
}
