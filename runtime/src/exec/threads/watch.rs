//! The watch (README.md beside this file, "The watch"): while the pool's
//! threads sleep, one of them, the watcher, wakes every [`PERIOD`] and
//! looks at the outside threads' entries. A thread outside the pool that
//! puts a task into its empty entry while the watch is held starts no
//! drainer for it, so it makes no system call: in the usual shape (an
//! `Execute`, then an `Await*` of its token) it runs the task itself at
//! once (`waiter.rs`), and a pool thread woken for it would only have cost
//! the caller the wake-up (4-5 µs of the 10 that bench/waits/wake.mlir
//! measured, in a futex wake of a sleeping CPU).
//!
//! - The push (`Scheduler::push_from_outside`): the put; `SeqCst` fence
//!   (`Drainers::should_start`'s); then, if the watch is held and the entry
//!   is not eager, no start.
//! - The watcher (`Scheduler::run_pool_thread`): a pool thread that goes
//!   to sleep after a drainer takes the watch, if nobody holds it, and
//!   sleeps in waits of one period. At each period's end: a `SeqCst`
//!   fence and a look at the entries. A task seen in an entry at two looks
//!   in a row (the same fill of its deque) was left there by its owner
//!   (it spins on memory, or waits on something else): a drainer is
//!   started for it, and that entry's pushes start drainers as before from
//!   then on (it is eager, until another thread holds it).
//! - Letting go (the watcher is woken for a drainer start; no outside push
//!   for [`QUIET_PERIODS`]; the pool closes): a `SeqCst` update of the
//!   drainers word (its watch bit, `drainers.rs`), a `SeqCst` fence, a look
//!   at the entries, and a drainer started for a task there.
//!
//! The push's fence and the let-go's fence are in one total order: the
//! push sees the watch let go (and starts a drainer as before), or the
//! look after the let-go sees its task. While the watch is held, the
//! watcher's looks come after its fences, and a look after the push's
//! fence sees the task. loom model: `loom_watch.rs`.

use std::time::Duration;

use crate::exec::threads::deques::OUTSIDE_ENTRIES;
use crate::exec::threads::drainers::Drainers;
use crate::exec::threads::Scheduler;
use crate::probe::observe;
use crate::sync::mutation;
use crate::sync::{fence, lock, AtomicU64, Mutex, Ordering};

/// How long the watcher sleeps between two looks at the entries: how long
/// a task that its owner left in its entry waits, once per thread (two
/// periods at most), before the watch starts a drainer for it.
pub(super) const PERIOD: Duration = Duration::from_millis(1);

/// How many periods in a row without a push onto an empty entry the
/// watcher waits before it lets go of the watch and sleeps for good (until
/// a drainer start): the runtime of a program that stopped queueing tasks
/// from outside goes quiet within 16 ms.
const QUIET_PERIODS: u32 = 16;

const _: () = assert!(OUTSIDE_ENTRIES <= 64, "the eager entries are the bits of one word");

/// Whether a pool thread holds the watch (it looks at the entries every
/// period) is a bit of the drainers word (`drainers.rs`), which a push
/// loads after its fence anyway.
pub(super) struct Watch {
    /// One bit an entry: a task of its owner's was left and started by the
    /// watch; its pushes start drainers as before.
    eager: AtomicU64,
    /// What the watcher saw at its last look; only the watcher uses it.
    seen: Mutex<Seen>,
}

struct Seen {
    /// The fill of each entry that held a task, `None` for the others.
    fills: [Option<u64>; OUTSIDE_ENTRIES],
    /// The sum of every entry's fill count: it moves at each push onto an
    /// empty entry.
    pushes: u64,
    /// Looks in a row at which `pushes` did not move.
    quiet: u32,
}

/// What a look at the entries found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Look {
    /// A task waits in an entry since the previous look.
    Left,
    /// Nothing left, and pushes came within [`QUIET_PERIODS`].
    Nothing,
    /// No push onto an empty entry for [`QUIET_PERIODS`]: let go.
    Quiet,
}

impl Watch {
    pub(super) fn new() -> Watch {
        Watch {
            eager: AtomicU64::new(0),
            seen: Mutex::new(Seen { fills: [None; OUTSIDE_ENTRIES], pushes: 0, quiet: 0 }),
        }
    }

    /// Takes the watch for the calling pool thread; false when another
    /// holds it.
    pub(super) fn try_hold(&self, drainers: &Drainers) -> bool {
        // (A `SeqCst` update of the word: one side of the let-go's total
        // order, see the module's comment; a push that reads the word
        // before it starts a drainer as before.)
        let held = drainers.hold_watch();
        if held {
            lock(&self.seen).quiet = 0;
        }
        held
    }

    /// After a push onto the empty entry `entry` and the pusher's `SeqCst`
    /// fence: true when the watch takes care of the task, and no drainer
    /// needs a start.
    #[inline(always)]
    pub(super) fn covers(&self, drainers: &Drainers, entry: usize) -> bool {
        // Relaxed: ordered after the put by the caller's fence; the
        // let-go's fence is the other side.
        drainers.hint().watch_held() && self.eager.load(Ordering::Relaxed) & (1 << entry) == 0
    }

