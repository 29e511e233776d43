//! Live-object counters, read by tools through
//! `rust_mlir_async_runtime_stats` (leak checks after each run) and
//! reported at teardown.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::object::Kind;

/// One counter per cache line, so creating tokens on one core does not
/// slow down creating values on another.
#[repr(align(64))]
struct PaddedCounter(AtomicI64);

static LIVE: [PaddedCounter; 3] = [
    PaddedCounter(AtomicI64::new(0)),
    PaddedCounter(AtomicI64::new(0)),
    PaddedCounter(AtomicI64::new(0)),
];

fn counter(kind: Kind) -> &'static AtomicI64 {
    &LIVE[kind as usize].0
}

// Relaxed on every counter: they order nothing; once the runtime is idle,
// the task-completion synchronisation (and `wait_idle`) makes the final
// values visible.
pub(crate) fn object_created(kind: Kind) {
    counter(kind).fetch_add(1, Ordering::Relaxed);
    crate::observe::object_created(kind);
}

pub(crate) fn object_freed(kind: Kind) {
    counter(kind).fetch_sub(1, Ordering::Relaxed);
}

/// A snapshot of the runtime's counters (C layout: the introspection ABI).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    pub live_tokens: i64,
    pub live_values: i64,
    pub live_groups: i64,
    pub tasks_in_flight: i64,
}

impl RuntimeStats {
    pub fn live_objects(&self) -> i64 {
        self.live_tokens + self.live_values + self.live_groups
    }
}

pub fn snapshot() -> RuntimeStats {
    RuntimeStats {
        live_tokens: counter(Kind::Token).load(Ordering::Relaxed),
        live_values: counter(Kind::Value).load(Ordering::Relaxed),
        live_groups: counter(Kind::Group).load(Ordering::Relaxed),
        tasks_in_flight: crate::scheduler::tasks_in_flight() as i64,
    }
}

/// One line on stderr if any object is still alive.
pub(crate) fn report_live_objects(when: &str) {
    let stats = snapshot();
    if stats.live_objects() != 0 {
        eprintln!(
            "mlir_async_runtime: {when}: still alive: {} token(s), {} value(s), {} group(s)",
            stats.live_tokens, stats.live_values, stats.live_groups
        );
    }
}
