//! Who runs the queue: one atomic word that counts the run permits, the
//! idle drainers looking for work, the drainer jobs, the runtime threads
//! and the threads blocked in an `Await*` inside a task, and says whether
//! a sleeping pool thread holds the watch. `README.md`
//! beside this file describes the protocol built on it; `mod.rs`,
//! `lookout.rs` (the lookers' checks) and `watch.rs` follow it, and the loom models in
//! `loom_drainers.rs`, `loom_slot.rs`, `loom_entries.rs`, `loom_spares.rs`
//! and `loom_watch.rs` check it.
//!
//! ```text
//!   bits  0..12  permits  drainers allowed to take tasks now (<= workers)
//!   bits 12..20  lookers  drainers that look for work (`lookout.rs`;
//!                         <= `max_lookers`, at most 255)
//!   bits 20..34  jobs     drainer jobs owed to a thread (`pool_starts.rs`)
//!                         or running, not ended (<= threads)
//!   bits 34..48  threads  runtime threads: the pool's, and the spares
//!                         started since (`spares.rs`), which live until
//!                         the pool closes (<= the cap)
//!   bits 48..62  blocked  runtime threads blocked in an Await* (<= jobs)
//!   bit  62      watch    a sleeping pool thread holds the watch
//!                         (`watch.rs`)
//! ```
//!
//! A drainer is a job that a runtime thread runs: the drain loop. It holds
//! a permit while it takes tasks; the number of permits is the parallelism
//! (`workers`). Threads are interchangeable: any thread that waits for a
//! job takes the next one owed, and a start needs a new thread (a spare)
//! only when every thread is in a job, some of them blocked. A drainer that
//! blocks inside a task gives its permit back, so another drainer can
//! start in its place; when its task returns it needs a permit again to go
//! on, or it leaves. An idle drainer counts among the lookers while it
//! looks for work: a push then starts nobody (`lookout.rs`); the permits
//! and the lookers in one word, as tokio's `Idle` keeps its unparked and
//! searching workers, make the push's check one load.
//!
//! Every transition is one read-modify-write of the word, `SeqCst`, so the
//! producer's check after a push (a `SeqCst` fence, then a load) and the
//! leaving drainer's check of the queue (after its `SeqCst` update) cannot
//! both miss each other: see "no lost wake-up" in README.md beside this file.

use crate::exec::config;
use crate::sync::mutation;
use crate::sync::{fence, AtomicU64, Ordering};

/// A field of the word: its lowest bit's value and its width.
#[derive(Clone, Copy)]
struct Field {
    unit: u64,
    bits: u32,
}

const fn field(shift: u32, bits: u32) -> Field {
    Field { unit: 1 << shift, bits }
}

const PERMITS: Field = field(0, 12);
const LOOKERS: Field = field(12, 8);
const JOBS: Field = field(20, 14);
const THREADS: Field = field(34, 14);
const BLOCKED: Field = field(48, 14);
const PERMIT: u64 = PERMITS.unit;
const LOOKER: u64 = LOOKERS.unit;
const JOB: u64 = JOBS.unit;
const THREAD: u64 = THREADS.unit;
const BLOCK: u64 = BLOCKED.unit;
/// The watch is held (`watch.rs`): an outside thread's first task of a
/// fill starts no drainer. Above the blocked field (blocked <= threads <=
/// the cap, `config::HARD_MAX_THREADS`, below 2^14).
const WATCH: u64 = 1 << 62;

/// The most lookers the word counts.
const MAX_LOOKERS: usize = (1 << LOOKERS.bits) - 1;

const _: () = assert!(config::MAX_WORKERS < 1 << PERMITS.bits, "the permits field holds the workers");
const _: () = assert!(PERMITS.unit == 1 && LOOKERS.unit == 1 << PERMITS.bits, "the lookers right above the permits");
const _: () = assert!(config::HARD_MAX_THREADS < 1 << THREADS.bits, "the threads field holds the cap");
const _: () = assert!(JOBS.bits == THREADS.bits && BLOCKED.bits == THREADS.bits, "jobs, blocked <= threads");
const _: () = assert!(BLOCKED.unit << BLOCKED.bits == WATCH, "the fields end below the watch flag");

/// A copy of the word, with named fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Snapshot(u64);

