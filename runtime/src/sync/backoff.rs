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

use std::time::{Duration, Instant};

use crate::sync::thread;

pub(crate) struct Backoff {
    round: u32,
    spins: u32,
    yields: u32,
    /// With a budget: the yields go on until this much time has passed
    /// since the first (the clock is read every [`Backoff::CLOCK_EVERY`]).
    budget: Option<Duration>,
    since: Option<Instant>,
}

impl Backoff {
    /// `spins` rounds of a spin-loop hint, then `yields` of a yield.
    pub(crate) const fn new(spins: u32, yields: u32) -> Backoff {
        Backoff { round: 0, spins, yields, budget: None, since: None }
    }

    const CLOCK_EVERY: u32 = 8;

    /// `spins` rounds of a spin-loop hint, then yields for `budget`.
    #[cfg_attr(loom, allow(dead_code))] // loom models wait with counts only (`wait.rs`)
    pub(crate) const fn timed(spins: u32, budget: Duration) -> Backoff {
        Backoff { round: 0, spins, yields: u32::MAX - spins, budget: Some(budget), since: None }
    }

    /// From the start again (the awaited thing came, and went).
    #[inline]
    pub(crate) fn reset(&mut self) {
        self.round = 0;
        self.since = None;
    }

    /// One round of waiting; false once spinning and yielding are done.
    #[inline]
    pub(crate) fn snooze(&mut self) -> bool {
        self.round += 1;
        if self.round <= self.spins {
            std::hint::spin_loop();
            true
        } else if self.round <= self.spins + self.yields {
            if let Some(budget) = self.budget {
                let since = *self.since.get_or_insert_with(Instant::now);
                if (self.round - self.spins) % Self::CLOCK_EVERY == 0 && since.elapsed() >= budget {
                    return false;
                }
            }
            thread::yield_now();
            true
        } else {
            false
        }
    }
}
