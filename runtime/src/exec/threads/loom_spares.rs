//! loom models of a spare thread's life against the drainers word, on the
//! real [`Spares`] and [`Drainers`]: a spare start refused at the cap or
//! by the system (and retried by a blocked thread), and a spare that goes
//! idle while a push is in flight. The model's glue is the
//! scheduler's own: a spare's job drains the model's queue (a `SeqCst`
//! counter, as in `loom_drainers.rs`'s models), then leaves through
//! [`SpareThread::before_leaving`], a refused start gives the permit back
//! (`Scheduler::start_drainer`), and a blocked thread's periodic look
//! tries a refused start again (`Scheduler::retry_refused_start`).

use std::sync::Arc;

use loom::sync::atomic::AtomicUsize;
use loom::thread;

use crate::exec::threads::drainers::{AfterLeave, DrainerKind, Drainers, Start};
use crate::exec::threads::spares::{spawn_thread, NotStarted, SpareThread, Spares, SpawnFn};
use crate::sync::thread::JoinHandle;
use crate::sync::Ordering;

struct Model {
    drainers: Drainers,
    queued: AtomicUsize,
    ran: AtomicUsize,
    spares: Arc<Spares>,
}

impl Model {
    /// One worker, at most `max_spares` spares.
    fn new(max_spares: usize, spawn: SpawnFn) -> Arc<Model> {
        Arc::new(Model {
            drainers: Drainers::new(1),
            queued: AtomicUsize::new(0),
            ran: AtomicUsize::new(0),
            spares: Spares::with_spawn(max_spares, spawn),
        })
    }

    fn pop(&self) -> bool {
        self.queued.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
    }

    /// `Scheduler::push`.
    fn push(self: &Arc<Model>) {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.start(self.drainers.after_push());
    }

    /// `Scheduler::start_drainer` (the pool thread is blocked in these
    /// models, so every start is a spare's).
    fn start(self: &Arc<Model>, start: Start) {
        match start {
            Start::NotNeeded => {}
            Start::PoolJob => unreachable!("the only pool thread is in its job"),
            Start::Spare => {
                let m = Arc::clone(self);
                match self.spares.run(Box::new(move |spare: &SpareThread| m.drain_as_spare(spare))) {
                    Ok(_) => {}
                    Err(NotStarted::AtCap) => {
                        let _ = self.drainers.spare_failed();
                    }
                    Err(NotStarted::Refused(_)) => {
                        let _ = self.drainers.spare_refused();
                    }
                }
            }
        }
    }

    /// `Scheduler::retry_refused_start`: a blocked thread's periodic look
    /// (`Blocked::check_stuck`).
    fn retry_refused(self: &Arc<Model>) {
        if let AfterLeave::Start(start) = self.drainers.retry_refused(|| self.queued.load(Ordering::SeqCst) == 0) {
            self.start(start);
        }
    }

    /// `Scheduler::run_drainer` on a spare thread.
    fn drain_as_spare(self: &Arc<Model>, spare: &SpareThread) {
        while self.pop() {
            self.ran.fetch_add(1, Ordering::SeqCst);
        }
        let after = spare.before_leaving(|| self.drainers.leave(DrainerKind::Spare, true));
        if let AfterLeave::Start(start) = self.drainers.after_leave(after, || self.queued.load(Ordering::SeqCst) == 0)
        {
            self.start(start);
        }
    }

    /// The only pool thread takes its permit and blocks inside a task
    /// (on the task that the model's producer pushes).
    fn block_the_pool_thread(&self) {
        assert_eq!(self.drainers.try_start(), Start::PoolJob);
        let _ = self.drainers.block(true);
    }

    /// Ends the spares (each runs the jobs handed to it first) and
    /// checks that every task ran once and the spares left the word.
    fn shut_down_and_check(&self, tasks: usize) {
        self.spares.shutdown();
        assert_eq!(self.spares.alive(), 0, "a spare still counts as alive");
        assert_eq!(self.ran.load(Ordering::SeqCst), tasks, "a task was stranded or ran twice");
        let s = self.drainers.snapshot();
        assert_eq!((s.permits(), s.pool_jobs(), s.spares(), s.blocked()), (0, 1, 0, 1));
    }
}

