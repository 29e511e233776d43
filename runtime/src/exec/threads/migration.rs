//! The migration check: proof that the runtime's frames on a task's stack
//! read this thread's thread-locals after the task switched back in, not
//! those of the thread it left (threads/README.md, "Thread-locals").
//!
//! With `MLIR_ASYNC_RUNTIME_CHECK_MIGRATION=1`, a task that switches out
//! reads the addresses of the five thread-locals the runtime reads on a
//! resumed task's path (its worker identity, the cached instance, the trace
//! buffer, the recycler's free lists, the fuzzer's stream) through their
//! accessors before the switch and again after it, in the same activation,
//! and compares the second reading with one taken in a fresh activation.
//! A task resumed on another thread counts as a migration; a second
//! reading that differs from the fresh one is a stale thread-local, said
//! once on stderr and counted (`runtime/tests/migration.rs` asserts none).
//! The accessors are `#[inline(never)]`; inlined (mutation 8), LLVM keeps
//! the addresses computed before the switch and the check finds them stale.

use std::sync::OnceLock;

use crate::exec::threads::{ThreadState, STATE};
use crate::object::recycle::cache_address;
use crate::probe::{fuzz, trace};
use crate::sync::misuse::warn;
use crate::sync::process::{AtomicU64, AtomicU8, Ordering};

/// Environment variable that turns the check on (`1`).
pub(crate) const CHECK_MIGRATION_ENV: &str = "MLIR_ASYNC_RUNTIME_CHECK_MIGRATION";

const UNKNOWN: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;
static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);
static MIGRATIONS: AtomicU64 = AtomicU64::new(0);
static STALE: AtomicU64 = AtomicU64::new(0);

/// The five thread-locals' addresses on one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Addresses([usize; 5]);

const NAMES: [&str; 5] = ["worker identity", "cached instance", "trace buffer", "recycler", "fuzzer stream"];

/// The accessor of the instance cache's thread-local (`instance/cached.rs`,
/// in the layer above), registered when an instance starts.
static INSTANCE_CACHE: OnceLock<fn() -> usize> = OnceLock::new();

/// Registers the accessor of the instance cache's thread-local, read with
/// the others (called when an instance starts; the first call counts).
pub(crate) fn register_instance_cache(address: fn() -> usize) {
    let _ = INSTANCE_CACHE.get_or_init(|| address);
}

/// The instance cache's address on this thread (0 before an instance
/// registered its accessor).
#[inline(always)]
fn cached_instance_address() -> usize {
    INSTANCE_CACHE.get().map_or(0, |address| address())
}

/// True when the check is on. Relaxed: the flag guards no other memory.
pub(super) fn enabled() -> bool {
    match MODE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => {
            let on = std::env::var(CHECK_MIGRATION_ENV).is_ok_and(|v| v.trim() == "1");
            MODE.store(if on { ON } else { OFF }, Ordering::Relaxed);
            on
        }
    }
}

/// The addresses, read through the accessors. `#[inline(always)]`: the
/// check needs the accessors' calls in its caller's activation (where an
/// inlined accessor's address could be kept across the switch).
#[inline(always)]
pub(super) fn read() -> Addresses {
    Addresses([worker_address(), cached_instance_address(), trace::buffer_address(), cache_address(), fuzz::stream_address()])
}

/// Compares `after`, read in the switching frame after the switch, with a
/// fresh reading; `before` tells whether the task moved to another thread.
#[inline(never)]
pub(super) fn check(before: Addresses, after: Addresses) {
    let fresh = fresh();
    if fresh.0[0] != before.0[0] {
        // Relaxed: counters the test reads after the runtime's threads
        // were joined.
        MIGRATIONS.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(i) = (0..5).find(|&i| after.0[i] != fresh.0[i]) {
        if STALE.fetch_add(1, Ordering::Relaxed) == 0 {
            warn(&format!(
                "migration check: the {} read after a task switched back in is the old thread's",
                NAMES[i]
            ));
        }
    }
}

#[inline(never)]
fn fresh() -> Addresses {
    read()
}

/// Tasks resumed on another thread than they left, and readings found
/// stale, since the process started.
pub(crate) fn results() -> (u64, u64) {
    (MIGRATIONS.load(Ordering::Relaxed), STALE.load(Ordering::Relaxed))
}

/// The address of this thread's scheduler state, its worker identity (the
/// migration check, `migration.rs`). Never inlined, as every read of a
/// thread-local after a task's switch (`sync/mutation.rs`, 8).
#[cfg_attr(feature = "mutation-tls-inline", inline(always))]
#[cfg_attr(not(feature = "mutation-tls-inline"), inline(never))]
pub(super) fn worker_address() -> usize {
    crate::sync::tls::fresh(STATE.try_with(|state| state as *const ThreadState as usize).unwrap_or(0))
}
