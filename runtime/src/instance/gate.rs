//! The door of a runtime instance, for threads outside its pool.
//!
//! A thread outside the pool that queues a task on an instance enters
//! first, and leaves once the task is in the queue. The destroy hook closes
//! the door, then waits until nobody is inside: from then on, every task
//! queued from outside is in the queue (or was refused and goes to a fresh
//! instance), so the drain that follows cannot miss it. An enter that finds
//! the door closed is refused, and the caller goes to the next instance.
//!
//! One word: bit 0 is "closed", the rest counts the threads inside.

use crate::sync::{AtomicUsize, Ordering};

const CLOSED: usize = 1;
const INSIDE: usize = 2;

pub(super) struct Gate {
    word: AtomicUsize,
}

/// Proof of having entered; leaves on drop.
#[must_use]
pub(crate) struct Inside<'a>(&'a Gate);

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        // Release: the caller's push happens before the closer, which
        // acquires the count, sees it at zero.
        self.0.word.fetch_sub(INSIDE, Ordering::Release);
    }
}

impl Gate {
    pub(crate) fn new() -> Gate {
        Gate { word: AtomicUsize::new(0) }
    }

    /// Enters, unless the gate is closed.
    pub(super) fn enter(&self) -> Option<Inside<'_>> {
        // SeqCst: in one total order with `close`'s `fetch_or`: either this
        // increment comes first, and the closer waits for our leave, or the
        // close comes first, and we see it here.
        let prev = self.word.fetch_add(INSIDE, Ordering::SeqCst);
        if prev & CLOSED != 0 {
            self.word.fetch_sub(INSIDE, Ordering::Relaxed);
            return None;
        }
        Some(Inside(self))
    }

    /// Closes the gate without waiting for the threads inside: a
    /// deterministic instance refuses late callers itself (some may be
    /// blocked inside for good), the closed gate only sends the threads
    /// that cached the instance to the next one.
    pub(super) fn close(&self) {
        self.word.fetch_or(CLOSED, Ordering::SeqCst);
    }

    /// Closes the gate and waits until every thread that entered before has
    /// left. Threads are inside only for the length of a queue push.
    pub(super) fn close_and_wait(&self) {
        self.word.fetch_or(CLOSED, Ordering::SeqCst);
        // Acquire: pairs with the leavers' Release.
        while self.word.load(Ordering::Acquire) != CLOSED {
            crate::sync::thread::yield_now();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn refuses_entry_once_closed() {
        let gate = Gate::new();
        {
            let _inside = gate.enter().expect("open");
        }
        gate.close_and_wait();
        assert!(gate.enter().is_none());
        gate.close_and_wait();
    }
}
