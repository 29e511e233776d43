//! A runtime thread's next-task slot: the task made ready by the task
//! running on that thread (an `Execute` it called, a continuation its
//! completion fired), run by that thread as soon as its current task
//! returns, and taken by another thread only when it waits there.
//!
//! One word says what the slot holds, and the task is stored beside it:
//!
//! ```text
//!   bits 0..2   EMPTY, FULL, or TAKING (a thief is copying the task out)
//!   bits 2..64  a stamp, one more for each task put in (a thief tells a
//!               task that waits from the next one in a chain by it)
//! ```
//!
//! Only the owner thread moves EMPTY to FULL ([`Slot::put`]); the owner
//! takes its task back with FULL to EMPTY ([`Slot::take_own`]); a thief
//! takes it with FULL to TAKING, copies it out, then TAKING to EMPTY
//! ([`Slot::steal`]). Both takes are one compare-and-swap against the
//! stamp the taker saw, so exactly one of them gets the task, and a thief
//! that saw an older task never takes a newer one. The owner does not
//! write a task into a slot that a thief is still copying out of: it puts
//! the new task elsewhere (`Scheduler::push_local`, the thread's deque).
//!
//! Which thief takes a slot's task, and when, is the drain loop's choice
//! (`Scheduler::next_task`, README.md beside this file: "The next-task
//! slot").

use std::mem::MaybeUninit;

use crate::base::task::Task;
use crate::sync::mutation;
use crate::sync::{AtomicUsize, Ordering, UnsafeCell};

const EMPTY: usize = 0;
const FULL: usize = 1;
const TAKING: usize = 2;
const TAG: usize = 3;
const STAMP: usize = 4;

/// The state word of a full slot, as a thief saw it: pass it back to
/// [`Slot::steal`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp(usize);

/// One thread's slot. Aligned to a cache line: the owner writes its word
/// twice a task, and thieves read the others' words while idle.
#[repr(align(64))]
pub(super) struct Slot {
    state: AtomicUsize,
    task: UnsafeCell<MaybeUninit<Task>>,
}

// SAFETY: the task is written only by the owner while the slot is EMPTY,
// and read by exactly one taker, the one whose compare-and-swap moved the
// slot out of FULL (see the module's comment); `Task` is `Send`.
unsafe impl Sync for Slot {}
// SAFETY: as above.
unsafe impl Send for Slot {}

impl Slot {
    pub(super) fn new() -> Slot {
        Slot { state: AtomicUsize::new(EMPTY), task: UnsafeCell::new(MaybeUninit::uninit()) }
    }

    /// Owner only: puts `task` in. Returns what the caller must queue
    /// elsewhere: the slot's older task, or `task` itself when a thief is
    /// still copying the older one out.
    #[inline(always)]
    pub(super) fn put(&self, task: Task) -> Option<Task> {
        // Acquire: if a thief emptied the slot, its TAKING -> EMPTY
        // (Release) came after its copy of the task out of the cell, which
        // the write below must follow. (Only this thread fills the slot.)
        let state = self.state.load(Ordering::Acquire);
        if state & TAG != EMPTY {
            if let Some(older) = self.take_from(state) {
                // Our compare-and-swap emptied it (it was FULL): nobody
                // else changes an empty slot.
                self.fill(state & !TAG, task);
                return Some(older);
            }
            return self.put_after_thief(task);
        }
        self.fill(state, task);
        None
    }

    /// `put` when a thief took or is taking the older task: if it is still
    /// copying it out, `task` goes elsewhere.
    #[cold]
    fn put_after_thief(&self, task: Task) -> Option<Task> {
        // Acquire: see `put`.
        let state = self.state.load(Ordering::Acquire);
        if state & TAG != EMPTY {
            return Some(task);
        }
        self.fill(state, task);
        None
    }

    /// Writes `task` into the EMPTY slot whose word is `state`.
    #[inline(always)]
    fn fill(&self, state: usize, task: Task) {
        // SAFETY: the slot is EMPTY and only this thread fills it: nobody
        // reads the cell until the store below publishes it.
        self.task.with_mut(|cell| unsafe { (*cell).write(task) });
        // Release: a thief that sees FULL (Acquire) sees the task. The
        // stamp goes up by one: `state` is EMPTY.
        self.state.store(state + STAMP + FULL, Ordering::Release);
    }

    /// Owner only: takes the slot's task back, if a thief did not take it.
    #[inline(always)]
    pub(super) fn take_own(&self) -> Option<Task> {
        // Relaxed: the owner put the task itself. The tag is tested
        // before the compare-and-swap: a failing one costs a locked
        // instruction as a successful one does, and the slot is mostly
        // empty when a waiter or a drainer looks (blocking-awaits: 4 a
        // round of 4 tasks, one in eight of the waiting thread's locked
        // instructions).
        let state = self.state.load(Ordering::Relaxed);
        if state & TAG != FULL {
            return None;
        }
        self.take_from(state)
    }

    /// The owner's FULL -> EMPTY, for the stamp of `state` (whatever its
    /// tag): fails unless the slot is FULL with that stamp.
    #[inline(always)]
    fn take_from(&self, state: usize) -> Option<Task> {
        let empty = state & !TAG;
        if mutation::SLOT_TAKE_UNCHECKED {
            // Mutation 27: the owner empties the slot with a store, after
            // a load that saw it full.
            if self.state.load(Ordering::Relaxed) != empty | FULL {
                return None;
            }
            self.state.store(empty, Ordering::Relaxed);
        } else {
            // Relaxed: the owner wrote the task; a failure means the slot
            // is empty, or a thief moved it out of FULL and has the task.
            self.state.compare_exchange(empty | FULL, empty, Ordering::Relaxed, Ordering::Relaxed).ok()?;
        }
        // SAFETY: our compare-and-swap took the slot out of FULL: the
        // task is ours, and nobody else reads the cell.
        Some(self.task.with_mut(|cell| unsafe { (*cell).assume_init_read() }))
    }

    /// The slot's stamp if it holds a task a thief could take now.
    pub(super) fn peek(&self) -> Option<Stamp> {
        // Relaxed: a hint; `steal` checks again.
        let state = self.state.load(Ordering::Relaxed);
        (state & TAG == FULL).then_some(Stamp(state))
    }

    /// True when the slot holds a task that nobody took yet. Relaxed: the
    /// callers that rely on it (the drainers' re-check after they leave)
    /// order it with a `SeqCst` fence before it (README.md, "No lost
    /// wake-up").
    pub(super) fn is_full(&self) -> bool {
        self.state.load(Ordering::Relaxed) & TAG == FULL
    }

    /// Another thread takes the task it saw as `stamp`, if it is still
    /// there (the same task: the stamp changes with every put).
    pub(super) fn steal(&self, stamp: Stamp) -> Option<Task> {
        let Stamp(state) = stamp;
        // Acquire: pairs with the owner's Release in `put`: the task's
        // bytes are visible.
        self.state
            .compare_exchange(state, (state & !TAG) | TAKING, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        // SAFETY: our compare-and-swap moved the slot from FULL to TAKING:
        // the owner neither takes nor overwrites the task until EMPTY.
        let task = self.task.with_mut(|cell| unsafe { (*cell).assume_init_read() });
        // Release: the owner's next write of the cell (after its Acquire
        // load of EMPTY) follows this read.
        self.state.store(state & !TAG, Ordering::Release);
        Some(task)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // A scheduler is dropped idle: every slot is empty (its owner left
        // its drain loop with it empty, or moved its task to the queue).
        debug_assert!(!self.is_full(), "a scheduler dropped with a task in a slot");
    }
}
