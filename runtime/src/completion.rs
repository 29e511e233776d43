//! The completion state machine shared by tokens, values and groups.
//!
//! One atomic word holds everything (the design of XLA/TFRT `AsyncValue`):
//!
//! ```text
//!   pending:   [ head of the waiter list (pointer, 8-aligned) | 00 ]
//!   available: [ 0                                             | 01 ]
//!   error:     [ 0                                             | 10 ]
//! ```
//!
//! Adding a waiter is a compare-and-swap push onto the list while the state
//! is pending. Completing is one `swap` to the final state, which detaches
//! the whole list at once; the detached waiters then run with no lock held
//! and without touching the object again. A waiter that loses the race to a
//! completion sees the final state in its failed CAS and runs at once.
//!
//! Waiters never run the coroutine inline: `Resume` waiters are handed to
//! the scheduler (`spawn_continuation`), which runs them after the current
//! task returns, so a chain of a million dependent tasks never nests a
//! million frames on one stack.

use std::cell::Cell;
use std::ptr;
use std::time::Duration;

use crate::group::Group;
use crate::misuse::abort_misuse;
use crate::observe;
use crate::scheduler::{self, Task};
use crate::sync::thread::{self, Thread};
use crate::sync::{AtomicBool, AtomicUsize, Ordering};

/// The final state of a token, value or group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Available,
    Error,
}

const TAG_MASK: usize = 0b11;
const PENDING: usize = 0b00;
const AVAILABLE: usize = 0b01;
const ERROR: usize = 0b10;

impl Outcome {
    fn bits(self) -> usize {
        match self {
            Outcome::Available => AVAILABLE,
            Outcome::Error => ERROR,
        }
    }

    /// The final state in `word`, or `None` while pending.
    fn decode(word: usize) -> Option<Outcome> {
        match word & TAG_MASK {
            PENDING => None,
            AVAILABLE => Some(Outcome::Available),
            _ => Some(Outcome::Error),
        }
    }

    pub fn is_error(self) -> bool {
        self == Outcome::Error
    }
}

/// What to do when the awaited object completes.
pub(crate) enum Action {
    /// Resume a suspended coroutine (`Await*AndExecute`), through the pool.
    Resume(Task),
    /// Count one more completed token in a group (`AddTokenToGroup`). The
    /// waiter holds a reference to the group, released after notifying.
    NotifyGroup(*const Group),
    /// Wake a thread blocked in `Await*`. This node lives on the blocked
    /// thread's stack: once `done` is set, the thread may return and the
    /// node is gone.
    Wake { thread: Thread, done: AtomicBool },
}

/// One entry of an object's waiter list.
pub(crate) struct Waiter {
    next: Cell<*mut Waiter>,
    action: Action,
}

impl Waiter {
    pub(crate) fn new(action: Action) -> Waiter {
        Waiter {
            next: Cell::new(ptr::null_mut()),
            action,
        }
    }

    /// Runs the waiter's action; `node` must not be used afterwards.
    ///
    /// # Safety
    /// `node` was detached from a completed list; heap nodes (`Resume`,
    /// `NotifyGroup`) came from `Box::into_raw`.
    unsafe fn fire(node: *mut Waiter, outcome: Outcome) {
        // SAFETY: the node is valid until its action says otherwise.
        if let Action::Wake { thread, done } = unsafe { &(*node).action } {
            let thread = thread.clone();
            // Release: the waker's view of the object's final state (and of
            // a value's payload) is visible to the woken thread. After this
            // store the node may be gone: only the clone is used below.
            done.store(true, Ordering::Release);
            thread.unpark();
            return;
        }
        // SAFETY: every other action is a heap node that we now own.
        let node = unsafe { Box::from_raw(node) };
        match node.action {
            Action::Resume(task) => scheduler::spawn_continuation(task),
            // SAFETY: the waiter holds a reference to the group.
            Action::NotifyGroup(group) => unsafe { Group::notify_token_completed(group, outcome) },
            Action::Wake { .. } => unreachable!("handled above"),
        }
    }
}

