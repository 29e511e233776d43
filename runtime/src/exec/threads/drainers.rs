//! Who runs the queue: one atomic word that counts the threads draining the
//! scheduler's queue, the run permits they hold, and the threads blocked in
//! an `Await*` inside a task. `README.md` beside this file describes the protocol
//! built on it; `mod.rs` follows it, and the loom models in
//! `loom_drainers.rs` check it.
//!
//! ```text
//!   bits  0..16  permits    drainers allowed to take tasks now (<= workers)
//!   bits 16..32  pool jobs  drainer starts owed to or taken by a pool thread
//!                           (`pool_starts.rs`), not ended
//!   bits 32..48  spares     spare threads draining (pool jobs' stand-ins)
//!   bits 48..64  blocked    runtime threads blocked in an Await*
//! ```
//!
//! A drainer is a pool job or a spare thread running the drain loop. It
//! holds a permit while it takes tasks; the number of permits is the
//! parallelism (`workers`). A drainer that blocks inside a task gives its
//! permit back, so another drainer can start in its place; when its task
//! returns it needs a permit again to go on, or it leaves.
//!
//! Every transition is one read-modify-write of the word, `SeqCst`, so the
//! producer's check after a push (a `SeqCst` fence, then a load) and the
//! leaving drainer's check of the queue (after its `SeqCst` update) cannot
//! both miss each other: see "no lost wake-up" in README.md beside this file.

use crate::sync::mutation;
use crate::sync::{fence, AtomicBool, AtomicU64, Ordering};

const FIELD_BITS: u32 = 16;
const FIELD_MASK: u64 = (1 << FIELD_BITS) - 1;
const PERMIT: u64 = 1;
const POOL_JOB: u64 = 1 << FIELD_BITS;
const SPARE: u64 = 1 << (2 * FIELD_BITS);
const BLOCKED: u64 = 1 << (3 * FIELD_BITS);

/// The two kinds of drainers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DrainerKind {
    /// A job on the rayon pool (the usual executor).
    PoolJob,
    /// A spare thread, started when every pool thread is taken.
    Spare,
}

impl DrainerKind {
    fn unit(self) -> u64 {
        match self {
            DrainerKind::PoolJob => POOL_JOB,
            DrainerKind::Spare => SPARE,
        }
    }
}

/// A copy of the word, with named fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Snapshot(u64);

impl Snapshot {
    fn field(self, unit: u64) -> usize {
        ((self.0 / unit) & FIELD_MASK) as usize
    }
    pub(super) fn permits(self) -> usize {
        self.field(PERMIT)
    }
    pub(super) fn pool_jobs(self) -> usize {
        self.field(POOL_JOB)
    }
    pub(crate) fn spares(self) -> usize {
        self.field(SPARE)
    }
    pub(crate) fn blocked(self) -> usize {
        self.field(BLOCKED)
    }
    /// Drainers alive: while any is, the scheduler is not idle.
    pub(crate) fn drainers(self) -> usize {
        self.pool_jobs() + self.spares()
    }
}

/// What a drainer that just left (or blocked) must do next.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AfterLeave {
    /// Tasks wait in the queue: start the drainer this says.
    Start(Start),
    /// No drainer is left and the queue is empty: wake idle waiters.
    Idle,
    /// Nothing to do.
    Nothing,
}

/// What [`Drainers::try_start`] decided.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Start {
    /// Every permit is taken: the drainers running will get to the task.
    NotNeeded,
    /// A permit was taken for a new drain job: spawn it on the pool.
    PoolJob,
    /// A permit was taken for a spare thread: every pool thread is busy
    /// (some are blocked). Start a spare, or call [`Drainers::spare_failed`]
    /// (at the cap) or [`Drainers::spare_refused`] (refused by the system).
    Spare,
}

pub(super) struct Drainers {
    word: AtomicU64,
    /// The number of permits: the pool's threads.
    workers: u64,
    /// The system refused a spare since a blocked thread last looked
    /// ([`Drainers::retry_refused`]): the start must be tried again.
    refused: AtomicBool,
}

impl Drainers {
    pub(crate) fn new(workers: usize) -> Drainers {
        assert!((1..FIELD_MASK as usize).contains(&workers), "worker count out of range");
        Drainers { word: AtomicU64::new(0), workers: workers as u64, refused: AtomicBool::new(false) }
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot(self.word.load(Ordering::SeqCst))
    }

