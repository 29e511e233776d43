//! loom models of the scheduler's protocol (README.md beside this file,
//! "No lost wake-up"), on the real transitions of `drainers.rs`. The
//! scheduler's queue (crossbeam's injector: `SeqCst` read-modify-writes
//! and loads) is a `SeqCst` counter of queued tasks here, so the models
//! depend on the fences of `after_push`/`after_leave` just as the real
//! code does; "start a drainer" is recorded and then played out by the
//! model's main thread. Run with the crate's other loom models
//! (`make loom`).

use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;

use crate::exec::threads::drainers::{AfterLeave, Drainers, Snapshot, Start};
use crate::sync::{side, Ordering};

/// Everything settled: no permit, drainer or blocked thread is counted
/// (the threads stay: a spare lives until the pool closes).
fn assert_settled(s: Snapshot) {
    assert_eq!((s.permits(), s.drainers(), s.blocked()), (0, 0, 0), "the word is not back to zero");
}

struct Model {
    drainers: Drainers,
    queued: AtomicUsize,
}

impl Model {
    fn new(workers: usize) -> Arc<Model> {
        Arc::new(Model { drainers: Drainers::new(workers, workers + 1, 1), queued: AtomicUsize::new(0) })
    }
    /// One worker, whose pool job already holds the permit.
    fn with_one_drainer() -> Arc<Model> {
        let m = Model::new(1);
        assert_eq!(m.drainers.try_start(), Start::Wake);
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
    fn drain_and_leave(&self) -> (usize, AfterLeave) {
        let mut ran = 0;
        while self.pop() {
            ran += 1;
        }
        let after = self.drainers.leave(true, false);
        (ran, self.drainers.after_leave(after, || self.is_empty()))
    }
}

/// The drainers to start: the producer's and the leaving side's.
fn starts(from_producer: Start, from_leaver: AfterLeave) -> Vec<Start> {
    let mut starts = vec![from_producer];
    if let AfterLeave::Start(start) = from_leaver {
        starts.push(start);
    }
    starts.retain(|s| *s != Start::NotNeeded);
    starts
}

/// A push from outside against the only drainer leaving with an empty
/// queue: the task is never stranded (one of the two starts a drainer),
/// and once everything settles the word is back to zero.
#[test]
fn push_against_a_leaving_drainer() {
    loom::model(|| {
        let m = Model::with_one_drainer();
        let producer = Model::push_from_another_thread(&m);
        let leaver = {
            let m = Arc::clone(&m);
            side(move || m.drain_and_leave())
        };
        let (mut ran, after) = leaver.join().unwrap();
        let starts = starts(producer.join().unwrap(), after);
        assert!(starts.len() <= 1, "two drainers for one permit: {starts:?}");
        // The pool's thread, in no job now, takes it.
        assert!(starts.iter().all(|s| *s == Start::Wake), "a spare for a free thread: {starts:?}");
        for _ in starts {
            ran += m.drain_and_leave().0;
        }
        assert_eq!(ran, 1, "the task ran exactly once");
        assert_settled(m.drainers.snapshot());
    });
}

/// The only pool thread blocks inside its task while another thread
/// pushes the task that will end the wait: a spare is started for it
/// (by whichever side comes second), the blocked thread goes on once
/// the spare ran that task, and the word ends at zero, with the spare
/// still counted as a thread; the next start wakes a thread.
#[test]
fn a_blocked_worker_is_replaced_by_a_spare() {
    loom::model(|| {
        let m = Model::with_one_drainer();
        let producer = Model::push_from_another_thread(&m);
        // The pool thread's task blocks (`Blocked::begin`).
        let blocker = {
            let m = Arc::clone(&m);
            side(move || {
                let after = m.drainers.block(true);
                m.drainers.after_leave(after, || m.is_empty())
            })
        };
        let from_blocker = blocker.join().unwrap();
        let starts = starts(producer.join().unwrap(), from_blocker);
        assert_eq!(starts, vec![Start::Spawn], "exactly one spare takes the blocked thread's place");
        let spare = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.drain_and_leave())
        };
        // The spare runs the task, which ends the wait (modelled by the
        // join); the blocked thread goes on, then its task returns.
        let (ran, _) = spare.join().unwrap();
        assert_eq!(ran, 1);
        let _ = m.drainers.unblock();
        assert!(m.drainers.try_reacquire(), "the spare left: its permit is free again");
        let (ran, after) = m.drain_and_leave();
        assert_eq!(ran, 0);
        assert_eq!(after, AfterLeave::Idle);
        assert_settled(m.drainers.snapshot());
        assert_eq!(m.drainers.snapshot().threads(), 2);
        assert_eq!(m.drainers.try_start(), Start::Wake, "an idle thread takes the next job");
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
        let goes_on = {
            let m = Arc::clone(&m);
            side(move || {
                let _ = m.drainers.unblock();
                m.drainers.try_reacquire()
            })
        };
        let reacquired = goes_on.join().unwrap();
        let started = producer.join().unwrap();
        assert!(m.drainers.snapshot().permits() <= 1);
        assert!(reacquired != (started != Start::NotNeeded), "exactly one takes the permit");
        let ran = if reacquired {
            m.drain_and_leave().0
        } else {
            let after = m.drainers.leave(false, false);
            let _ = m.drainers.after_leave(after, || m.is_empty());
            m.drain_and_leave().0
        };
        assert_eq!(ran, 1);
        assert_settled(m.drainers.snapshot());
    });
}
