//! A completion waiter that wakes a Rust [`Waker`]: what makes tokens,
//! values and groups awaitable from any executor (`handles`), with no
//! thread blocked per future.
//!
//! A future registers one node on its object's completion, at its first
//! poll that finds the object pending, and keeps it for its whole life:
//! the completion fires every node exactly once, after its state word went
//! final, so a future whose node fired sees the final state at its next
//! poll and never needs a second node.
//!
//! **Who frees the node.** A linked node cannot be unlinked (the waiter
//! list is a lock-free stack that is only ever detached whole), so a future
//! dropped while pending leaves its node in the list, and the completion
//! may fire it at any time, also while the future is being dropped. The
//! node therefore has two owners, the completion (until it has fired the
//! node) and the future (until it is dropped), counted in `owners`; each
//! gives its share up with one decrement after its last touch of the node,
//! and whichever comes last frees it. The node may sit in its object's
//! inline room ([`Completion::new_node`]); that room lives as long as the
//! object, which both owners keep alive while they hold their share: the
//! completer holds a reference while it fires, and the future releases its
//! share before it drops its own reference.
//!
//! **The waker slot.** A future polled again with another waker (a task
//! that moved, a `select!` arm) replaces the waker in its node while the
//! completion may be firing it. The slot follows the protocol of
//! `futures`' `AtomicWaker` (written here over the runtime's own atomics,
//! so that the loom models in `loom_future_waiter.rs` explore it): a
//! future writes the slot only after moving `state` from `WAITING` to
//! `REGISTERING`; the fire
//! function sets `WAKING`, and takes the waker only if it found `WAITING`.
//! If it found `REGISTERING`, the future's move back to `WAITING` fails
//! and the future wakes the waker itself; if the future finds `WAKING`, it
//! wakes its new waker at once (the object has completed). Either way the
//! waker of the latest poll is woken. Neither side ever waits for the
//! other, and no user code (a waker's `wake` or `drop`) runs while a side
//! holds the slot, except the clone of the new waker, as in `AtomicWaker`.

use std::ptr::NonNull;
use std::task::{Poll, Waker};

use crate::object::completion::{take_node, Completion, Outcome, Waiter, WaiterNode};
use crate::sync::{AtomicUsize, Ordering, UnsafeCell};

/// Nobody uses the waker slot.
const WAITING: usize = 0;
/// The future is writing the slot.
const REGISTERING: usize = 0b01;
/// The completion fired the node.
const WAKING: usize = 0b10;

/// Nodes linked minus nodes freed: the loom models
/// (`loom_future_waiter.rs`) check that it is back to zero after each run.
#[cfg(all(test, loom))]
pub(super) static LIVE_NODES: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(0);

/// The node: a [`Waiter`], the waker slot, and its two owners' count.
#[repr(C)]
struct FutureWaiter {
    waiter: Waiter,
    state: AtomicUsize,
    waker: UnsafeCell<Option<Waker>>,
    /// The completion (until fired) and the future (until dropped).
    owners: AtomicUsize,
}

// SAFETY: `#[repr(C)]` with its `Waiter` first.
unsafe impl WaiterNode for FutureWaiter {}

impl FutureWaiter {
    /// The waiter's fire function.
    ///
    /// # Safety
    /// `node` is a linked `FutureWaiter`, fired once (by `fire_list`).
    unsafe fn fire(node: *mut Waiter, _outcome: Outcome) {
        let node = node.cast::<FutureWaiter>();
        // SAFETY: the completion's share keeps the node alive until the
        // `release` below.
        let this = unsafe { &*node };
        // AcqRel: Acquire, to see the waker the future stored (its Release
        // move back to WAITING); Release, so that a future that sees
        // WAKING also sees the completion's final state, which the
        // completer's swap wrote before firing.
        let waker = if this.state.fetch_or(WAKING, Ordering::AcqRel) == WAITING {
            // SAFETY: WAKING is set and the future only writes the slot
            // after moving it from WAITING: the slot is ours.
            let waker = this.waker.with_mut(|slot| unsafe { (*slot).take() });
            // Release: a future that registers after this sees the slot
            // emptied.
            this.state.fetch_and(!WAKING, Ordering::Release);
            waker
        } else {
            // REGISTERING: the future is writing the slot; its move back
            // to WAITING fails on our WAKING and it wakes the new waker.
            None
        };
        // SAFETY: our last touch of the node.
        unsafe { FutureWaiter::release(node) };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Gives up one owner's share; the last one frees the node.
    ///
    /// # Safety
    /// The caller holds a share, does not touch the node afterwards, and
    /// the node's object is alive (its inline room may hold the node).
    unsafe fn release(node: *mut FutureWaiter) {
        // SAFETY: alive while the caller holds its share.
        let owners = unsafe { &(*node).owners };
        // AcqRel, as `Arc::drop`: Release orders this owner's uses of the
        // node before the free; Acquire (for the last) orders the other's.
        if owners.fetch_sub(1, Ordering::AcqRel) == 1 {
            #[cfg(all(test, loom))]
            LIVE_NODES.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            // SAFETY: both shares are gone: nobody else touches the node;
            // it came from `Completion::new_node` and is taken once.
            drop(unsafe { take_node(node) });
        }
    }
}

/// A future's node on one completion, and its share of it.
///
/// Must be given back with [`Registration::release`] while the object is
/// alive; dropping it without that leaks the node (and its waker).
#[must_use]
pub(crate) struct Registration {
    node: NonNull<FutureWaiter>,
}

// SAFETY: the node is reached through atomics and the slot protocol; the
// waker in it is `Send + Sync`.
unsafe impl Send for Registration {}
// SAFETY: `&Registration` gives no access to the node.
unsafe impl Sync for Registration {}

impl Registration {
    /// Links a node that wakes `waker` into `completion`'s list, or returns
    /// the final state if the object has completed (nothing is linked).
    fn register(completion: &Completion, waker: &Waker) -> Result<Registration, Outcome> {
        let node = completion.new_node(FutureWaiter {
            waiter: Waiter::new(FutureWaiter::fire),
            state: AtomicUsize::new(WAITING),
            waker: UnsafeCell::new(Some(waker.clone())),
            owners: AtomicUsize::new(2),
        });
        // SAFETY: a fresh node whose fire function accepts it; it stays
        // valid until fired: the completion's share is only given up by
        // the fire function.
        match unsafe { completion.add_waiter(node.cast()) } {
            Ok(()) => {
                #[cfg(all(test, loom))]
                LIVE_NODES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                // SAFETY: `new_node` never returns null.
                Ok(Registration { node: unsafe { NonNull::new_unchecked(node) } })
            }
            Err(outcome) => {
                // SAFETY: not linked, so still ours alone.
                drop(unsafe { take_node(node) });
                Err(outcome)
            }
        }
    }

