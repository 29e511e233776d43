//! Per-thread task deques and the registry that lets drainers steal from
//! each other, as in rayon: a runtime thread pushes the tasks it makes
//! ready (`mlirAsyncRuntimeExecute` inside a task) onto its own deque and
//! pops the newest first, so a recursive spawner runs depth-first; an idle
//! drainer steals the oldest from another thread's deque.
//!
//! Every runtime thread of a scheduler (pool threads and spares) has one
//! slot in the registry: pool threads the slot of their rayon index, spares
//! the slot after those that their spare number gives (unique among the
//! spares alive, `spares.rs`). A thread registers its deque when it
//! first drains; a slot whose thread ended keeps that thread's (empty)
//! deque's stealer until the next thread of the slot registers its own.
//! Nothing here is touched when a thread exits, so a thread's exit never
//! reaches into its scheduler.

use crossbeam_deque::{Steal, Stealer, Worker};

use crate::base::task::Task;
use crate::sync::process::{AtomicUsize, Ordering};
use crate::sync::{lock, Mutex};

pub(super) struct Deques {
    /// One stealer per thread slot; `None` until a thread drains there.
    stealers: Box<[Mutex<Option<Stealer<Task>>>]>,
    /// One past the highest slot ever registered: thieves look no further.
    high: AtomicUsize,
}

impl Deques {
    /// A registry for up to `max_threads` threads.
    pub(crate) fn new(max_threads: usize) -> Deques {
        Deques { stealers: (0..max_threads).map(|_| Mutex::new(None)).collect(), high: AtomicUsize::new(0) }
    }

    /// Creates the deque of the thread in `slot` and registers it.
    pub(crate) fn register(&self, slot: usize) -> Worker<Task> {
        let worker = Worker::new_lifo();
        *lock(&self.stealers[slot]) = Some(worker.stealer());
        // Relaxed: a bound for thieves; a thief that misses a fresh slot
        // finds nothing there to steal yet.
        self.high.fetch_max(slot + 1, Ordering::Relaxed);
        worker
    }

    /// Steals a batch of tasks from another thread's deque into `local`
    /// and returns one of them; `me` is the thief's own slot.
    pub(super) fn steal(&self, local: &Worker<Task>, me: usize) -> Option<Task> {
        let n = self.high.load(Ordering::Relaxed).max(me + 1);
        for offset in 1..n {
            let slot = (me + offset) % n;
            let stealer = lock(&self.stealers[slot]);
            let Some(stealer) = stealer.as_ref() else { continue };
            loop {
                match stealer.steal_batch_and_pop(local) {
                    Steal::Success(task) => return Some(task),
                    Steal::Empty => break,
                    Steal::Retry => {}
                }
            }
        }
        None
    }
}
