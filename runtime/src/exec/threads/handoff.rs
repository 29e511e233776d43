//! The hand-off of a switched-out task's fiber to the completion that ends
//! its wait (README.md beside this file, "The hand-off"): a slot for the
//! fiber, and no state of its own.
//!
//! The task switches out first; the thread it switched out to stores the
//! fiber, and only then links the task's waiter node to the awaited object
//! ([`Handoff::park`]), as Go's `gopark` runs its unlock function once the
//! goroutine is off its stack. So the completion can never fire while the
//! fiber is still switching out: the object's word decides alone.
//!
//! - The link succeeds: the completion fires the node later, and the
//!   resumption it makes ready takes the fiber ([`Handoff::take`]). The
//!   link's Release compare-and-swap publishes the slot's write to the
//!   completer, whose swap of the word acquires it.
//! - The link is refused, the object completed since the task looked at it:
//!   the fiber comes back, and this thread resumes it at once.
//!
//! The models in `loom_handoff.rs` (on a real [`Completion`]) check that
//! every fiber is resumed exactly once, and that the slot's write happens
//! before its read; they fail when a refused link is taken for a link
//! (mutation 9, `mutation-handoff-no-check`) and when the node is linked
//! before the fiber is stored (mutation 10, `mutation-handoff-link-first`).
//!
//! [`Completion`]: crate::object::completion::Completion

use crate::sync::mutation;

pub(super) struct Handoff<T> {
    slot: crate::sync::cell::UnsafeCell<Option<T>>,
}

impl<T> Handoff<T> {
    pub(super) fn new() -> Handoff<T> {
        Handoff { slot: crate::sync::cell::UnsafeCell::new(None) }
    }

    /// Stores `value`, then calls `link` (which links the node this
    /// hand-off is part of to the awaited object, true when linked): `Ok`
    /// once linked (the completion's side takes the value), the value back
    /// when the object completed first (resume it now).
    ///
    /// # Safety
    /// Called once, by the thread the task switched out to, before the node
    /// is linked; nobody reaches the hand-off but through the node.
    pub(super) unsafe fn park(&self, value: T, link: impl FnOnce() -> bool) -> Result<(), T> {
        // Mutation 10 stores after the link, where the completion may read
        // the slot already (the race it is for); never in a build anyone
        // uses.
        let mut value = Some(value);
        if !mutation::HANDOFF_LINK_FIRST {
            // SAFETY: the node is not linked yet: nobody else reaches the
            // slot.
            unsafe { self.put(value.take()) };
        }
        let linked = link();
        if mutation::HANDOFF_LINK_FIRST {
            // SAFETY: see above (mutation 10 only).
            unsafe { self.put(value.take()) };
        }
        if linked || mutation::HANDOFF_NO_CHECK {
            return Ok(());
        }
        // SAFETY: the link was refused: the node was never shared, and the
        // slot is still this thread's alone.
        Err(unsafe { self.take() })
    }

    /// The parked value, for the task that resumes it.
    ///
    /// # Safety
    /// The node was linked and has fired; this is called once, after the
    /// firing (on the thread that fired, or one that the queue synchronised
    /// with).
    pub(super) unsafe fn take(&self) -> T {
        // SAFETY: per the contract, the slot was filled (before the link,
        // which the firing's swap acquired) and nobody else reads it.
        self.slot.with_mut(|slot| unsafe { (*slot).take() }).expect("the hand-off's slot holds the value")
    }

    /// # Safety
    /// No other access to the slot at the same time.
    unsafe fn put(&self, value: Option<T>) {
        // SAFETY: per the contract.
        self.slot.with_mut(|slot| unsafe { *slot = value });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_linked_value_goes_to_the_completion() {
        let handoff = Handoff::new();
        // SAFETY: one parking side.
        assert!(unsafe { handoff.park(7, || true) }.is_ok());
        // SAFETY: linked; taken once.
        assert_eq!(unsafe { handoff.take() }, 7);
    }

    #[test]
    fn a_refused_link_gives_the_value_back() {
        let handoff = Handoff::new();
        // SAFETY: one parking side.
        assert_eq!(unsafe { handoff.park(7, || false) }, Err(7));
    }
}