impl Snapshot {
    fn field(self, field: Field) -> usize {
        ((self.0 / field.unit) & ((1 << field.bits) - 1)) as usize
    }
    pub(super) fn permits(self) -> usize {
        self.field(PERMITS)
    }
    /// Idle drainers looking for work.
    pub(super) fn lookers(self) -> usize {
        self.field(LOOKERS)
    }
    pub(crate) fn threads(self) -> usize {
        self.field(THREADS)
    }
    pub(crate) fn blocked(self) -> usize {
        self.field(BLOCKED)
    }
    /// Drainers alive (owed to a thread or running): while any is, the
    /// scheduler is not idle.
    pub(crate) fn drainers(self) -> usize {
        self.field(JOBS)
    }
    /// A pool thread holds the watch (`watch.rs`).
    pub(super) fn watch_held(self) -> bool {
        self.0 & WATCH != 0
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
    /// Every permit is taken (the drainers running will get to the task),
    /// or every thread is in a job and the cap allows no other.
    NotNeeded,
    /// A permit and a job were taken, and a thread is free for the job:
    /// owe it to the threads that wait for one.
    Wake,
    /// A permit, a job and a new thread were taken: every thread is in a
    /// job (some are blocked). Start a spare thread, then owe it the job;
    /// or call [`Drainers::spawn_refused`] (refused by the system) or
    /// [`Drainers::spawn_failed`] (the pool closed).
    Spawn,
}

pub(super) struct Drainers {
    word: AtomicU64,
    /// The number of permits: the pool's threads.
    workers: u64,
    /// Runtime threads at most (`MLIR_ASYNC_RUNTIME_MAX_THREADS`).
    max_threads: u64,
    /// Drainers that may look for work at once; one beyond that leaves at
    /// once (README.md beside this file, "How a thread waits").
    max_lookers: usize,
}

impl Drainers {
    /// `workers` permits, as many threads to begin with (the pool's), at
    /// most `max_threads` threads; as many drainers looking for work at
    /// once as `cores`, as rayon lets every idle thread search, at most the
    /// workers (and 255).
    pub(crate) fn new(workers: usize, max_threads: usize, cores: usize) -> Drainers {
        assert!((1..=config::HARD_MAX_THREADS).contains(&max_threads), "thread cap out of range");
        assert!((1..=max_threads.min(config::MAX_WORKERS)).contains(&workers), "worker count out of range");
        Drainers {
            word: AtomicU64::new(workers as u64 * THREAD),
            workers: workers as u64,
            max_threads: max_threads as u64,
            max_lookers: cores.clamp(1, workers).min(MAX_LOOKERS),
        }
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot(self.word.load(Ordering::SeqCst))
    }

    /// The word, `Relaxed`: a hint, or a load that a `SeqCst` fence
    /// orders (`Drainers::should_start`, `Drainers::after_looking`).
    pub(super) fn hint(&self) -> Snapshot {
        Snapshot(self.word.load(Ordering::Relaxed))
    }

    /// True when a permit is free, so a push should start a drainer.
    pub(super) fn permit_free(&self) -> bool {
        (self.snapshot().permits() as u64) < self.workers
    }

    /// True when a permit is free in `s` and no drainer looks for work:
    /// a put must start one. One comparison: the lookers' field sits right
    /// above the permits', so the two read as one number below `workers`
    /// (at most 4095) only when no drainer looks.
    pub(super) fn permit_free_and_nobody_looking(&self, s: Snapshot) -> bool {
        s.0 & ((LOOKERS.unit << LOOKERS.bits) - 1) < self.workers
    }

    /// An idle drainer starts looking for work; false (and nothing
    /// counted) when enough drainers look already.
    pub(super) fn start_looking(&self) -> bool {
        // SeqCst: see `try_start`; the lookers' count is one side of the
        // put's fence and look (`lookout.rs`).
        self.word
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| {
                (Snapshot(w).lookers() < self.max_lookers).then_some(w + LOOKER)
            })
            .is_ok()
    }

