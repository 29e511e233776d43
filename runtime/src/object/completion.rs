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
//! The list's last link may be a *shared* waiter, tagged with bit 2
//! ([`Completion::add_shared_waiter`]): a node that is not the list's own
//! (a group's counter, on the lists of all its tokens), fired like any other
//! but never linked or unlinked: it is only ever added to an empty list.
//!
//! Adding a waiter is a compare-and-swap push onto the list while the state
//! is pending. Completing is one `swap` to the final state, which detaches
//! the whole list at once; the detached waiters then fire with no lock held
//! and without touching the object again. A waiter that loses the race to a
//! completion sees the final state in its failed CAS and is not linked: its
//! owner acts on the final state itself.
//!
//! A waiter is a node that carries its own fire function, so this module
//! knows nothing of what waiters do (resume a coroutine through the
//! scheduler, count a token in a group, wake a blocked thread).

use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::ptr;

use crate::object::header::{Header, RuntimeObject};
use crate::object::recycle;
use crate::sync::misuse::abort_misuse;
use crate::sync::mutation;
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
/// In a pending word or a node's `next`: the link is a shared waiter, the
/// list's last (a `Waiter` is 8-aligned, so bit 2 of its address is free).
const SHARED: usize = 0b100;

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

/// Runs a fired waiter. It receives the node it was registered with and
/// owns it from then on (a heap node frees itself; a node on a blocked
/// thread's stack may vanish as soon as the thread is told to go on).
pub(super) type FireFn = unsafe fn(*mut Waiter, Outcome);

/// One entry of an object's waiter list. Concrete waiters are
/// `#[repr(C)]` structs with a `Waiter` first ([`WaiterNode`]), so the
/// fire function can cast the node back to its own type.
#[repr(C)]
pub(crate) struct Waiter {
    /// The next node, or a shared waiter's address tagged [`SHARED`], or 0.
    next: Cell<usize>,
    fire: FireFn,
    /// The node lives in its completion's inline room ([`Completion::new_node`]).
    inline: Cell<bool>,
}

impl Waiter {
    pub(crate) fn new(fire: FireFn) -> Waiter {
        Waiter {
            next: Cell::new(0),
            fire,
            inline: Cell::new(false),
        }
    }
}

/// A waiter node type.
///
/// # Safety
/// The type is `#[repr(C)]` and starts with a [`Waiter`].
pub(crate) unsafe trait WaiterNode {}

/// Bytes of the room for one waiter node inside every completion: the
/// largest node (a coroutine to resume) fits.
const INLINE_WORDS: usize = 6;

/// The state word of one token, value or group, and room for its first
/// waiter: most objects have exactly one (a continuation, or the group
/// that counts the token), which then needs no allocation.
pub struct Completion {
    word: AtomicUsize,
    inline_taken: AtomicBool,
    inline_room: UnsafeCell<MaybeUninit<[usize; INLINE_WORDS]>>,
}

// SAFETY: the waiter list is only reached through the atomic word: pushed by
// CAS, and detached by a swap, after which its single owner runs it.
unsafe impl Send for Completion {}
// SAFETY: as above.
unsafe impl Sync for Completion {}

/// `complete` found the object already complete.
#[derive(Debug)]
pub(crate) struct AlreadyComplete;

