//! Live-object counts: read by tools through `rust_mlir_async_runtime_stats`
//! (leak checks after each run) and reported by the destroy hook.
//!
//! Objects are process-wide (a token may be created before any runtime
//! instance exists and outlive it), so these counts are too.

use crate::object::Kind;
use crate::observe;
use crate::sync::process::{AtomicI64, Ordering};

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
    observe::object_created(kind, || live_objects().total());
}

pub(crate) fn object_freed(kind: Kind) {
    counter(kind).fetch_sub(1, Ordering::Relaxed);
}

/// Tokens, values and groups alive now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LiveObjects {
    pub(crate) tokens: i64,
    pub(crate) values: i64,
    pub(crate) groups: i64,
}

impl LiveObjects {
    pub(crate) fn total(&self) -> i64 {
        self.tokens + self.values + self.groups
    }
}

pub(crate) fn live_objects() -> LiveObjects {
    LiveObjects {
        tokens: counter(Kind::Token).load(Ordering::Relaxed),
        values: counter(Kind::Value).load(Ordering::Relaxed),
        groups: counter(Kind::Group).load(Ordering::Relaxed),
    }
}

/// One line on stderr if any object is still alive.
pub(crate) fn report_live_objects(when: &str) {
    let live = live_objects();
    if live.total() != 0 {
        crate::misuse::warn(&format!(
            "{when}: still alive: {} token(s), {} value(s), {} group(s)",
            live.tokens, live.values, live.groups
        ));
    }
}
