//! loom models of an outside thread's entry (README.md beside this file,
//! "A waiting thread runs its producers", "No lost task"): a task that a thread
//! outside the pool queued on its entry is taken even when its owner never
//! takes it back (it spins on memory, or waits in a condvar), on the real
//! [`Drainers`] and [`after_last_leave`]. The glue is the
//! scheduler's, step for step: `Scheduler::push_from_outside` (push, then
//! `after_local_push`: start a drainer if [`Drainers::should_start`]), a
//! drainer's last look and leave (`Scheduler::look_for_work`,
//! `Scheduler::run_drainer`), and `Scheduler::act_after_leave`.
//!
//! The entry's deque (crossbeam's `Worker`, in the registry's
//! process-wide atomics, outside loom's reach) is a counter here, pushed
//! with a release and looked at with an acquire, as crossbeam's `back`
//! index is: the models depend on the protocol's own fences, as the real
//! code does. `make loom` runs them; `scripts/check/mutations.sh` checks
//! that the first one fails without the last drainer's look at the
//! entries (mutation 12) and without the fence before it (mutation 13,
//! `Drainers::after_leave`'s).

use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;

use crate::exec::threads::drainers::{AfterLeave, Drainers, Start};
use crate::exec::threads::lookout::after_last_leave;
use crate::sync::{side, Ordering};

struct Model {
    drainers: Drainers,
    /// Tasks in the outside thread's entry.
    entry: AtomicUsize,
    /// Tasks taken out of the entry by drainers.
    taken: AtomicUsize,
}

impl Model {
    /// `workers` pool threads, each already in a drain job; one drainer
    /// may look for work at once.
    fn new(workers: usize) -> Arc<Model> {
        let m = Arc::new(Model {
            drainers: Drainers::new(workers, workers, 1),
            entry: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
        });
        for _ in 0..workers {
            assert_eq!(m.drainers.try_start(), Start::Wake);
        }
        m
    }

    /// `Scheduler::push_from_outside`: the push, then the producer's
    /// fence and look at the permits and the lookers.
    fn push_from_outside(&self) -> Start {
        // Release, as crossbeam's store of the deque's `back` index (only
        // the owner pushes: a load and a store).
        let n = self.entry.load(Ordering::Relaxed);
        self.entry.store(n + 1, Ordering::Release);
        if self.drainers.should_start() {
            self.drainers.try_start()
        } else {
            Start::NotNeeded
        }
    }

    /// `Deques::any_outside_task`: an acquire load, as crossbeam's
    /// `Stealer::is_empty` reads `back`.
    fn any_outside_task(&self) -> bool {
        self.entry.load(Ordering::Acquire) > 0
    }

    /// A drainer's look at the entry: takes its task if there is one.
    fn look(&self) -> bool {
        let stolen = self.entry.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok();
        if stolen {
            self.taken.fetch_add(1, Ordering::SeqCst);
        }
        stolen
    }

    /// A drainer found nothing and leaves (`looking`: it looked for work):
    /// its leave of the word, then `Scheduler::after_leave` and
    /// `act_after_leave` (the shared queue is empty throughout). Returns
    /// the drainer it starts.
    fn leave(&self, looking: bool) -> Start {
        let after = self.drainers.leave(true, looking);
        match self.drainers.after_leave(after, || true) {
            AfterLeave::Start(start) => start,
            AfterLeave::Idle => after_last_leave(&self.drainers, || self.any_outside_task()).unwrap_or(Start::NotNeeded),
            AfterLeave::Nothing => self.drainers.after_looking(|| self.any_outside_task()),
        }
    }

    /// The looking drainer's last look, then (finding nothing) it stops
    /// looking and leaves.
    fn last_look_and_leave(&self) -> Start {
        if self.look() {
            // It runs the task; the model ends its life there.
            return Start::NotNeeded;
        }
        self.leave(true)
    }

    /// Every drainer started looks once; then exactly one task was taken.
    fn assert_taken_once(&self, starts: &[Start], permits: usize) {
        let started = starts.iter().filter(|s| **s != Start::NotNeeded).count();
        assert!(started <= permits, "more drainers than permits: {starts:?}");
        for _ in 0..started {
            self.look();
        }
        assert_eq!(self.taken.load(Ordering::SeqCst), 1, "the task queued on the outside entry was stranded");
    }
}

/// An outside thread queues a task on its entry, and never takes it back,
/// while the only drainer, looking for work, has its last look and leaves:
/// the producer saw the permit taken and started nobody; the drainer, the
/// last to leave, finds the scheduler idle by its word. Its look at the
/// entries after its fence takes care of the task, or the producer's
/// look came after the leave and started a drainer. Without that look
/// (mutation 12), or without the fence before it (mutation 13), loom finds
/// the task stranded.
#[test]
fn a_task_queued_on_an_entry_as_the_last_drainer_leaves_is_taken() {
    loom::model(|| {
        let m = Model::new(1);
        assert!(m.drainers.start_looking());
        let producer = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.push_from_outside())
        };
        let drainer = {
            let m = Arc::clone(&m);
            side(move || m.last_look_and_leave())
        };
        let from_drainer = drainer.join().unwrap();
        let from_producer = producer.join().unwrap();
        m.assert_taken_once(&[from_drainer, from_producer], 1);
    });
}

/// The over-cap rule: a drainer that finds enough drainers looking already
/// leaves without looking at the entries (it leaves young outside tasks to
/// the lookers), while the looker has its last look and leaves too, and an
/// outside thread queues a task. Whichever of the two drainers leaves last
/// takes care of the task.
#[test]
fn a_drainer_over_the_cap_leaves_entry_tasks_to_the_lookers() {
    loom::model(|| {
        let m = Model::new(2);
        assert!(m.drainers.start_looking());
        // The other drainer found no task and enough drainers looking.
        assert!(!m.drainers.start_looking(), "one drainer looks already: the other is over the cap");
        let over_cap = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.leave(false))
        };
        let producer = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.push_from_outside())
        };
        let looker = {
            let m = Arc::clone(&m);
            side(move || m.last_look_and_leave())
        };
        let from_looker = looker.join().unwrap();
        let from_over_cap = over_cap.join().unwrap();
        let from_producer = producer.join().unwrap();
        m.assert_taken_once(&[from_looker, from_over_cap, from_producer], 2);
    });
}