impl Completion {
    /// A pending completion as a value of its own (the loom models' objects
    /// are completions alone; the runtime's are made in place).
    #[cfg(loom)]
    pub(crate) fn pending() -> Completion {
        Completion {
            word: AtomicUsize::new(PENDING),
            inline_taken: AtomicBool::new(false),
            inline_room: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Writes a pending completion at `at`, inside an object being made in
    /// its block, field by field: its inline room is left unwritten, where
    /// a `Completion` built as a value and moved in was assembled on the
    /// stack and copied, room and all (`recycle::boxed`).
    ///
    /// # Safety
    /// `at` is valid for writes and aligned; whatever it held is not dropped.
    #[inline(always)]
    pub(crate) unsafe fn write_pending(at: *mut Completion) {
        // SAFETY: per the contract; the room is an `UnsafeCell` of
        // `MaybeUninit`, valid unwritten.
        unsafe { Completion::write_word(at, PENDING) }
    }

    /// As [`Completion::write_pending`], for an object complete from the
    /// start with `outcome`.
    ///
    /// # Safety
    /// As [`Completion::write_pending`].
    #[inline(always)]
    pub(crate) unsafe fn write_completed(at: *mut Completion, outcome: Outcome) {
        // SAFETY: as in `write_pending`.
        unsafe { Completion::write_word(at, outcome.bits()) }
    }

    /// # Safety
    /// As [`Completion::write_pending`].
    #[inline(always)]
    unsafe fn write_word(at: *mut Completion, word: usize) {
        // SAFETY: per the contract, both fields are valid for writes.
        unsafe {
            ptr::addr_of_mut!((*at).word).write(AtomicUsize::new(word));
            ptr::addr_of_mut!((*at).inline_taken).write(AtomicBool::new(false));
        }
    }

    /// Places a waiter node for this completion: in its inline room the
    /// first time (the object outlives its waiters' firing: they fire
    /// during its completion, while the completer holds a reference), in a
    /// recycled block otherwise. Give it back with [`take_node`].
    pub(crate) fn new_node<T: WaiterNode>(&self, node: T) -> *mut T {
        let fits = std::mem::size_of::<T>() <= std::mem::size_of::<[usize; INLINE_WORDS]>()
            && std::mem::align_of::<T>() <= std::mem::align_of::<usize>();
        // Relaxed: the swap only decides who may write the room; the node
        // is published by `add_waiter`'s Release.
        if fits && !self.inline_taken.swap(true, Ordering::Relaxed) {
            let room = self.inline_room.get().cast::<T>();
            // SAFETY: the room is ours alone (the swap), large and aligned
            // enough for `T`, which starts with a `Waiter`.
            unsafe {
                room.write(node);
                (*room.cast::<Waiter>()).inline.set(true);
            }
            room
        } else {
            recycle::boxed(node)
        }
    }

    /// The final state, or `None` while pending.
    pub fn state(&self) -> Option<Outcome> {
        // Acquire: pairs with the Release of `complete`, so a caller that
        // sees the final state also sees what the completer wrote before
        // (a value's payload, a group's error count).
        Outcome::decode(self.word.load(Ordering::Acquire))
    }

    /// True while the object is pending with no waiter linked. Relaxed:
    /// the caller is the object's sole holder ([`Header::is_sole_holder`],
    /// whose `Acquire` load orders every waiter that another holder linked
    /// before this load).
    pub(crate) fn is_pending_without_waiters(&self) -> bool {
        self.word.load(Ordering::Relaxed) == PENDING
    }

    /// Moves to the final state and fires every waiter.
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
        unsafe { fire_list(prev, outcome) };
        Ok(())
    }

    /// Adds `waiter`, a shared waiter, as the list's only node: returns
    /// `Ok(true)` once linked, `Ok(false)` if the list holds a waiter
    /// already (the caller then adds a node of its own with
    /// [`Completion::add_waiter`]), or the final state if the object
    /// already completed. A group's counter is one: most tokens have no
    /// other waiter, and then need no node of their own (no write of the
    /// inline room, no swap to take it: one locked instruction fewer a
    /// token added to a group).
    ///
    /// # Safety
    /// `waiter` is a `Waiter` that stays valid until it has fired; its fire
    /// function accepts it, neither frees nor writes it, and may run once
    /// for every list it is on.
    pub(crate) unsafe fn add_shared_waiter(&self, waiter: *const Waiter) -> Result<bool, Outcome> {
        let tagged = waiter as usize | SHARED;
        debug_assert_eq!(waiter as usize & (TAG_MASK | SHARED), 0);
        if mutation::GROUP_RACE {
            // Mutation 2, as in `add_waiter_racy`: checked, then stored.
            let current = self.word.load(Ordering::Acquire);
            if let Some(outcome) = Outcome::decode(current) {
                return Err(outcome);
            }
            if current != PENDING {
                return Ok(false);
            }
            self.word.store(tagged, Ordering::Release);
            return Ok(true);
        }
        // Release on success, Acquire on failure: as in `add_waiter` (the
        // waiter's contents were written before it was shared, and a final
        // state publishes what its completer wrote).
        match self.word.compare_exchange(PENDING, tagged, Ordering::Release, Ordering::Acquire) {
            Ok(_) => Ok(true),
            Err(actual) => match Outcome::decode(actual) {
                Some(outcome) => Err(outcome),
                None => Ok(false),
            },
        }
    }

    /// Pushes `node` onto the waiter list, or returns the final state if the
    /// object already completed (then the node was not linked and still
    /// belongs to the caller).
    ///
    /// # Safety
    /// `node` stays valid until it has fired, and its fire function accepts
    /// it.
    pub(crate) unsafe fn add_waiter(&self, node: *mut Waiter) -> Result<(), Outcome> {
        if mutation::GROUP_RACE {
            // SAFETY: forwarded contract.
            return unsafe { self.add_waiter_racy(node) };
        }
        // Acquire on every load of the word: if it is final, we go on to
        // read what the completer published.
        let mut current = self.word.load(Ordering::Acquire);
        loop {
            if let Some(outcome) = Outcome::decode(current) {
                return Err(outcome);
            }
            // SAFETY: the node is not shared yet.
            unsafe { (*node).next.set(current) };
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

    /// Mutation 2 (test-only, [`mutation::GROUP_RACE`]): `add_waiter`
    /// without its compare-and-swap. The state is checked, then the node is
    /// linked by a plain store, so a completion between the two is lost.
    ///
    /// # Safety
    /// As `add_waiter`.
    unsafe fn add_waiter_racy(&self, node: *mut Waiter) -> Result<(), Outcome> {
        let current = self.word.load(Ordering::Acquire);
        if let Some(outcome) = Outcome::decode(current) {
            return Err(outcome);
        }
        // SAFETY: the node is not shared yet.
        unsafe { (*node).next.set(current) };
        self.word.store(node as usize, Ordering::Release);
        Ok(())
    }

    /// Called when the object is freed: nothing may still wait on it.
    pub(super) fn check_no_waiters(&self, call: &str, kind: &str) {
        // Relaxed: the freeing thread is the only one left with access.
        let word = self.word.load(Ordering::Relaxed);
        if Outcome::decode(word).is_none() && word != PENDING {
            abort_misuse(call, &format!("{kind} freed while tasks still await it"));
        }
    }
}

/// Takes a node from [`Completion::new_node`] back: its value, and its
/// block freed unless it is inline.
///
/// # Safety
/// `node` came from `new_node::<T>`, is taken once, and is not used after.
pub(crate) unsafe fn take_node<T: WaiterNode>(node: *mut T) -> T {
    // SAFETY: a `WaiterNode` starts with its `Waiter`.
    if unsafe { (*node.cast::<Waiter>()).inline.get() } {
        // SAFETY: the inline room holds our `T`; the room stays the
        // object's.
        unsafe { node.read() }
    } else {
        // SAFETY: a recycled block from `boxed`.
        unsafe { recycle::unbox(node) }
    }
}

/// Fires a detached waiter list (the pending word it was detached from) in
/// registration order.
///
/// # Safety
/// `head` is a list detached by `Completion::complete`.
unsafe fn fire_list(head: usize, outcome: Outcome) {
    // The list was pushed LIFO; reverse it so waiters fire in the order they
    // were registered. A shared waiter ends it: the first registered.
    let mut reversed = 0;
    let mut link = head;
    while link != 0 && link & SHARED == 0 {
        let node = link as *mut Waiter;
        // SAFETY: nodes of a detached list are valid until fired.
        let next = unsafe { (*node).next.get() };
        // SAFETY: as above.
        unsafe { (*node).next.set(reversed) };
        reversed = node as usize;
        link = next;
    }
    if link != 0 {
        let shared = (link & !SHARED) as *mut Waiter;
        // SAFETY: valid until fired (`add_shared_waiter`'s contract), which
        // fires it once for this list.
        unsafe { ((*shared).fire)(shared, outcome) };
    }
    link = reversed;
    while link != 0 {
        let node = link as *mut Waiter;
        // Read `next` and `fire` first: firing may free the node.
        // SAFETY: valid until fired.
        let (next, fire) = unsafe { ((*node).next.get(), (*node).fire) };
        // SAFETY: detached, fired exactly once, by its own function.
        unsafe { fire(node, outcome) };
        link = next;
    }
}

/// An object with a completion that a producer completes once: a token or
/// a value.
pub(crate) trait Completable: RuntimeObject {
    fn completion(&self) -> &Completion;
}

/// Emplaces (`Available`) or sets the error (`Error`), fires the waiters,
/// then drops the producer's reference: the creation reference that the
/// task releases when it completes its token or value.
///
/// # Safety
/// `this` is a live object on which the caller holds the producer's
/// reference. Neither this function nor the caller may touch the object
/// after the `drop_ref`: it may be freed at once (upstream's use after
/// free unlocked a mutex inside the object at that point).
pub(crate) unsafe fn complete_and_release<T: Completable>(this: *const T, outcome: Outcome, call: &str) {
    // SAFETY: live while we hold the producer's reference.
    let object = unsafe { &*this };
    // SAFETY: a `RuntimeObject` starts with its header.
    let header = unsafe { &*this.cast::<Header>() };
    if header.is_sole_holder(1) && object.completion().is_pending_without_waiters() {
        // Nobody else holds a reference, so nobody can link a waiter or
        // read the state any more, and no waiter is linked: the outcome
        // would never be seen. Free without the state's swap, a locked
        // instruction (the token of an `async.execute` with results, which
        // its caller dropped at once: 3 of the 22 of a blocking-awaits
        // round).
        // SAFETY: the producer's reference is the only one.
        unsafe { Header::free(this.cast(), call) };
        return;
    }
    if object.completion().complete(outcome).is_err() {
        abort_misuse(call, &format!("{} completed twice", T::KIND.name()));
    }
    // SAFETY: our last touch of the object.
    unsafe { Header::drop_ref(this.cast(), 1, call) };
    if mutation::TOUCH_AFTER_FREE {
        // SAFETY: none: mutation 3 (test-only) brings back upstream's use
        // after free, a write to the object after its last reference.
        unsafe { (*this).completion().word.fetch_or(0, Ordering::Release) };
    }
}
