//! The one backoff of a thread that waits for another: spin, then yield,
//! then stop (the caller parks or leaves). The drain loop's idle wait and
//! the blocking waits use it, each with its own counts.
//!
//! Not crossbeam-utils' `Backoff`: that one spins in doubling rounds and
//! yields through `std`, so a loom model could not preempt a thread in it
//! (this one yields through [`crate::sync::thread`]), and its fixed counts
//! are not the ones the drain loop and the waits were tuned with (the
//! per-task instruction budget of `make bench-instr` counts the drain
//! loop's spins).

use crate::sync::thread;

pub(crate) struct Backoff {
    round: u32,
    spins: u32,
    yields: u32,
}

impl Backoff {
    /// `spins` rounds of a spin-loop hint, then `yields` of a yield.
    pub(crate) const fn new(spins: u32, yields: u32) -> Backoff {
        Backoff { round: 0, spins, yields }
    }

    /// From the start again (the awaited thing came, and went).
    #[inline]
    pub(crate) fn reset(&mut self) {
        self.round = 0;
    }

    /// One round of waiting; false once spinning and yielding are done.
    #[inline]
    pub(crate) fn snooze(&mut self) -> bool {
        self.round += 1;
        if self.round <= self.spins {
            std::hint::spin_loop();
            true
        } else if self.round <= self.spins + self.yields {
            thread::yield_now();
            true
        } else {
            false
        }
    }
}