    /// A pool thread going to sleep takes the watch; false when another
    /// holds it.
    pub(super) fn hold_watch(&self) -> bool {
        // SeqCst: see `try_start`; the hold and the let-go are one side of
        // the push's fence and look (`watch.rs`).
        self.word.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| (w & WATCH == 0).then_some(w | WATCH)).is_ok()
    }

    /// The watcher lets go of the watch.
    pub(super) fn let_go_watch(&self) {
        let _ = self.update(|w| w & !WATCH);
    }

    /// A drainer that looked for work stops because it found a task; it
    /// then calls [`Drainers::after_looking`]. (One that leaves stops in
    /// its [`Drainers::leave`].)
    pub(super) fn stop_looking(&self) {
        let _ = self.update(|w| w - LOOKER);
    }

    /// True when every thread the cap allows is alive.
    pub(super) fn at_cap(&self) -> bool {
        self.snapshot().threads() as u64 >= self.max_threads
    }

    /// Called right after a task was pushed onto the queue: starts a
    /// drainer if a permit is free.
    pub(super) fn after_push(&self) -> Start {
        // SeqCst fence: orders the push before the load of the word; a
        // leaving drainer orders its update before its look at the queue
        // (`after_leave`). One of the two sees the other.
        if !mutation::QUEUE_PUSH_NO_FENCE {
            fence(Ordering::SeqCst);
        }
        self.start_if_permit_free()
    }

    /// Called after a drainer left or blocked (and by a blocked thread's
    /// periodic look, [`Drainers::look_while_blocked`]; a failed start
    /// itself does not call it), with the word its update returned: a task
    /// pushed meanwhile must not be stranded, and idle waiters must hear of
    /// idleness.
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

    /// A thread blocked in a task wakes once a second and looks at the
    /// queue as a leaving drainer does (it counts as a drainer: never
    /// idle). That tries again a spare start that the system refused
    /// ([`Drainers::spawn_failed`]); any other time it finds nothing to
    /// start (a push or a leave started one).
    pub(super) fn look_while_blocked(&self, queue_is_empty: impl Fn() -> bool) -> AfterLeave {
        if mutation::BLOCKED_NO_LOOK {
            return AfterLeave::Nothing;
        }
        self.after_leave(self.snapshot(), queue_is_empty)
    }

    pub(super) fn start_if_permit_free(&self) -> Start {
        if self.permit_free() {
            self.try_start()
        } else {
            Start::NotNeeded
        }
    }

    /// Takes a permit and a job for a new drainer if a permit is free: on a
    /// thread that is in no job, else on a new one if the cap allows.
    pub(super) fn try_start(&self) -> Start {
        if mutation::START_UNCHECKED || mutation::START_KIND_STALE {
            // Mutations 20 and 26: the start decided on a load, then added
            // in a second step (20: unchecked; 26: a compare-and-swap that
            // checks the permits only, not the kind of start).
            let Some((add, start)) = self.start_from(self.snapshot()) else { return Start::NotNeeded };
            let taken = if mutation::START_UNCHECKED {
                let _ = self.word.fetch_add(add, Ordering::SeqCst);
                true
            } else {
                self.word
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |current| {
                        ((Snapshot(current).permits() as u64) < self.workers).then_some(current + add)
                    })
                    .is_ok()
            };
            return if taken { start } else { Start::NotNeeded };
        }
        let mut start = Start::NotNeeded;
        // SeqCst, as every access to the word: the protocol's "one of the
        // two sees the other" arguments rely on one total order of the
        // word's updates and the fences of `after_push`/`after_leave`.
        let _ = self.word.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |current| {
            // (Set at every try: a compare-and-swap that failed may have
            // set it, and this one may decline.)
            let (add, decided) = self.start_from(Snapshot(current)).unzip();
            start = decided.unwrap_or(Start::NotNeeded);
            add.map(|add| current + add)
        });
        start
    }

    /// What a start adds to the word `s`, and which start it is; `None`
    /// when no permit is free, or at the cap every thread is in a job (some
    /// blocked: the queued tasks wait until one of them goes on and takes a
    /// permit back, its drain loop reacquiring one).
    #[inline(always)]
    fn start_from(&self, s: Snapshot) -> Option<(u64, Start)> {
        if s.permits() as u64 >= self.workers {
            None
        } else if s.drainers() < s.threads() {
            Some((PERMIT + JOB, Start::Wake))
        } else if (s.threads() as u64) < self.max_threads {
            Some((PERMIT + JOB + THREAD, Start::Spawn))
        } else {
            None
        }
    }

    /// Undoes a [`Start::Spawn`] whose thread was not started: the pool
    /// closed, or the system refused it below the cap. A refused start is
    /// tried again by the next blocked thread's periodic look
    /// ([`Drainers::look_while_blocked`]): a blocked thread may never go on
    /// before the task it waits for runs, so waiting for one, as at the
    /// cap, could strand the queue for good.
    pub(super) fn spawn_failed(&self) -> Snapshot {
        self.update(|w| w - PERMIT - JOB - THREAD)
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

    /// A drainer leaves, giving back its permit if it holds one, and
    /// counted no more among the lookers if it looked for work (in the
    /// same update, as tokio's worker that parks): its thread waits for
    /// the next job. Returns the word after the change.
    pub(crate) fn leave(&self, holds_permit: bool, looking: bool) -> Snapshot {
        let permit = if holds_permit { PERMIT } else { 0 };
        let looker = if looking { LOOKER } else { 0 };
        self.update(|w| w - permit - looker - JOB)
    }

    /// A runtime thread blocks inside a task: it gives back its permit (if
    /// it holds one) and counts as blocked.
    pub(crate) fn block(&self, holds_permit: bool) -> Snapshot {
        let permit = if holds_permit { PERMIT } else { 0 };
        self.update(|w| w - permit + BLOCK)
    }

    /// The blocked thread goes on with its task (without a permit).
    pub(super) fn unblock(&self) -> Snapshot {
        self.update(|w| w - BLOCK)
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
    fn wakes_the_pool_up_to_the_workers_then_nothing() {
        let d = Drainers::new(2, 4, 1);
        assert_eq!(d.try_start(), Start::Wake);
        assert_eq!(d.try_start(), Start::Wake);
        assert_eq!(d.try_start(), Start::NotNeeded);
        let s = d.snapshot();
        assert_eq!((s.permits(), s.drainers(), s.threads(), s.blocked()), (2, 2, 2, 0));
    }

    #[test]
    fn a_put_starts_a_drainer_only_with_a_permit_free_and_nobody_looking() {
        let d = Drainers::new(config::MAX_WORKERS, config::HARD_MAX_THREADS, 1000);
        assert!(d.permit_free_and_nobody_looking(d.snapshot()));
        assert!(d.start_looking());
        assert!(!d.permit_free_and_nobody_looking(d.snapshot()), "one looks");
        d.stop_looking();
        for _ in 1..config::MAX_WORKERS {
            assert_eq!(d.try_start(), Start::Wake);
        }
        assert!(d.permit_free_and_nobody_looking(d.snapshot()), "one permit left");
        assert_eq!(d.try_start(), Start::Wake);
        assert!(!d.permit_free_and_nobody_looking(d.snapshot()), "every permit taken");
        for looking in 1..=MAX_LOOKERS {
            assert!(d.start_looking());
            assert_eq!(d.snapshot().lookers(), looking);
        }
        assert!(!d.start_looking(), "the field's largest count");
        let s = d.leave(true, true);
        assert_eq!((s.permits(), s.lookers(), s.drainers()), (config::MAX_WORKERS - 1, MAX_LOOKERS - 1, config::MAX_WORKERS - 1));
        assert!(!d.permit_free_and_nobody_looking(s), "a permit free, but drainers look");
    }

    #[test]
    fn a_blocked_pool_thread_is_replaced_by_a_spare_that_stays() {
        let d = Drainers::new(1, 4, 1);
        assert_eq!(d.try_start(), Start::Wake);
        let s = d.block(true);
        assert_eq!((s.permits(), s.drainers(), s.blocked()), (0, 1, 1));
        assert_eq!(d.try_start(), Start::Spawn);
        let s = d.snapshot();
        assert_eq!((s.permits(), s.drainers(), s.threads()), (1, 2, 2));
        // The blocked thread goes on; its task ends; no permit is free.
        d.unblock();
        assert!(!d.try_reacquire());
        let s = d.leave(false, false);
        assert_eq!((s.permits(), s.drainers(), s.blocked()), (1, 1, 0));
        // The spare's queue runs dry: it leaves; all is idle; both threads
        // stay, and the next start wakes one of them.
        let s = d.leave(true, false);
        assert_eq!((s.permits(), s.drainers(), s.threads()), (0, 0, 2));
        assert_eq!(d.try_start(), Start::Wake);
    }

    #[test]
    fn at_the_cap_nothing_starts_until_a_blocked_thread_goes_on() {
        let d = Drainers::new(1, 1, 1);
        assert_eq!(d.try_start(), Start::Wake);
        let _ = d.block(true);
        assert!(d.at_cap());
        assert_eq!(d.try_start(), Start::NotNeeded);
        assert_eq!(d.snapshot().permits(), 0);
        d.unblock();
        assert!(d.try_reacquire(), "the unblocked thread drains again");
    }

    /// The largest cap (`config::HARD_MAX_THREADS`) fits: the blocked
    /// field never reaches the watch flag's bit.
    #[test]
    fn the_largest_cap_fits_below_the_watch_flag() {
        let cap = crate::exec::config::HARD_MAX_THREADS;
        let d = Drainers::new(1, cap, 1);
        assert_eq!(d.try_start(), Start::Wake);
        for _ in 1..cap {
            let _ = d.block(true);
            assert_eq!(d.try_start(), Start::Spawn);
        }
        let s = d.block(true);
        assert_eq!((s.threads(), s.blocked(), s.permits()), (cap, cap, 0));
        assert!(d.at_cap());
        assert_eq!(d.try_start(), Start::NotNeeded);
        assert!(!s.watch_held(), "the watch flag untouched");
    }

    #[test]
    fn a_refused_spawn_gives_everything_back_and_a_blocked_threads_look_starts_it_again() {
        let d = Drainers::new(1, 4, 1);
        assert_eq!(d.try_start(), Start::Wake);
        let _ = d.block(true);
        assert_eq!(d.try_start(), Start::Spawn);
        let s = d.spawn_failed();
        assert_eq!((s.permits(), s.drainers(), s.threads(), s.blocked()), (0, 1, 1, 1));
        assert_eq!(d.look_while_blocked(|| false), AfterLeave::Start(Start::Spawn), "a task queued");
        assert_eq!(d.look_while_blocked(|| false), AfterLeave::Nothing, "the permit is taken");
    }
}
