//! The door of a runtime instance, for threads outside its pool.
//!
//! A thread outside the pool that queues a task on an instance enters
//! first, and leaves once the task is in the queue. The destroy hook closes
//! the door, then waits until nobody is inside: from then on, every task
//! queued from outside is in the queue (or was refused and goes to a fresh
//! instance), so the drain that follows cannot miss it. An enter that finds
//! the door closed is refused, and the caller goes to the next instance.
//!
//! A thread enters in one of two ways:
//! - through its [`Presence`], a word of its own that names the gate it is
//!   inside (`cached.rs` keeps one a thread): a store, a light fence
//!   (`../sync/asymmetric.rs`: a compiler fence once the process is
//!   registered for `membarrier`) and a look at the closed bit; leaving is
//!   a store. Every `Execute` and `Await*` from outside enters: a
//!   blocking-awaits round enters 8 times, and with the shared word only,
//!   its 16 locked read-modify-writes of one line took 6.56 ms against 6.07
//!   (7 interleaved runs); with a `SeqCst` fence at each enter, 7.22 ms
//!   against 6.44 with the light one (9 interleaved runs).
//!   The closer's side is the heavy fence, a `membarrier` (18 µs here).
//! - counted, in the gate's word (bit 0 is "closed", the rest counts the
//!   threads inside): a thread without a presence (at its exit).
//!
//! The closer sets the closed bit, then (after the heavy fence) waits
//! until the count is zero and no presence names the gate. Either the
//! closer's look sees an entrant's presence, or the entrant's look (after
//! its fence) sees the closed bit: Dekker's pattern (loom model
//! `loom_gate.rs`, where both fences are `SeqCst`; mutation 16 takes the
//! entrant's fence out).
//!
//! Before it closes, the destroy hook drains the instance while it is
//! current (`config::drain_while_current`), and bounds that only if a
//! thread outside the pool called in meanwhile: it sets the draining bit,
//! and an entrant that sees it counts itself (its look at the word is the
//! one it makes for the closed bit, so the ordinary enter pays nothing).

use std::time::Duration;

use crate::sync::asymmetric;
use crate::sync::backoff::Backoff;
use crate::sync::mutation;
use crate::sync::process::ForkSafeLock;
use crate::sync::{AtomicUsize, Ordering};
use std::sync::Arc;

const CLOSED: usize = 1;
/// The destroy hook drains: entrants count themselves in
/// `entered_while_draining`.
const DRAINING: usize = 2;
/// One thread counted inside (the word's bits above the two flags).
const INSIDE: usize = 4;

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
    /// Entries since the draining bit was set (a hint for the drain).
    entered_while_draining: AtomicUsize,
}

/// Which gate a thread is inside through its presence: the gate's address,
/// 0 for none. Written by its thread only; read by closers.
pub(super) struct Presence {
    gate: AtomicUsize,
}

/// Every thread's presence, registered at its first enter and removed at
/// its exit (`cached.rs`), for closers to look at.
static PRESENT: ForkSafeLock<Vec<Arc<Presence>>> = ForkSafeLock::new(Vec::new());

impl Presence {
    /// A registered presence (`forget` removes it).
    pub(super) fn register() -> Arc<Presence> {
        let presence = Arc::new(Presence::new());
        PRESENT.lock().push(Arc::clone(&presence));
        presence
    }

    /// Removes a presence from the registry (its thread exits).
    pub(super) fn forget(presence: &Arc<Presence>) {
        PRESENT.lock().retain(|p| !Arc::ptr_eq(p, presence));
    }

    /// A presence outside the registry (loom models, which pass theirs to
    /// [`Gate::close_and_wait_among`]).
    pub(super) fn new() -> Presence {
        Presence { gate: AtomicUsize::new(0) }
    }

    /// True while this presence names the gate at `gate`.
    pub(super) fn names(&self, gate: usize) -> bool {
        // Acquire: pairs with the enter's and the leave's Release.
        self.gate.load(Ordering::Acquire) == gate
    }
}

