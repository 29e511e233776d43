//! loom models of spare threads against the drainers word: a spare start
//! refused by the system (and tried again by a blocked thread), and a push as
//! the only spare, or a worker, leaves (mutation 26: the kind of start
//! decided before the compare-and-swap). A spare lives until the pool closes and takes any
//! job owed (`spares.rs`), so a start needs a new thread only when every
//! thread is in a job. The model's glue is the scheduler's own: a drainer
//! drains the model's queue (a `SeqCst` counter, as in `loom_drainers.rs`'s
//! models) and leaves; a refused start gives everything back
//! (`Scheduler::start_drainer`), and a blocked thread's periodic look
//! tries it again (`Scheduler::look_while_blocked`). Owing a job to a
//! waiting thread (`pool_starts.rs`, under a lock) is played out by the
//! model: a started spare, or the model's main thread for a woken one.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use loom::sync::atomic::AtomicUsize;
use loom::thread;

use crate::exec::threads::drainers::{AfterLeave, Drainers, Start};
use crate::sync::{side, Ordering};

struct Model {
    drainers: Drainers,
    queued: AtomicUsize,
    ran: AtomicUsize,
    /// The system refuses the next spare.
    refuse: AtomicBool,
}

impl Model {
    /// One worker, and room for `spares` spares.
    fn new(spares: usize, refuse: bool) -> Arc<Model> {
        Arc::new(Model {
            drainers: Drainers::new(1, 1 + spares, 1),
            queued: AtomicUsize::new(0),
            ran: AtomicUsize::new(0),
            refuse: AtomicBool::new(refuse),
        })
    }

    fn pop(&self) -> bool {
        self.queued.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
    }

    /// `Scheduler::push`: returns a job owed to a thread in no job (a
    /// `Start::Wake`), for the model to play out.
    fn push(self: &Arc<Model>) -> Option<thread::JoinHandle<()>> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.start(self.drainers.after_push())
    }

    /// `Scheduler::start_drainer`: a spare thread that takes the job, or
    /// for a thread in no job, the job to play out.
    fn start(self: &Arc<Model>, start: Start) -> Option<thread::JoinHandle<()>> {
        match start {
            Start::NotNeeded => return None,
            Start::Wake => {}
            // (std's flag: whether the system refuses is the model's
            // setting, not a race to explore.)
            Start::Spawn if self.refuse.swap(false, std::sync::atomic::Ordering::SeqCst) => {
                let _ = self.drainers.spawn_failed();
                return None;
            }
            Start::Spawn => {}
        }
        let m = Arc::clone(self);
        Some(thread::spawn(move || m.drain_and_leave(true)))
    }

    /// `Scheduler::look_while_blocked`: a blocked thread's periodic look
    /// (`Blocked::check_stuck`).
    fn look_while_blocked(self: &Arc<Model>) -> Option<thread::JoinHandle<()>> {
        match self.drainers.look_while_blocked(|| self.queued.load(Ordering::SeqCst) == 0) {
            AfterLeave::Start(start) => self.start(start),
            _ => None,
        }
    }

    /// `Scheduler::run_drainer`: with a permit, drains the queue; leaves,
    /// and looks again (a start for what was queued meanwhile is played
    /// out here).
    fn drain_and_leave(self: &Arc<Model>, holds_permit: bool) {
        while holds_permit && self.pop() {
            self.ran.fetch_add(1, Ordering::SeqCst);
        }
        let after = self.drainers.leave(holds_permit, false);
        if let AfterLeave::Start(start) = self.drainers.after_leave(after, || self.queued.load(Ordering::SeqCst) == 0)
        {
            if let Some(next) = self.start(start) {
                next.join().unwrap();
            }
        }
    }

    /// The only pool thread takes its permit and blocks inside a task
    /// (on the task that the model's producer pushes).
    fn block_the_pool_thread(&self) {
        assert_eq!(self.drainers.try_start(), Start::Wake);
        let _ = self.drainers.block(true);
    }

    /// The blocked pool thread goes on (the task it waited for ran) and its
    /// task returns: with a permit it drains what is left, else it leaves.
    fn unblock_and_finish(self: &Arc<Model>) {
        let _ = self.drainers.unblock();
        let holds_permit = self.drainers.try_reacquire();
        self.drain_and_leave(holds_permit);
    }

    /// Every task ran once, and the word is settled.
    fn check(&self, tasks: usize) {
        assert_eq!(self.ran.load(Ordering::SeqCst), tasks, "a task was stranded or ran twice");
        let s = self.drainers.snapshot();
        assert_eq!((s.permits(), s.drainers(), s.blocked()), (0, 0, 0), "the word is not settled");
    }
}