/// The state word of one token, value or group.
pub struct Completion {
    word: AtomicUsize,
}

// SAFETY: the waiter list is only reached through the atomic word: pushed by
// CAS, and detached by a swap, after which its single owner runs it.
unsafe impl Send for Completion {}
// SAFETY: as above.
unsafe impl Sync for Completion {}

/// `complete` found the object already complete.
#[derive(Debug)]
pub struct AlreadyComplete;

impl Completion {
    pub(crate) fn pending() -> Completion {
        Completion {
            word: AtomicUsize::new(PENDING),
        }
    }

    pub(crate) fn completed(outcome: Outcome) -> Completion {
        Completion {
            word: AtomicUsize::new(outcome.bits()),
        }
    }

    /// The final state, or `None` while pending.
    pub fn state(&self) -> Option<Outcome> {
        // Acquire: pairs with the Release of `complete`, so a caller that
        // sees the final state also sees what the completer wrote before
        // (a value's payload, a group's error count).
        Outcome::decode(self.word.load(Ordering::Acquire))
    }

    /// Moves to the final state and runs every waiter.
    ///
    /// The object is not touched after the swap, so the caller may drop its
    /// last reference right after this returns.
    pub(crate) fn complete(&self, outcome: Outcome) -> Result<(), AlreadyComplete> {
        // AcqRel: Release publishes what the completer wrote to the waiters
        // and to later readers of the state; Acquire makes the waiter nodes
        // pushed by other threads (their Release CAS) visible before we run
        // them.
        let prev = self.word.swap(outcome.bits(), Ordering::AcqRel);
        if Outcome::decode(prev).is_some() {
            return Err(AlreadyComplete);
        }
        // SAFETY: the swap detached the list; this thread owns it alone.
        unsafe { run_list(prev as *mut Waiter, outcome) };
        Ok(())
    }