    /// Makes `waker` the one the completion wakes (a poll after the first).
    fn update(&self, waker: &Waker) {
        // SAFETY: our share keeps the node alive.
        let this = unsafe { self.node.as_ref() };
        // Acquire: pairs with the fire function's Release, so after seeing
        // WAKING the caller's next look at the state word sees it final.
        match this.state.compare_exchange(WAITING, REGISTERING, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => {
                // SAFETY: REGISTERING gives us the slot: the fire function
                // only takes it from WAITING.
                let old = this.waker.with_mut(|slot| unsafe {
                    match &*slot {
                        Some(current) if current.will_wake(waker) => None,
                        _ => (*slot).replace(waker.clone()),
                    }
                });
                // AcqRel: Release publishes the new waker to the fire
                // function; Acquire (on failure) sees its WAKING.
                match this.state.compare_exchange(REGISTERING, WAITING, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => drop(old),
                    Err(_) => {
                        // The node fired while we held the slot and left
                        // the wake to us.
                        // SAFETY: still REGISTERING | WAKING: ours.
                        let new = this.waker.with_mut(|slot| unsafe { (*slot).take() });
                        this.state.swap(WAITING, Ordering::AcqRel);
                        drop(old);
                        if let Some(new) = new {
                            new.wake();
                        }
                    }
                }
            }
            // WAKING: the node is firing now; its object has completed.
            Err(_) => waker.wake_by_ref(),
        }
    }

    /// Gives the future's share up: its waker is dropped now if the node
    /// has not fired (a future dropped early does not keep its task alive),
    /// and the node is freed if the completion's share is gone too.
    ///
    /// # Safety
    /// The completion's object is alive.
    pub(crate) unsafe fn release(self) {
        // SAFETY: our share keeps the node alive.
        let this = unsafe { self.node.as_ref() };
        if this.state.compare_exchange(WAITING, REGISTERING, Ordering::Acquire, Ordering::Acquire).is_ok() {
            // SAFETY: REGISTERING gives us the slot.
            let waker = this.waker.with_mut(|slot| unsafe { (*slot).take() });
            // A fire that saw REGISTERING leaves the wake to us; there is
            // nobody left to wake.
            this.state.swap(WAITING, Ordering::AcqRel);
            drop(waker);
        }
        // SAFETY: our share, given up once (`self` is consumed); the
        // object is alive per the contract.
        unsafe { FutureWaiter::release(self.node.as_ptr()) };
    }
}

/// One poll of a future awaiting `completion`: ready with the final state,
/// or pending with `waker` registered (the first time, a node is linked
/// into `registration`; later, its waker is replaced).
pub(super) fn poll_completion(
    completion: &Completion,
    registration: &mut Option<Registration>,
    waker: &Waker,
) -> Poll<Outcome> {
    if let Some(outcome) = completion.state() {
        return Poll::Ready(outcome);
    }
    match registration {
        None => match Registration::register(completion, waker) {
            Ok(linked) => {
                *registration = Some(linked);
                Poll::Pending
            }
            Err(outcome) => Poll::Ready(outcome),
        },
        Some(linked) => {
            linked.update(waker);
            // The node may have fired before the update: then the state
            // is final here (see `update`), and nothing will wake us again.
            match completion.state() {
                Some(outcome) => Poll::Ready(outcome),
                None => Poll::Pending,
            }
        }
    }
}