/// One worker (blocked), one spare: the spare runs a task while another
/// thread pushes the next, and every task runs once.
fn push_while_the_only_spare_finishes() {
    loom::model(move || {
        let m = Model::new(1, spawn_thread);
        m.block_the_pool_thread();
        m.push();
        let producer = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.push())
        };
        producer.join().unwrap();
        m.shut_down_and_check(2);
    });
}

/// One worker (blocked), one spare: the spare runs a task, and the
/// task that ends the wait is pushed while that spare goes idle. The
/// start that push asks for is refused at the cap when the spare is
/// still counted as alive but not yet idle; the task must run anyway.
#[test]
fn a_push_as_the_only_spare_goes_idle_is_run() {
    push_while_the_only_spare_finishes();
}

/// Whether each model that refuses a start has refused it in this run
/// (one flag per model: the test harness runs models in parallel).
static REFUSED: [std::sync::atomic::AtomicBool; 2] = [const { std::sync::atomic::AtomicBool::new(false) }; 2];

/// A [`SpawnFn`] that refuses the first start of each run of model
/// `MODEL`, as the system does at its limit, and starts the others.
fn refuse_once<const MODEL: usize>(name: String, main: Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>> {
    if !REFUSED[MODEL].swap(true, std::sync::atomic::Ordering::SeqCst) {
        return Err(std::io::Error::new(std::io::ErrorKind::WouldBlock, "refused by the model"));
    }
    spawn_thread(name, main)
}

/// The system refuses the first spare thread while another push is in
/// flight: the refused start gives its permit and its count back. The
/// queued tasks then wait for the next start or for the blocked thread to
/// go on, which here drains what is left. (That the slot comes back too:
/// `spares.rs`'s tests.)
#[test]
fn a_spare_start_refused_by_the_system_gives_everything_back() {
    loom::model(|| {
        REFUSED[0].store(false, std::sync::atomic::Ordering::SeqCst);
        let m = Model::new(1, refuse_once::<0>);
        m.block_the_pool_thread();
        let producer = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.push())
        };
        m.push();
        producer.join().unwrap();
        // The blocked pool thread goes on: with a permit it drains the
        // queue, else (a spare holds it) it leaves.
        let _ = m.drainers.unblock();
        let holds_permit = m.drainers.try_reacquire();
        if holds_permit {
            while m.pop() {
                m.ran.fetch_add(1, Ordering::SeqCst);
            }
        }
        let after = m.drainers.leave(DrainerKind::PoolJob, holds_permit);
        if let AfterLeave::Start(start) = m.drainers.after_leave(after, || m.queued.load(Ordering::SeqCst) == 0) {
            m.start(start);
        }
        m.spares.shutdown();
        assert_eq!(m.spares.alive(), 0, "the refused start still counts as alive");
        assert_eq!(m.ran.load(Ordering::SeqCst), 2, "a task was stranded or ran twice");
        let s = m.drainers.snapshot();
        assert_eq!((s.permits(), s.drainers(), s.blocked()), (0, 0, 0));
    });
}

/// The system refuses the spare for the task that would end the only
/// worker's wait, while that blocked thread wakes for its periodic look;
/// it wakes once more later (its wait cannot end before the task runs).
/// The start is tried again and the task runs, with the worker still
/// blocked. With the retry flag raised before the permit goes back
/// (mutation 6), loom finds the look that takes the flag down while every
/// permit is still taken: the task is stranded, as every time before the
/// retry existed (issue 25).
#[test]
fn a_spare_start_refused_by_the_system_is_retried_by_a_blocked_thread() {
    loom::model(|| {
        REFUSED[1].store(false, std::sync::atomic::Ordering::SeqCst);
        let m = Model::new(1, refuse_once::<1>);
        m.block_the_pool_thread();
        let producer = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.push())
        };
        m.retry_refused();
        producer.join().unwrap();
        m.retry_refused();
        m.shut_down_and_check(1);
    });
}
