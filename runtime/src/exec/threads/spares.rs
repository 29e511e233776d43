//! Spare threads: started on demand to take the place of runtime threads
//! blocked in an `Await*`, idle once their work is done, and ended when the
//! instance shuts down. They never end earlier: the spares alive are the
//! most threads the program ever had blocked at once, at most the cap, as
//! rayon's pool keeps its threads for the pool's life (why they no longer
//! expire: docs/decisions/spares.md).
//!
//! This module only runs jobs on threads; the scheduler decides when a
//! spare is needed (`drainers.rs`) and what it runs (its drain loop).
//!
//! Two rules keep a spare's life consistent with the scheduler's counts:
//! - A job announces that its thread is about to become idle
//!   ([`SpareThread::before_leaving`]) *before* the scheduler stops counting
//!   it as a drainer: a spare is never in a state where the scheduler no
//!   longer counts it and [`Spares::run`] cannot hand it a job, so a start
//!   refused at the cap never strands a task that an idle spare could run.
//! - Every spare thread is joined by [`Spares::shutdown`]: a spare's
//!   thread-local destructors have finished before the instance that owns
//!   it can be freed.

use std::sync::Arc;

use crate::exec::config::platform_stack_size;
use crate::sync::thread::{self, Builder, JoinHandle, Thread};
use crate::sync::{lock, Mutex};

/// A job for a spare thread; it is told which thread runs it.
pub(super) type Job = Box<dyn FnOnce(&SpareThread) + Send>;