    /// True when a permit is free, so a push should start a drainer.
    pub(super) fn permit_free(&self) -> bool {
        (self.snapshot().permits() as u64) < self.workers
    }

    /// Called right after a task was pushed onto the queue: starts a
    /// drainer if a permit is free.
    pub(super) fn after_push(&self) -> Start {
        // SeqCst fence: orders the push before the load of the word; a
        // leaving drainer orders its update before its look at the queue
        // (`after_leave`). One of the two sees the other.
        fence(Ordering::SeqCst);
        self.start_if_permit_free()
    }

    /// Called after a drainer left or blocked (and by a blocked thread's
    /// retry of a refused spare start, [`Drainers::retry_refused`]; a failed
    /// start itself does not call it), with the word its update returned: a task pushed meanwhile must not be
    /// stranded, and idle waiters must hear of idleness.
    pub(super) fn after_leave(&self, after: Snapshot, queue_is_empty: impl Fn() -> bool) -> AfterLeave {
        // The SeqCst update that returned `after` came first; see
        // `after_push` for the other side. The look at the outside
        // threads' entries after an idle leave (`lookout::after_last_leave`)
        // rests on this fence too.
        if !mutation::LEAVE_NO_FENCE {
            fence(Ordering::SeqCst);
        }
        if !queue_is_empty() {
            match self.start_if_permit_free() {
                Start::NotNeeded => AfterLeave::Nothing,
                start => AfterLeave::Start(start),
            }
        } else if after.drainers() == 0 {
            AfterLeave::Idle
        } else {
            AfterLeave::Nothing
        }
    }

    pub(super) fn start_if_permit_free(&self) -> Start {
        if self.permit_free() {
            self.try_start()
        } else {
            Start::NotNeeded
        }
    }

