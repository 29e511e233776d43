//! Threads waiting for a scheduler to become idle ([`IdleSignal`]): a
//! spin, then a wait under a lock that the last drainer's notification
//! takes too (README.md beside this file, "Idle, and the destroy hook");
//! and the tasks that no drainer, queue or entry holds, which keep the
//! scheduler from being idle meanwhile.
//!
//! One atomic word, every change a `SeqCst` read-modify-write:
//!
//! ```text
//!   bits  0..44  held     tasks switched out of their thread and not yet
//!                         taken up again (`fibers.rs`), or taken by a
//!                         thread outside the pool without an entry, or
//!                         moving from an exiting thread's entry to the
//!                         queue (`waiter.rs`)
//!   bits 44..64  waiters  threads waiting for idleness
//! ```

use std::time::{Duration, Instant};

use crate::sync::asymmetric;
use crate::sync::backoff::Backoff;
use crate::sync::mutation;
use crate::sync::signal;
use crate::sync::{fence, AtomicU64, Ordering};

const HELD: u64 = 1;
const WAITER: u64 = 1 << 44;

/// Threads waiting for a scheduler to become idle, their wake-up, and the
/// tasks held out of the queue and the entries.
pub(super) struct IdleSignal {
    word: AtomicU64,
    lock: signal::Mutex<()>,
    cv: signal::Condvar,
}

impl IdleSignal {
    pub(super) fn new() -> IdleSignal {
        IdleSignal { word: AtomicU64::new(0), lock: signal::Mutex::new(()), cv: signal::Condvar::new() }
    }

    /// A task is held out of the queue and the entries: before a switch
    /// out, before a take by a waiter without an entry.
    pub(super) fn hold(&self) {
        if mutation::HOLD_UNCOUNTED {
            return;
        }
        // SeqCst, as `held`'s load in `is_idle`: a thread that sees the
        // holder's other traces gone sees the count raised.
        self.word.fetch_add(HELD, Ordering::SeqCst);
        // Release fence: the holder's take that follows may be a `Relaxed`
        // write (a slot's compare-and-swap); a look that reads it, then
        // `is_idle`'s Acquire fence, sees the count (row 10 of README.md's
        // table). The read-modify-write alone does not order that write
        // for such a look (loom found it).
        if !mutation::HOLD_NO_FENCE {
            fence(Ordering::Release);
        }
    }

    /// A held task is taken up again, or the waiter's batch ended: true
    /// when that was the last one held and a thread waits for idleness
    /// (the caller then looks at idleness and notifies, `notify_if`).
    pub(super) fn release(&self) -> bool {
        // SeqCst: with `wait`'s SeqCst increment of the waiters, one of the
        // two sees the other (the waiter's look sees the count down, or
        // this update sees the waiter).
        let before = self.word.fetch_sub(HELD, Ordering::SeqCst);
        !mutation::HELD_NO_NOTIFY && before % WAITER == HELD && before >= WAITER
    }

    /// The tasks held (see the module's comment).
    pub(super) fn held(&self) -> usize {
        (self.word.load(Ordering::SeqCst) % WAITER) as usize
    }

    fn waiters(&self, order: Ordering) -> u64 {
        self.word.load(order) / WAITER
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
        self.waiters(Ordering::Relaxed) > 0
    }

    /// Wakes the waiters, if any (called when the last drainer left).
    pub(super) fn notify(&self) {
        // SeqCst, as the waiter's increment: either the waiter's check of
        // `is_idle` sees the drainer gone, or we see the waiter here.
        if self.waiters(Ordering::SeqCst) > 0 {
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
        if self.waiters(Ordering::SeqCst) > 0 && is_idle() {
            let _guard = signal::lock(&self.lock);
            self.cv.notify_all();
        }
    }

    pub(super) fn wait(&self, timeout: Option<Duration>, is_idle: impl Fn() -> bool) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        self.word.fetch_add(WAITER, Ordering::SeqCst);
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
        self.word.fetch_sub(WAITER, Ordering::SeqCst);
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