/// Starts a named thread running `main` (the OS may refuse).
pub(super) type SpawnFn = fn(String, Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>>;

/// What a job knows of the spare thread that runs it.
pub(super) struct SpareThread {
    spares: Arc<Spares>,
    slot: usize,
    /// The running job announced this thread idle ([`Self::before_leaving`]).
    announced: std::cell::Cell<bool>,
}

/// Everything about the spares, behind one lock: a job is handed over
/// (taken off the idle list and stored for its spare) in one step, so a
/// spare that finds itself off the idle list always finds its job.
struct State {
    /// The slots of the spares that can take a job now, most recently idle
    /// last.
    idle: Vec<usize>,
    /// The job handed to each slot's spare, until it takes it.
    jobs: Vec<Option<Job>>,
    /// Each slot's spare thread, to wake it; the spares alive are the
    /// slots `0..threads.len()`.
    threads: Vec<Thread>,
    /// Their handles, joined at shutdown.
    handles: Vec<JoinHandle<()>>,
    /// Set by `shutdown`: idle spares end.
    closing: bool,
}

/// The spare threads of one runtime instance.
pub(super) struct Spares {
    state: Mutex<State>,
    max: usize,
    spawn: SpawnFn,
}

/// Why [`Spares::run`] started no thread (and dropped its job unrun).
#[derive(Debug)]
pub(super) enum NotStarted {
    /// The cap is reached, or the spares are shutting down.
    AtCap,
    /// Below the cap, the system refused a thread (`EAGAIN`: its limit on
    /// processes, `ulimit -u`, or memory).
    Refused(std::io::Error),
}

/// Starts a runtime thread with the platform's stack size, as every
/// runtime thread (`config::platform_stack_size`: compiled code may nest
/// deeply within one task, as deep as on a thread of the program).
pub(super) fn spawn_thread(name: String, main: Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>> {
    let builder = Builder::new().name(name).stack_size(platform_stack_size());
    // Outside any fork (`sync::spawn`); a loom model has no fork, and its
    // threads are loom's.
    #[cfg(not(loom))]
    return crate::sync::spawn::spawn(builder, main);
    #[cfg(loom)]
    builder.spawn(main)
}

impl Spares {
    /// At most `max` spare threads alive at once.
    pub(crate) fn new(max: usize) -> Arc<Spares> {
        Spares::with_spawn(max, spawn_thread)
    }

    /// [`Spares::new`], starting threads with `spawn`.
    pub(super) fn with_spawn(max: usize, spawn: SpawnFn) -> Arc<Spares> {
        Arc::new(Spares {
            state: Mutex::new(State {
                idle: Vec::new(),
                jobs: (0..max).map(|_| None).collect(),
                threads: Vec::new(),
                handles: Vec::new(),
                closing: false,
            }),
            max,
            spawn,
        })
    }

    /// Runs `job` on an idle spare, or on a new one if none is idle and the
    /// cap allows (then returns true). At the cap, while shutting down, or
    /// if the system refuses a thread, `job` is dropped unrun; the caller
    /// reports a refusal (this says nothing on stderr).
    pub(crate) fn run(self: &Arc<Spares>, job: Job) -> Result<bool, NotStarted> {
        let mut state = lock(&self.state);
        if let Some(slot) = state.idle.pop() {
            state.jobs[slot] = Some(job);
            let thread = state.threads[slot].clone();
            drop(state);
            thread.unpark();
            return Ok(false);
        }
        let slot = state.threads.len();
        if slot >= self.max || state.closing {
            return Err(NotStarted::AtCap);
        }
        let name = format!("mlir-async-spare-{}", slot + 1);
        let spares = Arc::clone(self);
        // Under the lock: the new spare's first look at it (its idle
        // announcement) finds its thread known.
        let handle = (self.spawn)(name, Box::new(move || spares.thread_main(slot, job))).map_err(NotStarted::Refused)?;
        state.threads.push(handle.thread().clone());
        state.handles.push(handle);
        Ok(true)
    }

    /// Every spare the cap allows is alive: [`Spares::run`] starts no new
    /// one (it may still hand a job to an idle one).
    pub(super) fn at_cap(&self) -> bool {
        lock(&self.state).threads.len() >= self.max
    }

    /// Spare threads alive now.
    pub(crate) fn alive(&self) -> usize {
        lock(&self.state).threads.len()
    }

    fn thread_main(self: Arc<Spares>, slot: usize, first: Job) {
        let me = SpareThread { spares: Arc::clone(&self), slot, announced: std::cell::Cell::new(false) };
        let mut job = first;
        loop {
            // A panic here is a bug of the runtime (tasks are C functions
            // and cannot unwind into it): end the process with one line.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&me))).is_err() {
                crate::sync::misuse::abort_misuse("spare thread", "the runtime panicked");
            }
            match self.wait_for_job(&me) {
                Some(next) => job = next,
                None => {
                    // Ended: only its thread-local destructors still run.
                    crate::probe::fuzz::at_transition();
                    return;
                }
            }
        }
    }

    /// Parks this spare in the idle list (if its job did not already put
    /// it there) until it gets a job; `None` at shutdown.
    fn wait_for_job(&self, me: &SpareThread) -> Option<Job> {
        let mut state = lock(&self.state);
        if !me.announced.replace(false) {
            state.idle.push(me.slot);
        }
        loop {
            if let Some(job) = state.jobs[me.slot].take() {
                return Some(job);
            }
            // Still on the idle list: no job was handed over (that takes
            // the spare off the list and stores its job in one step).
            if state.closing {
                // Off the idle list as it ends, in one step: no job is
                // handed to it from here on.
                let pos = state.idle.iter().position(|&s| s == me.slot).expect("an idle spare without a job is listed");
                state.idle.swap_remove(pos);
                return None;
            }
            drop(state);
            thread::park();
            state = lock(&self.state);
        }
    }

    /// Ends every spare thread and waits for them. The caller guarantees
    /// that no job is running or will be handed over.
    pub(crate) fn shutdown(&self) {
        let handles = {
            let mut state = lock(&self.state);
            state.closing = true;
            for thread in &state.threads {
                thread.unpark();
            }
            std::mem::take(&mut state.handles)
        };
        // Each runs the job handed to it, if any, before it ends.
        for handle in handles {
            if handle.join().is_err() {
                crate::sync::misuse::abort_misuse("spare thread", "a spare thread panicked");
            }
        }
        lock(&self.state).threads.clear();
    }
}

impl SpareThread {
    /// This spare's slot: `0..max`, unique among the spares alive.
    pub(crate) fn slot(&self) -> usize {
        self.slot
    }

    /// Runs `leave` (the scheduler's count of this drainer going away)
    /// once this thread can take a new job: from the moment the scheduler
    /// stops counting it, [`Spares::run`] finds it idle. A job handed over
    /// before this job returns runs right after it.
    pub(super) fn before_leaving<R>(&self, leave: impl FnOnce() -> R) -> R {
        if !self.announced.replace(true) {
            lock(&self.spares.state).idle.push(self.slot);
        }
        leave()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_start_refused_by_the_system_takes_no_slot() {
        static REFUSED: AtomicBool = AtomicBool::new(false);
        fn refuse_once(name: String, main: Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>> {
            if !REFUSED.swap(true, Ordering::SeqCst) {
                return Err(std::io::Error::new(std::io::ErrorKind::WouldBlock, "refused by the test"));
            }
            spawn_thread(name, main)
        }
        let spares = Spares::with_spawn(1, refuse_once);
        assert!(matches!(spares.run(Box::new(|_| {})), Err(NotStarted::Refused(_))), "a refusal, not the cap");
        assert_eq!(spares.alive(), 0);
        let (tx, rx) = mpsc::channel();
        assert!(spares.run(Box::new(move |spare| tx.send(spare.slot()).unwrap())).unwrap());
        assert_eq!(rx.recv().unwrap(), 0, "the only slot");
        spares.shutdown();
    }

    /// A spare's thread-local destructors run after its closure returned
    /// (`JoinHandle::is_finished` is already true then): shutdown must
    /// still wait for them (the instance is freed after shutdown, and a
    /// destructor may touch it).
    #[test]
    fn shutdown_returns_only_after_every_spare_thread_ended_completely() {
        static DONE: AtomicUsize = AtomicUsize::new(0);
        struct SlowDrop;
        impl Drop for SlowDrop {
            fn drop(&mut self) {
                std::thread::sleep(Duration::from_millis(100));
                DONE.fetch_add(1, Ordering::SeqCst);
            }
        }
        thread_local! { static SLOW: SlowDrop = const { SlowDrop }; }
        let spares = Spares::new(2);
        let (tx, rx) = mpsc::channel();
        assert!(spares.run(Box::new(move |_| SLOW.with(|_| tx.send(()).unwrap()))).unwrap());
        rx.recv().unwrap();
        spares.shutdown();
        assert_eq!(DONE.load(Ordering::SeqCst), 1, "a spare's thread-local destructor ran after shutdown returned");
        assert_eq!(spares.alive(), 0);
    }

    /// An idle spare takes the next job: a thousand jobs at a cap of one
    /// all run on the one spare thread, started once; the cap refuses a
    /// second while it runs one.
    #[test]
    fn an_idle_spare_takes_the_next_job() {
        let spares = Spares::new(1);
        let ran = Arc::new(AtomicUsize::new(0));
        let mut started = 0;
        for _ in 0..1000 {
            let (tx, rx) = mpsc::channel();
            loop {
                let (ran, tx) = (Arc::clone(&ran), tx.clone());
                match spares.run(Box::new(move |spare| {
                    assert_eq!(spare.slot(), 0);
                    ran.fetch_add(1, Ordering::SeqCst);
                    tx.send(std::thread::current().id()).unwrap();
                })) {
                    Ok(new) => {
                        started += usize::from(new);
                        break;
                    }
                    // The only spare still runs its last job.
                    Err(NotStarted::AtCap) => std::thread::yield_now(),
                    Err(NotStarted::Refused(e)) => panic!("the system refused a thread: {e}"),
                }
            }
            rx.recv().unwrap();
        }
        assert_eq!(started, 1, "a spare was started again");
        assert_eq!(spares.alive(), 1);
        spares.shutdown();
        assert_eq!(ran.load(Ordering::SeqCst), 1000);
        assert!(lock(&spares.state).handles.is_empty());
    }
}
