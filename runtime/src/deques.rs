//! Per-thread task deques and the registry that lets drainers steal from
//! each other, as in rayon: a runtime thread pushes the tasks it makes
//! ready (`mlirAsyncRuntimeExecute` inside a task) onto its own deque and
//! pops the newest first, so a recursive spawner runs depth-first; an idle
//! drainer steals the oldest from another thread's deque.
//!
//! Every runtime thread of a scheduler (pool threads and spares) has one
//! slot in the registry: pool threads the slot of their rayon index, spares
//! one of the slots after those, taken when the spare first drains and
//! freed when it exits.

use crossbeam_deque::{Steal, Stealer, Worker};

use crate::sync::process::{lock, AtomicUsize, Mutex, Ordering};
use crate::task::Task;

pub(crate) struct Deques {
    /// One stealer per thread slot; `None` while no thread owns the slot.
    stealers: Box<[Mutex<Option<Stealer<Task>>>]>,
    /// Slots free for spare threads, lowest last.
    free_spare_slots: Mutex<Vec<usize>>,
    /// One past the highest slot ever registered: thieves look no further.
    high: AtomicUsize,
}

impl Deques {
    /// A registry for `workers` pool threads and up to `max_threads`
    /// threads in all.
    pub(crate) fn new(workers: usize, max_threads: usize) -> Deques {
        Deques {
            stealers: (0..max_threads).map(|_| Mutex::new(None)).collect(),
            free_spare_slots: Mutex::new((workers..max_threads).rev().collect()),
            high: AtomicUsize::new(0),
        }
    }

    /// Creates the deque of the thread in `slot` (a pool thread's rayon
    /// index, or `None` for a spare, which takes a free slot) and
    /// registers it; returns it with its slot.
    pub(crate) fn register(&self, slot: Option<usize>) -> (Worker<Task>, usize) {
        let slot = slot.unwrap_or_else(|| {
            lock(&self.free_spare_slots)
                .pop()
                .expect("no more spare threads than slots: the thread cap bounds both")
        });
        let worker = Worker::new_lifo();
        *lock(&self.stealers[slot]) = Some(worker.stealer());
        // Relaxed: a bound for thieves; a thief that misses a fresh slot
        // finds nothing there to steal yet.
        self.high.fetch_max(slot + 1, Ordering::Relaxed);
        (worker, slot)
    }

    /// Frees the slot of an exiting thread (whose deque is empty).
    pub(crate) fn unregister(&self, slot: usize, workers: usize) {
        *lock(&self.stealers[slot]) = None;
        if slot >= workers {
            lock(&self.free_spare_slots).push(slot);
        }
    }

    /// Steals a batch of tasks from another thread's deque into `local`
    /// and returns one of them; `me` is the thief's own slot.
    pub(crate) fn steal(&self, local: &Worker<Task>, me: usize) -> Option<Task> {
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
