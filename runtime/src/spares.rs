//! Spare threads: started on demand to take the place of runtime threads
//! blocked in an `Await*`, cached once their work is done, and ended after
//! a while without work or when the instance shuts down.
//!
//! This module only runs jobs on threads; the scheduler decides when a
//! spare is needed (`src/drainers.rs`) and what it runs (its drain loop).

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::sync::process::{lock, Mutex};
use crate::sync::thread::{self, Thread};

/// A job for a spare thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// Stack size of every runtime thread: compiled code may nest deeply within
/// one task; match the main thread's usual 8 MiB (reserved, not committed).
pub(crate) const STACK_SIZE: usize = 8 << 20;

/// The hand-over point of one idle spare.
struct Mailbox {
    job: Mutex<Option<Job>>,
    thread: Thread,
}

struct State {
    /// Spares waiting for a job, most recently idle last.
    idle: Vec<Arc<Mailbox>>,
    /// Spare threads alive (running a job or idle).
    alive: usize,
    /// Every spare thread started and not yet joined.
    handles: Vec<JoinHandle<()>>,
    /// Set by `shutdown`: idle spares end.
    closing: bool,
    /// Spare threads started so far (for their names).
    started: usize,
}

/// The spare threads of one runtime instance.
pub(crate) struct Spares {
    state: Mutex<State>,
    max: usize,
    /// A spare that waits this long without work ends.
    keep_alive: Duration,
}

/// [`Spares::run`] could not start a thread: the cap is reached.
#[derive(Debug)]
pub(crate) struct AtCap;

impl Spares {
    /// At most `max` spare threads alive at once, each ending after
    /// `keep_alive` without work.
    pub(crate) fn new(max: usize, keep_alive: Duration) -> Arc<Spares> {
        Arc::new(Spares {
            state: Mutex::new(State {
                idle: Vec::new(),
                alive: 0,
                handles: Vec::new(),
                closing: false,
                started: 0,
            }),
            max,
            keep_alive,
        })
    }

    /// Runs `job` on an idle spare, or on a new one if none is idle and the
    /// cap allows (then returns true). At the cap, or if the system refuses
    /// a thread, `job` is dropped unrun.
    pub(crate) fn run(self: &Arc<Spares>, job: Job) -> Result<bool, AtCap> {
        let mut state = lock(&self.state);
        if let Some(mailbox) = state.idle.pop() {
            drop(state);
            *lock(&mailbox.job) = Some(job);
            mailbox.thread.unpark();
            return Ok(false);
        }
        if state.alive >= self.max || state.closing {
            return Err(AtCap);
        }
        state.alive += 1;
        state.started += 1;
        state.handles.retain(|h| !h.is_finished());
        let name = format!("mlir-async-spare-{}", state.started);
        let spares = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(name)
            .stack_size(STACK_SIZE)
            .spawn(move || spares.thread_main(job));
        match spawned {
            Ok(handle) => {
                state.handles.push(handle);
                Ok(true)
            }
            Err(e) => {
                // The system refused a thread: as good as the cap.
                state.alive -= 1;
                drop(state);
                crate::misuse::warn(&format!("cannot start a spare thread: {e}"));
                Err(AtCap)
            }
        }
    }

    /// Every spare the cap allows is alive: [`Spares::run`] starts no new
    /// one (it may still hand a job to an idle one).
    pub(crate) fn at_cap(&self) -> bool {
        lock(&self.state).alive >= self.max
    }

    /// Spare threads alive now.
    pub(crate) fn alive(&self) -> usize {
        lock(&self.state).alive
    }

    fn thread_main(self: Arc<Spares>, first: Job) {
        let mut job = first;
        loop {
            // A panic here is a bug of the runtime (tasks are C functions
            // and cannot unwind into it): end the process with one line.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
                crate::misuse::abort_misuse("spare thread", "the runtime panicked");
            }
            match self.wait_for_job() {
                Some(next) => job = next,
                None => return,
            }
        }
    }

    /// Parks this spare in the idle list until it gets a job; `None` when
    /// it should end (idle too long, or shutdown).
    fn wait_for_job(&self) -> Option<Job> {
        let mailbox = Arc::new(Mailbox { job: Mutex::new(None), thread: thread::current() });
        {
            let mut state = lock(&self.state);
            if state.closing {
                state.alive -= 1;
                return None;
            }
            state.idle.push(Arc::clone(&mailbox));
        }
        let deadline = std::time::Instant::now() + self.keep_alive;
        loop {
            if let Some(job) = lock(&mailbox.job).take() {
                return Some(job);
            }
            let now = std::time::Instant::now();
            let closing = lock(&self.state).closing;
            if now >= deadline || closing {
                let mut state = lock(&self.state);
                // A job may have been handed over meanwhile: the hand-over
                // pops the mailbox from the idle list first, under this lock.
                if let Some(pos) = state.idle.iter().position(|m| Arc::ptr_eq(m, &mailbox)) {
                    state.idle.swap_remove(pos);
                    state.alive -= 1;
                    return None;
                }
                drop(state);
                // Popped: the job is on its way (stored before the unpark).
                continue;
            }
            thread::park_timeout(deadline - now);
        }
    }

    /// Ends every spare thread and waits for them. The caller guarantees
    /// that no job is running or will be handed over.
    pub(crate) fn shutdown(&self) {
        let handles = {
            let mut state = lock(&self.state);
            state.closing = true;
            for mailbox in &state.idle {
                mailbox.thread.unpark();
            }
            std::mem::take(&mut state.handles)
        };
        for handle in handles {
            if handle.join().is_err() {
                crate::misuse::abort_misuse("__mlir_execution_engine_destroy", "a spare thread panicked");
            }
        }
    }
}
