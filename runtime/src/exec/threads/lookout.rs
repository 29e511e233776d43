//! The idle drainers looking for work, and the wake-up of a task put in a
//! thread's next-task slot or deque (README.md beside this file, "The
//! next-task slot").
//!
//! A task made ready inside a task goes to its thread's slot (or deque),
//! where its owner runs it once its current task returns, and where an
//! idle drainer may take it meanwhile. For that, while the task waits, an
//! idle drainer must be looking, or be started:
//!
//! - the producer, after the put: `SeqCst` fence; if no drainer looks for
//!   work, start one if a permit is free ([`Drainers::should_start`]);
//! - a drainer that stops looking (it found a task, or leaves): `SeqCst`
//!   decrement of the count (a field of the drainers word, `drainers.rs`);
//!   (when it leaves, its `SeqCst` update of the word;) `SeqCst` fence; if
//!   no drainer looks for work now and a task waits in a slot or deque,
//!   start one if a permit is free ([`Drainers::after_looking`]).
//!
//! If the producer's fence comes first, the drainer's look after its own
//! fence sees the task; otherwise the producer's load sees the count
//! without that drainer, and the permit it gave back (if it left). A drainer
//! that looks for work never leaves while a slot holds a task: its last
//! look takes it (`Scheduler::run_drainer`). loom model: `loom_slot.rs`.
//!
//! An outside thread's entry (`deques.rs`) may hold tasks while no drainer
//! is alive, so the last drainer to leave looks at the entries too
//! ([`after_last_leave`]): its `SeqCst` leave, a `SeqCst` fence, its look,
//! against the producer's push, fence and look at the permits. loom model:
//! `loom_entries.rs`.

use crate::exec::threads::drainers::{Drainers, Start};
use crate::sync::fence;
use crate::sync::mutation;
use crate::sync::Ordering;

/// The lookers' side of the drainers word: the checks after a put and
/// after a drainer stops looking. (The count is a field of the word,
/// beside the permits, and its cap a field of [`Drainers`]: the put's
/// check reads both in one load.)
impl Drainers {
    /// After a task was put in this thread's slot, deque or entry: true
    /// when a drainer should be started for it (none looks for work, and a
    /// permit seems free: the caller then tries [`Drainers::try_start`]).
    #[inline(always)]
    pub(super) fn should_start(&self) -> bool {
        // SeqCst fence: orders the put before the load of the word;
        // `after_looking` and `after_last_leave` have the other side
        // (mutation 14 takes it out).
        if !mutation::PUSH_NO_FENCE {
            fence(Ordering::SeqCst);
        }
        // Relaxed: ordered by the fence.
        self.permit_free_and_nobody_looking(self.hint())
    }

    /// After a drainer stopped looking for work, left or blocked: the
    /// drainer to start for a task that waits in a slot or deque
    /// (`any_local_task`), if no other drainer looks for work and a permit
    /// is free.
    pub(super) fn after_looking(&self, any_local_task: impl Fn() -> bool) -> Start {
        if mutation::SLOT_NO_RECHECK {
            return Start::NotNeeded;
        }
        // SeqCst fence: orders this drainer's decrement (and leave) before
        // its look; see `should_start`.
        fence(Ordering::SeqCst);
        if self.permit_free_and_nobody_looking(self.hint()) && any_local_task() {
            self.start_if_permit_free()
        } else {
            Start::NotNeeded
        }
    }
}

/// After the last drainer left (`AfterLeave::Idle`, returned by
/// [`Drainers::after_leave`]): the drainer to start for a task that waits
/// in an outside thread's entry (`any_outside_task`), or `None` when the
/// scheduler is idle. The entry's owner may never take that task (it
/// spins on memory, or waits in a condvar), and the lookers that a drainer
/// over the lookers' cap left it to may have left since.
pub(super) fn after_last_leave(drainers: &Drainers, any_outside_task: impl Fn() -> bool) -> Option<Start> {
    if mutation::ENTRY_NO_RECHECK {
        return None;
    }
    // No fence of its own: `Drainers::after_leave`'s `SeqCst` fence, after
    // the leave's `SeqCst` update of the word, comes before this look. It
    // pairs with the producer's push, fence and look at the permits
    // (`Drainers::should_start`): either the producer sees the permit free
    // and starts a drainer, or this look sees its task (mutation 13 takes
    // that fence out; loom finds the task stranded).
    any_outside_task().then(|| drainers.start_if_permit_free())
}