    /// `entry` has a new owner: its pushes wake nobody again while the
    /// watch is held.
    pub(super) fn forget_entry(&self, entry: usize) {
        // Relaxed: a hint for the owner's pushes; either value is safe.
        self.eager.fetch_and(!(1u64 << entry), Ordering::Relaxed);
    }

    /// Lets go of the watch; the caller then looks at the entries.
    pub(super) fn let_go(&self, drainers: &Drainers) {
        drainers.let_go_watch();
        // SeqCst fence: the update before the caller's look, against the
        // pusher's put, fence and load of the word (mutation 17 takes the
        // look out).
        fence(Ordering::SeqCst);
    }

    /// The watcher's look at the end of a period: `fill(entry)` is the
    /// entry's fill count and whether it holds a task, for each of the
    /// first `entries` entries. An entry whose task waits since the last
    /// look becomes eager.
    pub(super) fn look(&self, entries: usize, fill: impl Fn(usize) -> (u64, bool)) -> Look {
        // SeqCst fence: a push whose fence came before this one is seen.
        fence(Ordering::SeqCst);
        let mut seen = lock(&self.seen);
        let mut left = false;
        let mut pushes = 0u64;
        for entry in 0..entries {
            let (count, holds) = fill(entry);
            pushes = pushes.wrapping_add(count);
            let now = holds.then_some(count);
            if now.is_some() && seen.fills[entry] == now {
                left = true;
                // Relaxed: a hint for the owner's pushes (see `covers`).
                self.eager.fetch_or(1 << entry, Ordering::Relaxed);
            }
            seen.fills[entry] = now;
        }
        if pushes != seen.pushes {
            seen.pushes = pushes;
            seen.quiet = 0;
        } else {
            seen.quiet += 1;
        }
        if left {
            Look::Left
        } else if seen.quiet >= QUIET_PERIODS {
            Look::Quiet
        } else {
            Look::Nothing
        }
    }
}

impl Scheduler {
    /// A pool thread that drained and goes to sleep: takes the watch if
    /// tasks come from outside threads (waiters that run them) and nobody
    /// holds it.
    pub(super) fn take_watch(&self) -> bool {
        self.config.waiters_run != crate::exec::config::WaiterRuns::Nothing
            && self.deques.outside_entries() > 0
            && self.watch.try_hold(&self.drainers)
    }

    /// The watcher's period ended: looks at the entries; false when it let
    /// go of the watch.
    pub(super) fn watch_period(&self) -> bool {
        match self.watch.look(self.deques.outside_entries(), |entry| self.deques.outside_fill(entry)) {
            Look::Left => {
                observe::watch_started();
                self.start_drainer(self.drainers.start_if_permit_free());
                true
            }
            Look::Nothing => true,
            Look::Quiet => {
                self.let_go_watch();
                false
            }
        }
    }

    /// The watcher lets go of the watch, and starts a drainer for a task
    /// that a push left to it.
    pub(super) fn let_go_watch(&self) {
        self.watch.let_go(&self.drainers);
        if !mutation::WATCH_NO_RECHECK && self.deques.any_outside_task() {
            self.start_drainer(self.drainers.start_if_permit_free());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn held() -> (Watch, Drainers) {
        let (watch, drainers) = (Watch::new(), Drainers::new(1, 1, 1));
        assert!(watch.try_hold(&drainers));
        (watch, drainers)
    }

    #[test]
    fn a_task_seen_at_two_looks_in_a_row_is_left_and_its_entry_becomes_eager() {
        let (watch, d) = held();
        assert!(watch.covers(&d, 1));
        // Entry 1 holds the task of its fill 5; entry 0 is empty.
        let fills = |entry: usize| if entry == 1 { (5, true) } else { (2, false) };
        assert_eq!(watch.look(2, fills), Look::Nothing, "seen once: its owner may take it yet");
        assert_eq!(watch.look(2, fills), Look::Left);
        assert!(!watch.covers(&d, 1), "entry 1 is eager");
        assert!(watch.covers(&d, 0));
        watch.forget_entry(1);
        assert!(watch.covers(&d, 1), "a new owner's pushes are covered again");
    }

    #[test]
    fn a_new_fill_between_two_looks_is_not_left() {
        let (watch, d) = held();
        assert_eq!(watch.look(1, |_| (5, true)), Look::Nothing);
        assert_eq!(watch.look(1, |_| (6, true)), Look::Nothing, "its owner took fill 5 and queued again");
        assert!(watch.covers(&d, 0));
    }

    #[test]
    fn the_watch_goes_quiet_after_periods_without_a_push() {
        let (watch, d) = held();
        assert!(!watch.try_hold(&d), "one watcher at a time");
        for period in 0..QUIET_PERIODS {
            assert_eq!(watch.look(1, |_| (period as u64 % 2, false)), Look::Nothing, "pushes move the count");
        }
        for _ in 0..QUIET_PERIODS {
            assert_eq!(watch.look(1, |_| (7, false)), Look::Nothing);
        }
        assert_eq!(watch.look(1, |_| (7, false)), Look::Quiet);
        watch.let_go(&d);
        assert!(!watch.covers(&d, 0));
        assert!(d.snapshot().permits() == 0 && d.snapshot().drainers() == 0, "the flag alone");
        assert!(watch.try_hold(&d));
    }
}