    /// Pushes `node` onto the waiter list, or returns the final state if the
    /// object already completed (then the node was not linked).
    ///
    /// # Safety
    /// `node` stays valid until it has fired; heap nodes come from
    /// `Box::into_raw`.
    pub(crate) unsafe fn add_waiter(&self, node: *mut Waiter) -> Result<(), Outcome> {
        // Acquire on every load of the word: if it is final, we go on to
        // read what the completer published.
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            if let Some(outcome) = Outcome::decode(current) {
                return Err(outcome);
            }
            // SAFETY: the node is not shared yet.
            unsafe { (*node).next.set(current as *mut Waiter) };
            // Release on success: the node's contents are visible to the
            // completer, whose swap acquires them.
            match self.word.compare_exchange_weak(
                current,
                node as usize,
                Ordering::Release,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => current = actual,
            }
        }
    }

    /// Mutation 2 (test-only): `add_waiter` without its compare-and-swap.
    /// The state is checked, then the node is linked by a plain store, so a
    /// completion between the two is lost (upstream's group race).
    ///
    /// # Safety
    /// As `add_waiter`.
    #[cfg(feature = "mutation-group-race")]
    pub(crate) unsafe fn add_waiter_racy(&self, node: *mut Waiter) -> Result<(), Outcome> {
        let current = self.word.load(Ordering::Acquire);
        if let Some(outcome) = Outcome::decode(current) {
            return Err(outcome);
        }
        // SAFETY: the node is not shared yet.
        unsafe { (*node).next.set(current as *mut Waiter) };
        self.word.store(node as usize, Ordering::Release);
        Ok(())
    }

    /// Mutation 3 (test-only): a write to the state word, as the C++
    /// runtime's mutex unlock that ran after the last reference was gone.
    #[cfg(feature = "mutation-touch-after-free")]
    pub(crate) fn mutation_touch(&self) {
        self.word.fetch_or(0, Ordering::Release);
    }

    /// Runs `task` once the object has completed: through the pool, at once
    /// if it already has.
    pub(crate) fn resume_when_complete(&self, task: Task) {
        if self.state().is_some() {
            scheduler::spawn_continuation(task);
            return;
        }
        let node = Box::into_raw(Box::new(Waiter::new(Action::Resume(task))));
        // SAFETY: a fresh heap node, owned by the list once linked.
        if unsafe { self.add_waiter(node) }.is_err() {
            // SAFETY: not linked, so still ours.
            let node = unsafe { Box::from_raw(node) };
            if let Action::Resume(task) = node.action {
                scheduler::spawn_continuation(task);
            }
        }
    }

    /// Blocks the calling thread until the object completes.
    ///
    /// A worker of the pool keeps running other tasks while it waits, so a
    /// blocking await inside a task cannot starve the pool.
    pub fn wait(&self) -> Outcome {
        if let Some(outcome) = self.state() {
            return outcome;
        }
        let node = Waiter::new(Action::Wake {
            thread: thread::current(),
            done: AtomicBool::new(false),
        });
        let node_ptr = &node as *const Waiter as *mut Waiter;
        // SAFETY: `node` outlives its time in the list: we do not return
        // before `done` is set, which is the completer's last use of it.
        if let Err(outcome) = unsafe { self.add_waiter(node_ptr) } {
            return outcome;
        }
        let Action::Wake { done, .. } = &node.action else {
            unreachable!("built above")
        };
        let on_worker = scheduler::on_worker_thread();
        if on_worker {
            // The continuation parked in this worker's slot may be the one
            // that ends this wait: let the pool run it.
            scheduler::release_next_task();
        }
        let observed = observe::wait_started();
        let mut backoff = Backoff::default();
        // Acquire: pairs with the Release in `Waiter::fire`.
        while !done.load(Ordering::Acquire) {
            if on_worker {
                if scheduler::run_one_pending_task() {
                    continue;
                }
                // New work may arrive in the pool while we sleep; look
                // again soon rather than leave it to the other workers.
                thread::park_timeout(Duration::from_micros(200));
            } else if !backoff.spin() {
                thread::park();
            }
        }
        if let Some(start) = observed {
            observe::wait_ended(start, on_worker);
        }
        self.state().expect("woken before completion")
    }

    /// Called when the object is freed: nothing may still wait on it.
    pub(crate) fn check_no_waiters(&self, call: &str, kind: &str) {
        // Relaxed: the freeing thread is the only one left with access.
        let word = self.word.load(Ordering::Relaxed);
        if Outcome::decode(word).is_none() && word != PENDING {
            abort_misuse(call, &format!("{kind} freed while tasks still await it"));
        }
    }
}

/// How long a thread outside the pool spins before it parks. Fine-grained
/// tasks often finish within microseconds; spinning that long saves a
/// futex sleep and wake on both sides.
#[derive(Default)]
struct Backoff {
    round: u32,
}

impl Backoff {
    const SPIN_ROUNDS: u32 = 64;
    const YIELD_ROUNDS: u32 = 16;

    /// One round of waiting; false once it is time to park.
    fn spin(&mut self) -> bool {
        self.round += 1;
        if self.round <= Self::SPIN_ROUNDS {
            std::hint::spin_loop();
            true
        } else if self.round <= Self::SPIN_ROUNDS + Self::YIELD_ROUNDS {
            thread::yield_now();
            true
        } else {
            false
        }
    }
}

/// Runs a detached waiter list in registration order.
///
/// # Safety
/// `head` is a list detached by `Completion::complete`.
unsafe fn run_list(head: *mut Waiter, outcome: Outcome) {
    // The list was pushed LIFO; reverse it so waiters fire in the order they
    // were registered.
    let mut reversed: *mut Waiter = ptr::null_mut();
    let mut node = head;
    while !node.is_null() {
        // SAFETY: nodes of a detached list are valid until fired.
        let next = unsafe { (*node).next.get() };
        // SAFETY: as above.
        unsafe { (*node).next.set(reversed) };
        reversed = node;
        node = next;
    }
    node = reversed;
    while !node.is_null() {
        // Read `next` first: firing may free the node.
        // SAFETY: valid until fired.
        let next = unsafe { (*node).next.get() };
        // SAFETY: detached, fired exactly once.
        unsafe { Waiter::fire(node, outcome) };
        node = next;
    }
}
