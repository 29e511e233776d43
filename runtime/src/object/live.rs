//! Live-object counts: read by tools through `rust_mlir_async_runtime_stats`
//! (leak checks after each run) and reported by the destroy hook.
//!
//! Objects are process-wide (a token may be created before any runtime
//! instance exists and outlive it), so these counts are too. Creating and
//! freeing objects is the hottest path there is, and a shared counter there
//! moves one cache line between the cores at every task: each thread counts
//! in its own block instead (a relaxed load and store, no read-modify-write,
//! no shared line), and reading sums the blocks. A thread's count may be
//! negative (it freed objects another thread created); only the sum means
//! anything. An exiting thread folds its block into `RETIRED`.

use std::sync::Arc;

use crate::base::kind::Kind;
use crate::probe::observe;
use crate::sync::process::{AtomicI64, ForkSafeLock, Ordering};
use crate::sync::tls;

/// Net objects created minus freed, per kind, by one thread.
#[derive(Default)]
struct Block([AtomicI64; 3]);

/// The blocks of the threads alive that counted something.
static BLOCKS: ForkSafeLock<Vec<Arc<Block>>> = ForkSafeLock::new(Vec::new());
/// The sums of the blocks of threads that exited (under `BLOCKS`' lock).
static RETIRED: [AtomicI64; 3] = [AtomicI64::new(0), AtomicI64::new(0), AtomicI64::new(0)];

/// A thread's registered block; folded into `RETIRED` when the thread exits.
struct Local(Arc<Block>);

impl Local {
    fn register() -> Local {
        let block = Arc::new(Block::default());
        BLOCKS.lock().push(Arc::clone(&block));
        Local(block)
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        tls::with(|slots| slots.live.set(std::ptr::null()));
        let mut blocks = BLOCKS.lock();
        for (kind, cell) in self.0 .0.iter().enumerate() {
            // Relaxed: under the lock that readers take too.
            RETIRED[kind].fetch_add(cell.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        blocks.retain(|b| !Arc::ptr_eq(b, &self.0));
    }
}

thread_local! {
    /// This thread's block, registered on first use; it owns the block
    /// and folds it into `RETIRED` when the thread exits. The counting fast
    /// path reads it through the `live` slot of `tls` (one load); the slot
    /// is null until registered, and again once `LOCAL` is gone.
    static LOCAL: Local = Local::register();
}

#[inline]
fn count(kind: Kind, delta: i64) {
    let block = tls::with(|slots| slots.live.get()).cast::<Block>();
    if block.is_null() {
        return count_slow(kind, delta);
    }
    // SAFETY: the block is alive while `LOCAL` owns it, and `LOCAL`'s drop
    // clears the slot first.
    unsafe { count_in(block, kind, delta) }
}

/// [`count`] before this thread's block is registered, or once it is gone.
/// Out of line, so that the creation of every token and value does not
/// carry it (nor save the registers it needs).
#[cold]
#[inline(never)]
fn count_slow(kind: Kind, delta: i64) {
    let block = LOCAL.try_with(|local| Arc::as_ptr(&local.0)).unwrap_or(std::ptr::null());
    if block.is_null() {
        // This thread's block is gone (an object freed by a
        // thread-local destructor at thread exit): count it as retired.
        let _blocks = BLOCKS.lock();
        RETIRED[kind as usize].fetch_add(delta, Ordering::Relaxed);
        return;
    }
    tls::with(|slots| slots.live.set(block.cast()));
    // SAFETY: as in `count`: `LOCAL` owns the block.
    unsafe { count_in(block, kind, delta) }
}

/// # Safety
/// `block` is this thread's block, alive.
#[inline(always)]
unsafe fn count_in(block: *const Block, kind: Kind, delta: i64) {
    // SAFETY: per the contract.
    let cell = unsafe { &(*block).0[kind as usize] };
    // Relaxed load and store: only this thread writes its block. A reader
    // after the runtime went idle sees the final values: the task's end
    // synchronises with `wait_idle` (exec/threads/README.md).
    cell.store(cell.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
}

#[inline]
pub(crate) fn object_created(kind: Kind) {
    count(kind, 1);
    observe::object_created(kind, live_total);
}

/// The objects alive now, for the counters (`MLIR_ASYNC_RUNTIME_STATS`):
/// out of line, as the counters are off unless asked for.
#[cold]
#[inline(never)]
fn live_total() -> i64 {
    live_objects().total()
}

#[inline]
pub(super) fn object_freed(kind: Kind) {
    count(kind, -1);
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
    let blocks = BLOCKS.lock();
    let sum = |kind: Kind| {
        let k = kind as usize;
        RETIRED[k].load(Ordering::Relaxed) + blocks.iter().map(|b| b.0[k].load(Ordering::Relaxed)).sum::<i64>()
    };
    LiveObjects { tokens: sum(Kind::Token), values: sum(Kind::Value), groups: sum(Kind::Group) }
}

/// One line on stderr if any object is still alive.
pub(crate) fn report_live_objects(when: &str) {
    let live = live_objects();
    if live.total() != 0 {
        crate::sync::misuse::warn(&format!(
            "{when}: still alive: {} token(s), {} value(s), {} group(s)",
            live.tokens, live.values, live.groups
        ));
    }
}

/// Before `fork`: no other thread may hold the registry's lock in the child.
pub(crate) fn hold_for_fork() {
    BLOCKS.hold_for_fork();
}

/// After `fork`, in the parent and in the child.
pub(crate) fn release_after_fork() {
    BLOCKS.release_after_fork();
}
