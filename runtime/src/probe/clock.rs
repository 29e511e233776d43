//! The time of trace events: nanoseconds since the process's first probe,
//! or, while a deterministic schedule runs ([`crate::exec::deterministic`]), logical
//! time: every reading is one tick (1 µs) after the previous one. Only one
//! thread runs at a time in that mode, in an order fixed by the seed, so
//! the readings, and the trace, are the same in every replay.

use std::time::Instant;

use crate::sync::process::{AtomicBool, AtomicU64, AtomicUsize, OnceLock, Ordering};

/// The origin of real timestamps.
static EPOCH: OnceLock<Instant> = OnceLock::new();
/// Deterministic instances alive; logical time while non-zero.
static LOGICAL_USERS: AtomicUsize = AtomicUsize::new(0);
/// Logical ticks handed out so far.
static TICKS: AtomicU64 = AtomicU64::new(0);
/// Set once a deterministic instance started: the trace then names no
/// process id (it differs from run to run).
static EVER_LOGICAL: AtomicBool = AtomicBool::new(false);

/// Nanoseconds of one logical tick.
const TICK_NS: u64 = 1000;

/// Starts the real clock (at the first probe).
pub(crate) fn start() {
    EPOCH.get_or_init(Instant::now);
}

/// The time now, in nanoseconds (see the module doc).
pub(super) fn now_ns() -> u64 {
    // Relaxed: a switch that guards no memory; readings in logical time
    // are made by the one thread that runs, and the tick counter's own
    // modification order keeps them increasing.
    if LOGICAL_USERS.load(Ordering::Relaxed) > 0 {
        return (TICKS.fetch_add(1, Ordering::Relaxed) + 1) * TICK_NS;
    }
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// True once readings were logical in this process.
pub(super) fn was_logical() -> bool {
    EVER_LOGICAL.load(Ordering::Relaxed)
}

/// A deterministic instance started: logical time until it ends.
pub(crate) fn logical_begin() {
    EVER_LOGICAL.store(true, Ordering::Relaxed);
    LOGICAL_USERS.fetch_add(1, Ordering::Relaxed);
}

/// A deterministic instance ended.
pub(crate) fn logical_end() {
    LOGICAL_USERS.fetch_sub(1, Ordering::Relaxed);
}
