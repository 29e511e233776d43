//! How long a thief lets a task wait in another thread's next-task slot or
//! outside entry before it takes it (`deques.rs` looks, this decides).

use crate::base::task::Task;
use crate::exec::threads::slot::{Slot, Stamp};

/// How long the tasks of an outside thread's deque wait before a thief
/// takes one (unless it is the thief's last look): the owner, when it
/// waits for them, usually runs them itself well within that (a task
/// queued and then awaited: about a microsecond), and a thief that took
/// one would move it and its objects to another core. Tasks that wait
/// longer (a parallel loop's blocks beyond the one the owner runs, a task
/// the owner does not wait for) are taken.
pub(super) const OUTSIDE_PATIENCE_NS: u64 = 5_000;

/// How long the tasks of an outside thread's deque wait for a thief while
/// their owner does not run them: the usual gap between a thread's
/// `Execute`s and its `Await` (blocking-awaits: well under a microsecond),
/// after which the owner runs them (`OUTSIDE_PATIENCE_NS` then). A thread
/// that queued tasks and does something else (computes the first block of
/// a parallel loop, queues the next 100,000 tasks) has them taken soon:
/// with the full patience, a triangular loop's big half started 25-44 µs
/// after its loop did (1-2 µs from the shared queue).
pub(super) const OUTSIDE_GRACE_NS: u64 = 2_000;

/// How long, at most, an idle drainer waits between two looks at the
/// outside threads' entries while their owners keep taking their young
/// tasks themselves (`Deques::wait_for_outside`: the wait doubles from
/// half a microsecond at each look that leaves a task waiting, until the
/// drainer runs one). A thread that queues tasks and awaits them at once
/// (blocking-awaits) then sees the drainer's look at its lines every
/// 16 µs rather than every 2 (6.34 ms against 6.70, 11 interleaved runs);
/// a task that its owner leaves is taken at most this much later.
pub(super) const OUTSIDE_LOOK_CAP_NS: u64 = 16_000;

/// How long an idle drainer lets a task wait in another thread's slot
/// before it takes it: the owner usually takes it itself within
/// microseconds (the next link of a dependency chain, which then runs on
/// the same core), so a thief takes it only after seeing the same task
/// (the same [`Stamp`]) for [`SlotPatience::ROUNDS`] of its idle rounds
/// (and a drainer that sees such a task does not leave meanwhile), or on
/// its last look before it leaves for another reason, as Go's scheduler
/// steals its `runnext` only on its last stealing pass (and after 3 µs).
#[derive(Default)]
pub(super) struct SlotPatience {
    /// The task being watched: its thread's slot and stamp, and the idle
    /// round at which it was first seen.
    watched: Option<(usize, Stamp, u32)>,
    /// Idle rounds since the drainer last ran a task.
    round: u32,
    /// Take any task now (the drainer's last look before leaving).
    last_look: bool,
    /// The last look at the slots left a task in one.
    waiting: bool,
    /// ... in an outside thread's entry: it may be taken within
    /// microseconds (`OUTSIDE_PATIENCE_NS`), too soon for a nap.
    waiting_outside: bool,
    /// When the first task left waiting in an outside thread's entry may
    /// be taken (ns from the registry's epoch; `Deques::wait_for_outside`).
    outside_due: u64,
    /// How much longer than `outside_due` the next wait for an outside
    /// entry lasts: doubled at each wait, until the drainer runs a task.
    outside_backoff: u64,
    /// The next idle round looks at the slots (after a nap).
    look_next: bool,
    /// The drainer leaves because enough drainers look for work.
    over_cap: bool,
    /// The drainer's backoff ran out while a task waits in a slot: it
    /// sleeps between looks, and looks at every round.
    napping: bool,
}

impl SlotPatience {
    /// Idle rounds a task must have waited in a slot before a thief takes
    /// it: about as many microseconds on this machine (a round is a
    /// spin-loop hint and a look at the queue, the deques and the slots).
    pub(super) const ROUNDS: u32 = 16;

    /// One more idle round.
    pub(super) fn next_round(&mut self) {
        self.round = self.round.wrapping_add(1);
    }

    /// The drainer ran a task: start over.
    pub(super) fn reset(&mut self) {
        *self = SlotPatience::default();
    }

    /// The drainer's next look is its last before it leaves.
    pub(super) fn set_last_look(&mut self, last: bool) {
        self.last_look = last;
    }

    pub(super) fn is_last_look(&self) -> bool {
        self.last_look
    }

    /// The last look at the slots left a task waiting in one (too young to
    /// take).
    pub(super) fn saw_waiting(&self) -> bool {
        self.waiting
    }