    /// Takes a permit for a new drainer if one is free: on the pool while
    /// one of its threads is not in a drain job, otherwise a spare.
    pub(super) fn try_start(&self) -> Start {
        let mut start = Start::NotNeeded;
        // SeqCst, as every access to the word: the protocol's "one of the
        // two sees the other" arguments rely on one total order of the
        // word's updates and the fences of `after_push`/`after_leave`.
        let _ = self.word.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |current| {
            let s = Snapshot(current);
            if s.permits() as u64 >= self.workers {
                start = Start::NotNeeded;
                return None;
            }
            let add;
            (add, start) = if (s.pool_jobs() as u64) < self.workers {
                (PERMIT + POOL_JOB, Start::PoolJob)
            } else {
                (PERMIT + SPARE, Start::Spare)
            };
            Some(current + add)
        });
        start
    }

    /// Undoes a [`Start::Spare`] whose thread could not be started (the
    /// thread cap): the permit and the spare go back. The queued tasks wait
    /// for a blocked thread to go on and take a permit back.
    pub(super) fn spare_failed(&self) -> Snapshot {
        self.update(|w| w - PERMIT - SPARE)
    }

    /// Undoes a [`Start::Spare`] whose thread the system refused below the
    /// cap, and leaves the start to be tried again by the next blocked
    /// thread that wakes ([`Drainers::retry_refused`]): a blocked thread
    /// may never go on before the task it waits for runs, so waiting for
    /// one, as at the cap, could strand the queue for good.
    pub(super) fn spare_refused(&self) -> Snapshot {
        if mutation::RETRY_BEFORE_PERMIT {
            self.refused.store(true, Ordering::SeqCst);
            return self.spare_failed();
        }
        let after = self.spare_failed();
        // SeqCst, and after the permit went back: a retry that takes the
        // flag down also sees the permit free (`retry_refused`). Raised
        // before (mutation 6), a retry in between finds every permit
        // taken, takes the flag down, and nothing tries again.
        self.refused.store(true, Ordering::SeqCst);
        after
    }

    /// Called by a thread blocked in a task each time it wakes to look
    /// around (every `STUCK_CHECK_INTERVAL`): if a spare start was refused
    /// since, looks at the queue as a leaving drainer does, and says which
    /// drainer to start. A start refused again raises the flag again.
    pub(super) fn retry_refused(&self, queue_is_empty: impl Fn() -> bool) -> AfterLeave {
        // SeqCst: see `spare_refused`. A load first, so that the blocked
        // threads' looks leave the cache line (the word's) shared while
        // nothing was refused. Then a compare-and-swap, not a swap: the
        // same here, but loom mis-models a `swap` that races a store (the
        // swap reads the old value and a later load still misses the store:
        // tokio-rs/loom#254), and the model of this retry would fail for it.
        if !self.refused.load(Ordering::SeqCst)
            || self.refused.compare_exchange(true, false, Ordering::SeqCst, Ordering::SeqCst).is_err()
        {
            return AfterLeave::Nothing;
        }
        self.after_leave(self.snapshot(), queue_is_empty)
    }

    /// A drainer without a permit (its task blocked and went on) takes one
    /// again to keep draining; false when all are taken.
    pub(super) fn try_reacquire(&self) -> bool {
        // SeqCst: see `try_start`.
        let taken = self.word.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |current| {
            ((Snapshot(current).permits() as u64) < self.workers).then_some(current + PERMIT)
        });
        taken.is_ok()
    }

    /// A drainer of `kind` leaves, giving back its permit if it holds one.
    /// Returns the word after the change.
    pub(crate) fn leave(&self, kind: DrainerKind, holds_permit: bool) -> Snapshot {
        let permit = if holds_permit { PERMIT } else { 0 };
        self.update(|w| w - permit - kind.unit())
    }

    /// A runtime thread blocks inside a task: it gives back its permit (if
    /// it holds one) and counts as blocked.
    pub(crate) fn block(&self, holds_permit: bool) -> Snapshot {
        let permit = if holds_permit { PERMIT } else { 0 };
        self.update(|w| w - permit + BLOCKED)
    }

    /// The blocked thread goes on with its task (without a permit).
    pub(super) fn unblock(&self) -> Snapshot {
        self.update(|w| w - BLOCKED)
    }

    /// Applies `f` to the word atomically; returns the word after it.
    fn update(&self, f: impl Fn(u64) -> u64) -> Snapshot {
        // SeqCst: see `try_start`. `f` never declines: this is `Ok`.
        let (Ok(before) | Err(before)) = self.word.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| Some(f(w)));
        Snapshot(f(before))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn starts_pool_jobs_up_to_the_workers_then_nothing() {
        let d = Drainers::new(2);
        assert_eq!(d.try_start(), Start::PoolJob);
        assert_eq!(d.try_start(), Start::PoolJob);
        assert_eq!(d.try_start(), Start::NotNeeded);
        let s = d.snapshot();
        assert_eq!((s.permits(), s.pool_jobs(), s.spares(), s.blocked()), (2, 2, 0, 0));
    }

    #[test]
    fn a_blocked_pool_thread_is_replaced_by_a_spare() {
        let d = Drainers::new(1);
        assert_eq!(d.try_start(), Start::PoolJob);
        let s = d.block(true);
        assert_eq!((s.permits(), s.pool_jobs(), s.blocked()), (0, 1, 1));
        assert_eq!(d.try_start(), Start::Spare);
        let s = d.snapshot();
        assert_eq!((s.permits(), s.pool_jobs(), s.spares(), s.drainers()), (1, 1, 1, 2));
        // The blocked thread goes on; its task ends; no permit is free.
        d.unblock();
        assert!(!d.try_reacquire());
        let s = d.leave(DrainerKind::PoolJob, false);
        assert_eq!((s.permits(), s.pool_jobs(), s.spares(), s.blocked()), (1, 0, 1, 0));
        // The spare's queue runs dry: it leaves; all is idle.
        let s = d.leave(DrainerKind::Spare, true);
        assert_eq!(s.drainers(), 0);
        assert_eq!(s.permits(), 0);
    }

    #[test]
    fn a_spare_that_cannot_start_gives_its_permit_back() {
        let d = Drainers::new(1);
        assert_eq!(d.try_start(), Start::PoolJob);
        let _ = d.block(true);
        assert_eq!(d.try_start(), Start::Spare);
        let s = d.spare_failed();
        assert_eq!((s.permits(), s.spares(), s.pool_jobs()), (0, 0, 1));
        d.unblock();
        assert!(d.try_reacquire(), "the unblocked thread drains again");
    }
}