/// One worker (blocked), one spare: the spare runs a task and leaves while
/// another thread pushes the next. The push finds the spare draining (no
/// start: it holds the permit, and its look after its leave sees the task)
/// or gone from its job (it wakes a thread in no job: the spare, which
/// lives on), never a second spare, and every task runs once.
#[test]
fn a_push_as_the_only_spare_leaves_wakes_it_again() {
    loom::model(|| {
        let m = Model::new(1, false);
        m.block_the_pool_thread();
        let spare = m.push().expect("the first push starts the spare");
        let producer = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.push())
        };
        if let Some(woken) = producer.join().unwrap() {
            woken.join().unwrap();
        }
        spare.join().unwrap();
        assert_eq!(m.drainers.snapshot().threads(), 2, "a second spare was started");
        m.unblock_and_finish();
        m.check(2);
    });
}

/// The system refuses the spare while another push is in flight: the
/// refused start gives its permit, its job and its thread back. The queued
/// tasks then wait for the next start or for the blocked thread to go on,
/// which here drains what is left.
#[test]
fn a_spare_start_refused_by_the_system_gives_everything_back() {
    loom::model(|| {
        let m = Model::new(1, true);
        m.block_the_pool_thread();
        let producer = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.push())
        };
        let mine = {
            let m = Arc::clone(&m);
            side(move || m.push())
        };
        let mine = mine.join().unwrap();
        let theirs = producer.join().unwrap();
        for started in [mine, theirs].into_iter().flatten() {
            started.join().unwrap();
        }
        m.unblock_and_finish();
        m.check(2);
        assert!(m.drainers.snapshot().threads() <= 2);
    });
}

/// The system refuses the spare for the task that would end the only
/// worker's wait, while that blocked thread wakes for its periodic look;
/// it wakes once more later (its wait cannot end before the task runs).
/// The start is tried again and the task runs, with the worker still
/// blocked. Without the look (mutation 6) the task is stranded, as every
/// time before the retry existed (issue 25).
#[test]
fn a_spare_start_refused_by_the_system_is_retried_by_a_blocked_thread() {
    loom::model(|| {
        let m = Model::new(1, true);
        m.block_the_pool_thread();
        let producer = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.push())
        };
        // The blocked thread wakes for its look at any time.
        let blocked = {
            let m = Arc::clone(&m);
            side(move || m.look_while_blocked())
        };
        let first = blocked.join().unwrap();
        let pushed = producer.join().unwrap();
        let second = m.look_while_blocked();
        for started in [first, pushed, second].into_iter().flatten() {
            started.join().unwrap();
        }
        assert_eq!(m.ran.load(Ordering::SeqCst), 1, "a task was stranded: it waits for a blocked thread that never goes on");
        m.unblock_and_finish();
        m.check(1);
    });
}

/// Two workers, one blocked inside its task and one draining, and a push:
/// the start it makes is a wake when a thread is in no job at its
/// compare-and-swap, a spare only when every thread is in one (row 17).
/// Here the draining worker leaves as the push starts: if the leave came
/// first (it saw the two threads alone), the push wakes its thread. With
/// the kind of start decided on a load before the compare-and-swap
/// (mutation 26) loom finds a spare started beside the thread that left.
#[test]
fn a_push_as_a_worker_leaves_wakes_its_thread_rather_than_a_spare() {
    loom::model(|| {
        let drainers = Arc::new(Drainers::new(2, 3, 1));
        assert_eq!(drainers.try_start(), Start::Wake);
        assert_eq!(drainers.try_start(), Start::Wake);
        // The first worker's task blocks, without a task stack.
        let _ = drainers.block(true);
        let producer = {
            let drainers = Arc::clone(&drainers);
            side(move || drainers.try_start())
        };
        let leaver = {
            let drainers = Arc::clone(&drainers);
            side(move || drainers.leave(true, false))
        };
        let started = producer.join().unwrap();
        let after_leave = leaver.join().unwrap();
        assert_ne!(started, Start::NotNeeded, "a permit was free");
        assert!(
            started == Start::Wake || after_leave.threads() == 3,
            "a spare started beside a thread in no job"
        );
    });
}