    /// The drainer's last look is because enough drainers look for work.
    pub(super) fn set_over_cap(&mut self) {
        self.over_cap = true;
    }

    /// The last look left a task waiting in an outside thread's entry.
    pub(super) fn saw_waiting_outside(&self) -> bool {
        self.waiting_outside
    }

    /// Idle rounds between two looks at the other threads' slots.
    const LOOK_EVERY: u32 = 8;

    /// Does this idle round look at the other threads' slots? Every
    /// [`SlotPatience::LOOK_EVERY`] rounds, and on the last look: a look
    /// pulls the cache line that the slot's owner writes twice a task, which
    /// slowed a dependency chain on the other core by 12% when the idle
    /// drainer looked at every round (nested-chain, 2 workers).
    pub(super) fn looks_at_slots(&self) -> bool {
        self.last_look || self.napping || self.look_next || self.round % Self::LOOK_EVERY == 0
    }

    /// The next idle round looks at the slots (once).
    pub(super) fn look_next(&mut self) {
        self.look_next = true;
    }

    /// A look at the slots and entries begins (the one `look_next` asked
    /// for, if any).
    pub(super) fn looking_now(&mut self) {
        self.look_next = false;
    }

    /// A look at the slots ended, having seen `seen`: a watched task that
    /// it no longer saw was taken, and the next one seen is watched.
    pub(super) fn looked_at_slots(&mut self, seen: &SlotsSeen) {
        if !seen.watched {
            self.watched = None;
        }
        self.waiting = seen.waiting;
    }

    /// A look at the outside entries ended: whether it left a young task
    /// in one, and when the first of those may be taken.
    pub(super) fn looked_outside(&mut self, waiting: bool, due: u64) {
        self.waiting_outside = waiting;
        self.outside_due = due;
    }

    /// Does this look leave young tasks in the outside entries? Yes but on
    /// the last look of a drainer that leaves for good; one that leaves
    /// because enough drainers look for work leaves them to those.
    pub(super) fn leaves_young_outside_tasks(&self) -> bool {
        !self.last_look || self.over_cap
    }

    /// Until when (ns from the registry's epoch, `now` now) to wait before
    /// the next look at the outside entries: the first young task's due
    /// time, at most `OUTSIDE_PATIENCE_NS` away, and at least the wait's
    /// backoff, which doubles at each wait (from 500 ns up to
    /// `OUTSIDE_LOOK_CAP_NS`) until the drainer runs a task.
    pub(super) fn outside_wait_until(&mut self, now: u64) -> u64 {
        let due = self.outside_due.min(now.saturating_add(OUTSIDE_PATIENCE_NS));
        let due = due.max(now.saturating_add(self.outside_backoff));
        self.outside_backoff = (self.outside_backoff * 2).clamp(500, OUTSIDE_LOOK_CAP_NS);
        due
    }

    /// The drainer sleeps between its looks from now on.
    pub(super) fn napping(&mut self) {
        self.napping = true;
    }

    /// May the task seen as `stamp` in `slot` be taken now? Watches it if
    /// nothing else is.
    fn may_take(&mut self, slot: usize, stamp: Stamp) -> Look {
        if self.last_look {
            return Look::Take;
        }
        match self.watched {
            Some((s, st, since)) if s == slot && st == stamp => {
                if self.round.wrapping_sub(since) >= Self::ROUNDS {
                    Look::Take
                } else {
                    Look::Watched
                }
            }
            Some((s, _, _)) if s != slot => Look::Other,
            _ => {
                self.watched = Some((slot, stamp, self.round));
                Look::Watched
            }
        }
    }
}

/// What a thief's look at the slots saw and left: a task waiting in one,
/// and the watched task among them.
#[derive(Default)]
pub(super) struct SlotsSeen {
    pub(super) waiting: bool,
    pub(super) watched: bool,
}

/// Looks at one next-task slot, `id` to `patience` (a runtime thread's
/// index, or an outside entry's after those): takes its task if `patience`
/// lets it, else notes in `seen` that a task waits there.
pub(super) fn look_at_slot(slot: &Slot, id: usize, patience: &mut SlotPatience, seen: &mut SlotsSeen) -> Option<Task> {
    let stamp = slot.peek()?;
    match patience.may_take(id, stamp) {
        Look::Take => {
            let task = slot.steal(stamp)?;
            patience.watched = None;
            return Some(task);
        }
        Look::Watched => {
            seen.watched = true;
            seen.waiting = true;
        }
        Look::Other => seen.waiting = true,
    }
    None
}

/// What a thief does with a task it sees in a slot.
enum Look {
    Take,
    /// Leave it: it is the watched task, not waiting long enough yet.
    Watched,
    /// Leave it: another slot's task is watched.
    Other,
}
