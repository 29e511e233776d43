//! Threads waiting for a scheduler to become idle ([`IdleSignal`]): a
//! spin, then a wait under a lock that the last drainer's notification
//! takes too (README.md beside this file, "Idle, and the destroy hook").

use std::time::{Duration, Instant};

use crate::sync::asymmetric;
use crate::sync::backoff::Backoff;
use crate::sync::mutation;
use crate::sync::signal;
use crate::sync::{AtomicUsize, Ordering};

/// Threads waiting for a scheduler to become idle, and their wake-up.
pub(super) struct IdleSignal {
    waiters: AtomicUsize,
    lock: signal::Mutex<()>,
    cv: signal::Condvar,
}

impl IdleSignal {
    pub(super) fn new() -> IdleSignal {
        IdleSignal { waiters: AtomicUsize::new(0), lock: signal::Mutex::new(()), cv: signal::Condvar::new() }
    }

    /// The spin of a thread that waits for idleness. Fewer rounds in a loom
    /// model, where every yield is a branch to explore.
    fn backoff() -> Backoff {
        if cfg!(loom) {
            Backoff::new(1, 2)
        } else {
            Backoff::new(64, 32)
        }
    }

    /// True while a thread waits for idleness: idle drainers then leave.
    pub(super) fn has_waiters(&self) -> bool {
        // Relaxed: a hint only. A stale read costs a drainer one more
        // snooze round (or its whole idle wait, as before); whether a
        // waiter hears of idleness rests on the SeqCst pair of `wait`'s
        // increment and `notify`'s load.
        self.waiters.load(Ordering::Relaxed) > 0
    }

    /// Wakes the waiters, if any (called when the last drainer left).
    pub(super) fn notify(&self) {
        // SeqCst, as the waiter's increment: either the waiter's check of
        // `is_idle` sees the drainer gone, or we see the waiter here.
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _guard = signal::lock(&self.lock);
            self.cv.notify_all();
        }
    }

    /// Wakes the waiters if there are any and `is_idle` then says so: the
    /// look at idleness costs nothing while nobody waits for it (a waiter
    /// that ends its batch of tasks, `waiter.rs`).
    pub(super) fn notify_if(&self, is_idle: impl FnOnce() -> bool) {
        // SeqCst, as in `notify`: with the caller's SeqCst update before
        // it, either the waiter's look at `is_idle` sees that update, or
        // this load sees the waiter.
        if self.waiters.load(Ordering::SeqCst) > 0 && is_idle() {
            let _guard = signal::lock(&self.lock);
            self.cv.notify_all();
        }
    }

    pub(super) fn wait(&self, timeout: Option<Duration>, is_idle: impl Fn() -> bool) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        self.waiters.fetch_add(1, Ordering::SeqCst);
        // Drainers without a task leave as soon as they see a waiter
        // (`run_drainer`): that takes a moment, not a sleep and a wake.
        let mut backoff = IdleSignal::backoff();
        let spun_idle = loop {
            if is_idle() {
                break true;
            }
            if !backoff.snooze() {
                break false;
            }
        };
        let idle = spun_idle || self.sleep_until_idle(deadline, &is_idle);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        idle
    }

    /// [`IdleSignal::wait`] once its spin did not see idleness: the heavy
    /// fence, then looks under the lock between sleeps.
    fn sleep_until_idle(&self, deadline: Option<Instant>, is_idle: &impl Fn() -> bool) -> bool {
        // Heavy fence, only here (a harness waits for idleness after each
        // run, and its spin sees it: a `membarrier` at every wait made the
        // one-task program's runs 0.6 µs instead of 0.4): the count up
        // before the looks at `is_idle` that precede a sleep, against a
        // waiter's batch end (its entry's flag down, light fence, look at
        // this count: `Scheduler::with_waiter_fiber`). A batch end the spin
        // missed is seen by the re-check below, or notifies.
        asymmetric::heavy();
        let mut guard = signal::lock(&self.lock);
        // The re-check under the lock: a drainer that left after the spin's
        // last look notified before this thread waits, and only the lock
        // orders the two (`notify` takes it). Mutation 4 skips it once.
        let mut recheck = !mutation::IDLE_NO_RECHECK;
        loop {
            if recheck && is_idle() {
                return true;
            }
            recheck = true;
            // A bounded wait: a safety net, not part of the protocol.
            let mut wait = Duration::from_millis(100);
            if let Some(deadline) = deadline {
                match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => wait = wait.min(left),
                    _ => return false,
                }
            }
            guard = self.cv.wait_timeout(guard, wait).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}