/// Proof of having entered; leaves on drop.
#[must_use]
pub(super) enum Inside<'a> {
    Counted(&'a Gate),
    Present(&'a Presence),
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        match self {
            // Release: the caller's push happens before the closer, which
            // acquires the count, sees it at zero.
            Inside::Counted(gate) => {
                gate.word.fetch_sub(INSIDE, Ordering::Release);
            }
            // Release: as above, for the closer's Acquire look at the
            // presence.
            Inside::Present(presence) => presence.gate.store(0, Ordering::Release),
        }
    }
}

impl Gate {
    pub(crate) fn new() -> Gate {
        Gate { word: AtomicUsize::new(0), entered_while_draining: AtomicUsize::new(0) }
    }

    fn address(&self) -> usize {
        self as *const Gate as usize
    }

    /// Enters, unless the gate is closed: counted in the gate's word.
    pub(super) fn enter(&self) -> Option<Inside<'_>> {
        // SeqCst: in one total order with `close`'s `fetch_or`: either this
        // increment comes first, and the closer waits for our leave, or the
        // close comes first, and we see it here.
        let prev = if mutation::GATE_ENTER_UNCHECKED {
            // Mutation 21: the closed bit looked at before the increment.
            let prev = self.word.load(Ordering::SeqCst);
            self.word.fetch_add(INSIDE, Ordering::SeqCst);
            prev
        } else {
            self.word.fetch_add(INSIDE, Ordering::SeqCst)
        };
        if prev & CLOSED != 0 {
            self.word.fetch_sub(INSIDE, Ordering::Relaxed);
            return None;
        }
        if prev & DRAINING != 0 {
            self.count_entry();
        }
        Some(Inside::Counted(self))
    }

    /// Enters through `presence` (the calling thread's, inside no gate),
    /// unless the gate is closed.
    #[inline]
    pub(super) fn enter_as<'a>(&'a self, presence: &'a Presence) -> Option<Inside<'a>> {
        // Release: a closer that reads this value (or a later one of this
        // thread's stores) sees this thread's earlier pushes, as with the
        // leave's Release.
        presence.gate.store(self.address(), Ordering::Release);
        // Light fence: the store before the look at the closed bit, against
        // the closer's bit before its heavy fence and its look at the
        // presences (see the module's comment).
        if !mutation::GATE_NO_FENCE {
            asymmetric::light();
        }
        // Relaxed: ordered by the fences.
        let word = self.word.load(Ordering::Relaxed);
        if word & (CLOSED | DRAINING) != 0 {
            if word & CLOSED != 0 {
                presence.gate.store(0, Ordering::Relaxed);
                return None;
            }
            self.count_entry();
        }
        Some(Inside::Present(presence))
    }

    #[cold]
    #[inline(never)]
    fn count_entry(&self) {
        // Relaxed: a hint that the drain reads at its next slice; an entry
        // that missed the draining bit came as if before the drain began.
        self.entered_while_draining.fetch_add(1, Ordering::Relaxed);
    }

    /// The destroy hook begins its drain: from now on entrants count
    /// themselves.
    pub(super) fn begin_drain(&self) {
        // Relaxed: see `count_entry`.
        self.word.fetch_or(DRAINING, Ordering::Relaxed);
    }

    /// Threads outside the pool that entered since [`Gate::begin_drain`]
    /// (and saw it).
    pub(super) fn entered_while_draining(&self) -> usize {
        // Relaxed: see `count_entry`.
        self.entered_while_draining.load(Ordering::Relaxed)
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
        self.close_and_wait_among(|gate| PRESENT.lock().iter().any(|p| p.names(gate)));
    }

    /// [`Gate::close_and_wait`], with `present(gate)` saying whether a
    /// thread is inside through its presence.
    pub(super) fn close_and_wait_among(&self, present: impl Fn(usize) -> bool) {
        self.word.fetch_or(CLOSED, Ordering::SeqCst);
        // Heavy fence: the closed bit before the look at the presences,
        // against every entrant's light one (see `enter_as`).
        if !mutation::GATE_CLOSE_NO_FENCE {
            asymmetric::heavy();
        }
        let mut backoff = Backoff::new(CLOSE_SPINS, CLOSE_YIELDS);
        let mut nap = FIRST_NAP;
        // Acquire: pairs with the leavers' Release.
        while self.word.load(Ordering::Acquire) >= INSIDE || present(self.address()) {
            if backoff.snooze() {
                continue;
            }
            sleep(nap);
            nap = (nap * 2).min(MAX_NAP);
        }
    }
}

