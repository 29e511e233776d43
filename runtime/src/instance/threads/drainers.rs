//! Who runs the queue: one atomic word that counts the threads draining the
//! scheduler's queue, the run permits they hold, and the threads blocked in
//! an `Await*` inside a task. `README.md` beside this file describes the protocol
//! built on it; `mod.rs` follows it, and the loom models at the
//! end of this file check it.
//!
//! ```text
//!   bits  0..16  permits    drainers allowed to take tasks now (<= workers)
//!   bits 16..32  pool jobs  drain jobs on the rayon pool, started, not ended
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

use crate::sync::{fence, AtomicU64, Ordering};

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
    /// (some are blocked). Start a spare, or call [`Drainers::spare_failed`].
    Spare,
}

pub(super) struct Drainers {
    word: AtomicU64,
    /// The number of permits: the pool's threads.
    workers: u64,
}

impl Drainers {
    pub(crate) fn new(workers: usize) -> Drainers {
        assert!((1..FIELD_MASK as usize).contains(&workers), "worker count out of range");
        Drainers { word: AtomicU64::new(0), workers: workers as u64 }
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

    /// Called after a drainer left, blocked, or failed to start, with the
    /// word its update returned: a task pushed meanwhile must not be
    /// stranded, and idle waiters must hear of idleness.
    pub(super) fn after_leave(&self, after: Snapshot, queue_is_empty: impl Fn() -> bool) -> AfterLeave {
        // The SeqCst update that returned `after` came first; see
        // `after_push` for the other side.
        fence(Ordering::SeqCst);
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
    /// thread cap): the permit and the spare go back.
    pub(super) fn spare_failed(&self) -> Snapshot {
        self.update(|w| w - PERMIT - SPARE)
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

/// loom models of the protocol, on this file's real transitions. The
/// scheduler's queue (crossbeam's injector: `SeqCst` read-modify-writes
/// and loads) is a `SeqCst` counter of queued tasks here, so the models
/// depend on the fences of `after_push`/`after_leave` just as the real
/// code does; "start a drainer" is recorded and then played out by the
/// model's main thread.
#[cfg(all(test, loom))]
mod loom_models {
    use loom::sync::atomic::AtomicUsize;
    use loom::sync::Arc;
    use loom::thread;

    use super::*;

    struct Model {
        drainers: Drainers,
        queued: AtomicUsize,
    }

    impl Model {
        fn new(workers: usize) -> Arc<Model> {
            Arc::new(Model { drainers: Drainers::new(workers), queued: AtomicUsize::new(0) })
        }
        /// One worker, whose pool job already holds the permit.
        fn with_one_drainer() -> Arc<Model> {
            let m = Model::new(1);
            assert_eq!(m.drainers.try_start(), Start::PoolJob);
            m
        }
        /// A thread outside the pool that pushes one task.
        fn push_from_another_thread(m: &Arc<Model>) -> thread::JoinHandle<Start> {
            let m = Arc::clone(m);
            thread::spawn(move || m.push())
        }
        fn is_empty(&self) -> bool {
            self.queued.load(Ordering::SeqCst) == 0
        }
        /// `Scheduler::push`.
        fn push(&self) -> Start {
            self.queued.fetch_add(1, Ordering::SeqCst);
            self.drainers.after_push()
        }
        fn pop(&self) -> bool {
            self.queued.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
        }
        /// A drainer that holds a permit runs the queue dry and leaves
        /// (`Scheduler::run_drainer`); returns how many tasks it ran and
        /// what it left to do.
        fn drain_and_leave(&self, kind: DrainerKind) -> (usize, AfterLeave) {
            let mut ran = 0;
            while self.pop() {
                ran += 1;
            }
            let after = self.drainers.leave(kind, true);
            (ran, self.drainers.after_leave(after, || self.is_empty()))
        }
    }

    /// The drainers to start: the producer's and the leaving side's.
    fn starts(from_producer: Start, from_leaver: AfterLeave) -> Vec<DrainerKind> {
        let mut starts: Vec<DrainerKind> = kind_of(from_producer).into_iter().collect();
        if let AfterLeave::Start(start) = from_leaver {
            starts.extend(kind_of(start));
        }
        starts
    }

    fn kind_of(start: Start) -> Option<DrainerKind> {
        match start {
            Start::NotNeeded => None,
            Start::PoolJob => Some(DrainerKind::PoolJob),
            Start::Spare => Some(DrainerKind::Spare),
        }
    }

    /// A push from outside against the only drainer leaving with an empty
    /// queue: the task is never stranded (one of the two starts a drainer),
    /// and once everything settles the word is back to zero.
    #[test]
    fn push_against_a_leaving_drainer() {
        loom::model(|| {
            let m = Model::with_one_drainer();
            let producer = Model::push_from_another_thread(&m);
            let (mut ran, after) = m.drain_and_leave(DrainerKind::PoolJob);
            let starts = starts(producer.join().unwrap(), after);
            assert!(starts.len() <= 1, "two drainers for one permit: {starts:?}");
            for kind in starts {
                ran += m.drain_and_leave(kind).0;
            }
            assert_eq!(ran, 1, "the task ran exactly once");
            assert_eq!(m.drainers.snapshot(), Snapshot(0));
        });
    }

    /// The only pool thread blocks inside its task while another thread
    /// pushes the task that will end the wait: a spare is started for it
    /// (by whichever side comes second), the blocked thread goes on once
    /// the spare ran that task, and the word ends at zero.
    #[test]
    fn a_blocked_worker_is_replaced_by_a_spare() {
        loom::model(|| {
            let m = Model::with_one_drainer();
            let producer = Model::push_from_another_thread(&m);
            // The pool thread's task blocks (`Blocked::begin`).
            let after = m.drainers.block(true);
            let from_blocker = m.drainers.after_leave(after, || m.is_empty());
            let starts = starts(producer.join().unwrap(), from_blocker);
            assert_eq!(starts, vec![DrainerKind::Spare], "exactly one spare takes the blocked thread's place");
            let spare = {
                let m = Arc::clone(&m);
                thread::spawn(move || m.drain_and_leave(DrainerKind::Spare))
            };
            // The spare runs the task, which ends the wait (modelled by the
            // join); the blocked thread goes on, then its task returns.
            let (ran, _) = spare.join().unwrap();
            assert_eq!(ran, 1);
            let _ = m.drainers.unblock();
            assert!(m.drainers.try_reacquire(), "the spare left: its permit is free again");
            let (ran, after) = m.drain_and_leave(DrainerKind::PoolJob);
            assert_eq!(ran, 0);
            assert_eq!(after, AfterLeave::Idle);
            assert_eq!(m.drainers.snapshot(), Snapshot(0));
        });
    }

    /// A blocked thread that goes on races a push for the one permit:
    /// exactly one of them gets it (the permits never exceed the workers),
    /// and the task is run either way.
    #[test]
    fn reacquire_against_a_push() {
        loom::model(|| {
            let m = Model::with_one_drainer();
            let after = m.drainers.block(true);
            assert_eq!(m.drainers.after_leave(after, || m.is_empty()), AfterLeave::Nothing);
            let producer = Model::push_from_another_thread(&m);
            let _ = m.drainers.unblock();
            let reacquired = m.drainers.try_reacquire();
            let started = kind_of(producer.join().unwrap());
            assert!(m.drainers.snapshot().permits() <= 1);
            assert!(reacquired != started.is_some(), "exactly one takes the permit");
            let ran = if reacquired {
                m.drain_and_leave(DrainerKind::PoolJob).0
            } else {
                let after = m.drainers.leave(DrainerKind::PoolJob, false);
                let _ = m.drainers.after_leave(after, || m.is_empty());
                m.drain_and_leave(started.unwrap()).0
            };
            assert_eq!(ran, 1);
            assert_eq!(m.drainers.snapshot(), Snapshot(0));
        });
    }
}
