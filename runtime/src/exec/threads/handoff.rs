//! The hand-off between a task that switches out of its thread and the
//! completion that ends its wait (README.md beside this file, "The
//! hand-off"): one state byte and a slot for the switched-out fiber.
//!
//! The task registers its waiter node and then switches out; the object
//! may complete at any moment of that, even before the switch is done and
//! the fiber can be resumed elsewhere. So the fiber is resumed by whichever
//! side comes second:
//!
//! - the drainer, back on its own stack, stores the fiber and moves
//!   `SWITCHING -> PARKED` ([`Handoff::park`]); if the state is `FIRED`
//!   already, it keeps the fiber and resumes it at once;
//! - the completion moves the state to `FIRED` ([`Handoff::fire`]); if it
//!   was `PARKED`, the fiber is in the slot and the completion makes its
//!   resumption ready ([`Handoff::take`] by the thread that runs it).
//!
//! The models in `loom_handoff.rs` check that every fiber is resumed
//! exactly once, and that the slot's write happens before its read; they
//! fail when the state check is taken out (mutation 9,
//! `mutation-handoff-no-check`) and when the orderings that order the
//! slot's accesses are relaxed (mutation 10, `mutation-handoff-relaxed`).

use crate::sync::mutation;
use crate::sync::{AtomicU8, Ordering};

const SWITCHING: u8 = 0;
const PARKED: u8 = 1;
const FIRED: u8 = 2;

pub(super) struct Handoff<T> {
    state: AtomicU8,
    slot: Slot<T>,
}

impl<T> Handoff<T> {
    pub(super) fn new() -> Handoff<T> {
        Handoff { state: AtomicU8::new(SWITCHING), slot: Slot::new() }
    }

    /// The drainer's half, once the task switched out: parks `value`, or
    /// gives it back when the object completed meanwhile (resume it now).
    ///
    /// # Safety
    /// Called once, by the side that switched the task out.
    pub(super) unsafe fn park(&self, value: T) -> Result<(), T> {
        // SAFETY: nobody reads the slot before the state is PARKED.
        unsafe { self.slot.put(value) };
        if mutation::HANDOFF_NO_CHECK {
            self.state.store(PARKED, Ordering::Release);
            return Ok(());
        }
        // AcqRel: Release publishes the slot's write to the completion
        // (its swap is Acquire); Acquire, on failure, pairs with the
        // completion's Release (the object's final state, seen by the task
        // this side resumes at once).
        let (success, failure) = if mutation::HANDOFF_RELAXED {
            (Ordering::Relaxed, Ordering::Relaxed)
        } else {
            (Ordering::AcqRel, Ordering::Acquire)
        };
        match self.state.compare_exchange(SWITCHING, PARKED, success, failure) {
            Ok(_) => Ok(()),
            // SAFETY: fired before parked: the completion will not read
            // the slot; the value is still this side's.
            Err(_) => Err(unsafe { self.slot.take() }),
        }
    }

    /// The completion's half: true when the value is parked, and the
    /// caller must make its resumption ready (which then [`Handoff::take`]s
    /// it); false when the drainer will find the state fired and resume it.
    /// The handoff must not be touched after this returns (the task may
    /// run and free it).
    pub(super) fn fire(&self) -> bool {
        // AcqRel: Acquire pairs with `park`'s Release (the slot is
        // written); Release publishes the object's final state to the task.
        let order = if mutation::HANDOFF_RELAXED { Ordering::Relaxed } else { Ordering::AcqRel };
        self.state.swap(FIRED, order) == PARKED
    }

    /// The parked value, for the task that resumes it.
    ///
    /// # Safety
    /// [`Handoff::fire`] returned true, and this is called once, after it
    /// (on the thread that fired, or one that the queue synchronised with).
    pub(super) unsafe fn take(&self) -> T {
        // SAFETY: per the contract, the slot was filled and nobody else
        // reads it.
        unsafe { self.slot.take() }
    }
}

/// The slot: std's `UnsafeCell`, or loom's (which checks that its accesses
/// are ordered) in a model.
struct Slot<T>(crate::sync::cell::UnsafeCell<Option<T>>);

impl<T> Slot<T> {
    fn new() -> Slot<T> {
        Slot(crate::sync::cell::UnsafeCell::new(None))
    }

    /// # Safety
    /// No other access to the slot at the same time.
    unsafe fn put(&self, value: T) {
        // SAFETY: per the contract.
        self.0.with_mut(|slot| unsafe { *slot = Some(value) });
    }

    /// # Safety
    /// No other access to the slot at the same time; it holds a value.
    unsafe fn take(&self) -> T {
        // SAFETY: per the contract.
        self.0.with_mut(|slot| unsafe { (*slot).take() }).expect("the hand-off's slot holds the value")
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn parked_then_fired_goes_to_the_completion() {
        let handoff = Handoff::new();
        // SAFETY: one parking side.
        assert!(unsafe { handoff.park(7) }.is_ok());
        assert!(handoff.fire());
        // SAFETY: fire returned true.
        assert_eq!(unsafe { handoff.take() }, 7);
    }

    #[test]
    fn fired_while_switching_stays_with_the_drainer() {
        let handoff = Handoff::new();
        assert!(!handoff.fire());
        // SAFETY: one parking side.
        assert_eq!(unsafe { handoff.park(7) }, Err(7));
    }
}
