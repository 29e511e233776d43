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

use std::time::Duration;

use crate::sync::backoff::Backoff;
use crate::sync::{AtomicUsize, Ordering};

const CLOSED: usize = 1;
const INSIDE: usize = 2;

/// The closer's rounds before it sleeps: a push's length is spun, a
/// preempted pusher yielded to. None under loom, whose models explore
/// every yield (the naps below are yields there).
const CLOSE_SPINS: u32 = if cfg!(loom) { 0 } else { 64 };
const CLOSE_YIELDS: u32 = if cfg!(loom) { 0 } else { 64 };
/// The closer's first nap, and its longest.
const FIRST_NAP: Duration = Duration::from_micros(20);
const MAX_NAP: Duration = Duration::from_millis(1);

/// A nap of the closer: a sleep, or a yield in a loom model (no clock).
#[cfg(not(loom))]
fn sleep(nap: Duration) {
    std::thread::sleep(nap);
}

#[cfg(loom)]
fn sleep(_nap: Duration) {
    crate::sync::thread::yield_now();
}

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
    /// left. A thread that queues is inside for the length of a queue push,
    /// which the first rounds (spins, then yields) wait out; a thread that
    /// waits in an `Await*` outside the pool is inside for as long as the
    /// task it runs meanwhile (`threads/waiter.rs`), which may be seconds:
    /// past the yields, the closer sleeps, in naps that double up to
    /// [`MAX_NAP`], so a destroy does not burn a core meanwhile and sees
    /// the last leave within a millisecond. (A leaver does not wake the
    /// closer: that would cost every queue push from outside a look at the
    /// closed bit, for a wait that only the destroy hook has.)
    pub(super) fn close_and_wait(&self) {
        self.word.fetch_or(CLOSED, Ordering::SeqCst);
        let mut backoff = Backoff::new(CLOSE_SPINS, CLOSE_YIELDS);
        let mut nap = FIRST_NAP;
        // Acquire: pairs with the leavers' Release.
        while self.word.load(Ordering::Acquire) != CLOSED {
            if backoff.snooze() {
                continue;
            }
            sleep(nap);
            nap = (nap * 2).min(MAX_NAP);
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

    /// A thread inside for long (a waiter running a task): the closer
    /// waits for it asleep, not spinning, and returns once it left.
    #[test]
    fn the_closer_sleeps_while_a_thread_stays_inside() {
        let gate = std::sync::Arc::new(Gate::new());
        let inside = std::sync::Arc::new(std::sync::Barrier::new(2));
        let (g, entered) = (std::sync::Arc::clone(&gate), std::sync::Arc::clone(&inside));
        let stayer = std::thread::spawn(move || {
            let _inside = g.enter().expect("open");
            entered.wait();
            std::thread::sleep(Duration::from_millis(300));
        });
        inside.wait();
        let cpu_before = thread_cpu_time();
        let start = std::time::Instant::now();
        gate.close_and_wait();
        let waited = start.elapsed();
        let cpu = thread_cpu_time() - cpu_before;
        stayer.join().unwrap();
        assert!(waited >= Duration::from_millis(200), "returned while a thread was inside ({waited:?})");
        // Spinning or yielding, the closer used about all of the 300 ms.
        assert!(cpu < Duration::from_millis(60), "the closer used {cpu:?} of CPU in {waited:?}");
    }

    fn thread_cpu_time() -> Duration {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: writes the calling thread's CPU clock into `ts`.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
}