/// Before `fork`: no thread holds the registry in the child.
pub(super) fn hold_for_fork() {
    PRESENT.hold_for_fork();
}

/// After `fork`, in the parent and in the child.
pub(super) fn release_after_fork() {
    PRESENT.release_after_fork();
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

    /// Entries are counted only while the destroy hook drains, through
    /// either door, and a draining gate still closes and refuses.
    #[test]
    fn counts_the_entries_while_draining() {
        let gate = Gate::new();
        let presence = Presence::new();
        drop(gate.enter().expect("open"));
        drop(gate.enter_as(&presence).expect("open"));
        assert_eq!(gate.entered_while_draining(), 0);
        gate.begin_drain();
        drop(gate.enter().expect("open while draining"));
        drop(gate.enter_as(&presence).expect("open while draining"));
        assert_eq!(gate.entered_while_draining(), 2);
        gate.close_and_wait_among(|address| presence.names(address));
        assert!(gate.enter().is_none() && gate.enter_as(&presence).is_none(), "entered a closed gate");
        assert_eq!(gate.entered_while_draining(), 2, "a refused entry counted");
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

    /// Through a presence: refused once closed, and the closer waits
    /// for a thread inside until it leaves.
    #[test]
    fn a_present_thread_keeps_the_closer_waiting_until_it_leaves() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        use std::sync::Barrier;
        let gate = Arc::new(Gate::new());
        let presence = Arc::new(Presence::new());
        let inside = Arc::new(Barrier::new(2));
        let left = Arc::new(AtomicBool::new(false));
        let (g, p) = (Arc::clone(&gate), Arc::clone(&presence));
        let (entered, l) = (Arc::clone(&inside), Arc::clone(&left));
        let stayer = std::thread::spawn(move || {
            let held = g.enter_as(&p).expect("open");
            entered.wait();
            std::thread::sleep(Duration::from_millis(100));
            l.store(true, SeqCst);
            drop(held);
        });
        inside.wait();
        gate.close_and_wait_among(|address| presence.names(address));
        assert!(left.load(SeqCst), "the closer returned while a thread was present");
        stayer.join().unwrap();
        assert!(gate.enter_as(&presence).is_none(), "entered a closed gate");
        assert!(!presence.names(gate.address()), "a refused entrant still names the gate");
    }

    /// A thread's presence is in the registry from its registration to
    /// its removal (at thread exit, `cached.rs`), for closers to see.
    #[test]
    fn presences_are_registered_until_forgotten() {
        let threads: Vec<_> = (0..32)
            .map(|_| {
                std::thread::spawn(|| {
                    let presence = Presence::register();
                    assert!(PRESENT.lock().iter().any(|p| Arc::ptr_eq(p, &presence)));
                    Presence::forget(&presence);
                    presence
                })
            })
            .collect();
        let gone: Vec<Arc<Presence>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let registry = PRESENT.lock();
        assert!(!registry.iter().any(|p| gone.iter().any(|g| Arc::ptr_eq(p, g))), "a forgotten presence stayed");
    }

    fn thread_cpu_time() -> Duration {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: writes the calling thread's CPU clock into `ts`.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
}
