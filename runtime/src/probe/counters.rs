//! Counters of what the runtime did, printed on stderr at destroy when
//! `MLIR_ASYNC_RUNTIME_STATS=1` (switch in [`crate::probe::observe`]).
//!
//! Each thread counts into its own block of cells, registered once in a
//! global list. Only the owning thread writes a block (a relaxed load and
//! store, no read-modify-write, no shared cache line), and the table sums
//! the blocks of every thread that ever counted (peaks: the maximum).
//! Totals are cumulative since the process started.

use std::sync::Arc;

use crate::base::kind::Kind;
use crate::base::task::{Origin, Route};
use crate::sync::process::{AtomicU64, ForkSafeLock, Ordering};

/// Declares each counter once, with its label in the table: the enum
/// [`Counter`], and `ALL`, every counter and its label in table order.
macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident => $label:literal,)*) => {
        /// One counter of the table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum Counter {
            $($(#[$doc])* $name,)*
        }

        const COUNT: usize = [$($label),*].len();

        const ALL: [(Counter, &str); COUNT] = [$((Counter::$name, $label)),*];
    };
}

counters! {
    /// Tasks run to their next suspension (Execute and continuations).
    TasksExecuted => "tasks executed",
    /// `mlirAsyncRuntimeExecute` tasks run.
    ExecuteTasks => "  from execute",
    /// Continuations run on the completing worker without a queue (the
    /// next-task slot, or nested under schedule fuzzing).
    ContinuationsInline => "  continuations inline",
    /// Continuations that went through the pool's queues.
    ContinuationsPooled => "  continuations via pool",
    /// Tasks (of either kind) run by a thread outside the pool while it
    /// waited in a blocking `Await*`.
    WaiterTasks => "  run by waiting threads",
    /// Blocking `Await*` calls that had to wait.
    BlockingWaits => "blocking waits",
    /// ... of which on a runtime thread, which handed its place over.
    BlockingWaitsInTasks => "  in tasks (handed over)",
    /// Tasks that switched out of their thread in a blocking `Await*`
    /// (their stack went with them; threads/README.md).
    TasksSwitchedOut => "  switched out (own stack)",
    /// ... and were resumed on a thread other than the one they left.
    TasksMigrated => "    resumed elsewhere",
    /// Most task stacks in use at once (drainers' and switched-out tasks').
    PeakTaskStacks => "peak task stacks in use",
    /// Task stacks the kernel refused: the drainer ran its tasks on its
    /// thread's stack instead, and a task that blocked blocked its thread.
    TaskStacksRefused => "task stacks refused",
    /// Spare threads started to take the place of blocked ones.
    SpareThreadsStarted => "spare threads started",
    /// Tasks an outside thread queued on its empty entry while the watch
    /// held (`exec/threads/watch.rs`): no drainer started for them.
    WatchCovered => "tasks queued without a wake-up",
    /// ... of which its owner left, and the watch started a drainer for.
    WatchStarted => "  started by the watch",
    TokensCreated => "tokens created",
    ValuesCreated => "values created",
    GroupsCreated => "groups created",
    /// Most tokens, values and groups alive at once (sampled at creation).
    PeakLiveObjects => "peak live objects",
    /// Most tasks queued or running at once (sampled when queued).
    PeakTasksQueued => "peak tasks queued",
}

impl Counter {
    fn is_peak(self) -> bool {
        matches!(self, Counter::PeakLiveObjects | Counter::PeakTasksQueued | Counter::PeakTaskStacks)
    }
}

type Block = [AtomicU64; COUNT];

static BLOCKS: ForkSafeLock<Vec<Arc<Block>>> = ForkSafeLock::new(Vec::new());

thread_local! {
    static LOCAL: Arc<Block> = {
        let block: Arc<Block> = Arc::new(std::array::from_fn(|_| AtomicU64::new(0)));
        BLOCKS.lock().push(Arc::clone(&block));
        block
    };
}

/// Applies `f` to this thread's cell of `counter`.
fn update(counter: Counter, f: impl FnOnce(u64) -> u64) {
    let _ = LOCAL.try_with(|block| {
        let cell = &block[counter as usize];
        // Relaxed: only this thread writes its block; the reader runs
        // after the workers were joined (or accepts a moving snapshot).
        cell.store(f(cell.load(Ordering::Relaxed)), Ordering::Relaxed);
    });
}

fn add(counter: Counter) {
    update(counter, |n| n + 1);
}

pub(super) fn task_ran(origin: Origin, route: Route) {
    add(Counter::TasksExecuted);
    if route == Route::Waiter {
        add(Counter::WaiterTasks);
    }
    match (origin, route) {
        (Origin::Execute, _) => add(Counter::ExecuteTasks),
        (_, Route::Queued | Route::Waiter) => add(Counter::ContinuationsPooled),
        (_, Route::Slot) => add(Counter::ContinuationsInline),
    }
}

pub(crate) fn queued(in_flight: usize) {
    update(Counter::PeakTasksQueued, |peak| peak.max(in_flight as u64));
}

pub(super) fn blocking_wait(in_task: bool) {
    add(Counter::BlockingWaits);
    if in_task {
        add(Counter::BlockingWaitsInTasks);
    }
}

pub(crate) fn spare_thread_started() {
    add(Counter::SpareThreadsStarted);
}

pub(crate) fn watch_covered() {
    add(Counter::WatchCovered);
}

pub(crate) fn watch_started() {
    add(Counter::WatchStarted);
}

pub(super) fn task_switched_out() {
    add(Counter::TasksSwitchedOut);
}

pub(super) fn task_migrated() {
    add(Counter::TasksMigrated);
}

pub(super) fn task_stacks_in_use(in_use: usize) {
    update(Counter::PeakTaskStacks, |peak| peak.max(in_use as u64));
}

pub(super) fn task_stack_refused() {
    add(Counter::TaskStacksRefused);
}

/// An object of `kind` was created; `live` objects exist now.
pub(crate) fn object_created(kind: Kind, live: i64) {
    add(match kind {
        Kind::Token => Counter::TokensCreated,
        Kind::Value => Counter::ValuesCreated,
        Kind::Group => Counter::GroupsCreated,
    });
    update(Counter::PeakLiveObjects, |peak| peak.max(live.max(0) as u64));
}

/// The totals over every thread so far.
pub fn totals() -> Vec<(Counter, &'static str, u64)> {
    let blocks = BLOCKS.lock();
    ALL.iter()
        .map(|&(counter, label)| {
            let values = blocks.iter().map(|b| b[counter as usize].load(Ordering::Relaxed));
            let total = if counter.is_peak() { values.max().unwrap_or(0) } else { values.sum() };
            (counter, label, total)
        })
        .collect()
}

/// Prints the table on stderr, in one write.
pub(super) fn print_table() {
    let mut text = String::from("mlir_async_runtime: counters since process start\n");
    for (_, label, value) in totals() {
        text.push_str(&format!("  {label:<26}{value:>12}\n"));
    }
    crate::sync::misuse::write_stderr(&text);
}

/// Before `fork`: no other thread may hold the registry's lock in the child.
pub(crate) fn hold_for_fork() {
    BLOCKS.hold_for_fork();
}

/// After `fork`, in the parent and in the child.
pub(crate) fn release_after_fork() {
    BLOCKS.release_after_fork();
}
