//! A thread that waits in a blocking `Await*` outside the pool (the
//! program's main thread, an embedder's thread) runs, while its object is
//! not ready, the queued tasks that produce it, each on a task stack
//! (README.md beside this file, "A waiting thread runs its producers").
//!
//! By default ([`WaiterRuns::Producers`]) the waiter takes from its own
//! entry, oldest first, the tasks bound to the awaited token or value or
//! to a token of the awaited group (`binding.rs`); an older task that is
//! not one goes to the shared queue, where the pool runs it, as the C++
//! runtime runs every task. With `WaiterRuns::Any` (an opt-in) it takes
//! any task: its entry's newest, then the queue's oldest, then other
//! threads' deques and slots.
//!
//! It runs each on its fiber ([`WaiterFiber`]): a task that blocks in an
//! `Await*` switches out with that fiber and goes on later on whichever
//! thread takes it up; the waiter goes on with a fresh fiber. Once its
//! object is ready, the waiter finishes the task it runs and returns. The
//! tasks run with the floating-point environment of a pool thread, and the
//! waiter gets its own back after them.
//!
//! While it holds a task, the scheduler is not idle: its entry's running
//! flag is up from before its take to the end of its batch (the `held`
//! count counts the waiters without an entry), and [`Scheduler::is_idle`]
//! reads both. A waiter that ends its batch tells the threads waiting for
//! idleness, as the last drainer does.

use crossbeam_deque::Steal;

use std::cell::{Cell, RefCell};

use crate::base::task::{Route, Task};
use crate::exec::config::WaiterRuns;
use crate::exec::threads::patience::SlotPatience;
use crate::exec::threads::fibers::Batch;
#[cfg(doc)]
use crate::exec::threads::fibers::WaiterFiber;
use crate::exec::threads::{binding, overflow, Scheduler};
use crate::object::completion::Completion;

/// How many tasks of the pool's deques that it does not wait for a waiter
/// moves to the shared queue in one batch, at most: a bound on how much it
/// reorders a pool that runs other work while it waits.
const POOL_MISSES: u32 = 2;

impl Scheduler {
    /// Runs queued tasks that the waiters' policy lets this thread run
    /// while it waits for `awaited` (the producers of it, by default) on
    /// its waiter fiber, until `done` or until none is queued; returns how
    /// many ran. Does nothing when waiters run nothing
    /// (`MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=0`, or task stacks off).
    /// `patience` is the wait's, kept from one call to the next, one call
    /// a round: how long a task in a runtime thread's next-task slot has
    /// waited (`take_slot_task_for_waiter`).
    pub(super) fn run_tasks_while_waiting(
        &self,
        awaited: &Completion,
        done: impl Fn() -> bool,
        patience: &mut SlotPatience,
    ) -> usize {
        patience.next_round();
        let any = match self.config.waiters_run {
            WaiterRuns::Nothing => return 0,
            WaiterRuns::Producers => false,
            WaiterRuns::Any => true,
        };
        let awaited_at = binding::address(awaited);
        // The pool's deques may hold producers of a group that tasks add
        // to (a parallel loop's blocks that workers split off).
        let from_pool = !any && self.pool_bindings.may_hold(awaited_at);
        let may_run = if any {
            // (The opt-in's pool has a worker fewer: the waiter takes a
            // core, `config.rs`.)
            self.may_have_task_for_waiter(patience)
        } else {
            // Even while every worker runs a task: the waiter, blocked
            // otherwise, takes part, as OpenMP's caller does in its loops
            // (a waiter that left its producers to busy workers made
            // elementwise loops 1.3x slower than OpenMP's on 2 cores).
            self.has_own_outside_task() || (from_pool && self.may_have_pool_task(patience))
        };
        if !may_run {
            return 0;
        }
        self.with_waiter_fiber(|fiber| {
            if fiber.needs_fiber() {
                // A task that overflows its stack here is named, as on a
                // worker (gives the thread an alternate signal stack if it
                // has none): before a new fiber, not at every batch (a
                // thread-local look, 11 instructions a blocking await).
                overflow::prepare_thread();
            }
            if !fiber.ready(self) {
                return 0;
            }
            // The batch's tasks start with a pool thread's floating-point
            // environment; the waiter's comes back after them.
            let env = self.pool_env.enter();
            let patience = RefCell::new(&mut *patience);
            let misses = Cell::new(0);
            let next = |route: &mut Route| {
                *route = Route::Waiter;
                if done() {
                    None
                } else if any {
                    self.take_for_waiter(&mut patience.borrow_mut())
                } else {
                    self.take_own_producer(awaited).or_else(|| {
                        if from_pool {
                            self.take_pool_producer(awaited_at, &misses, &mut patience.borrow_mut())
                        } else {
                            None
                        }
                    })
                }
            };
            let batch = Batch::new(&next);
            // A task that switches out takes the fiber with it; the batch
            // goes on on a fresh one.
            while !fiber.run_batch(&batch) && !done() && fiber.ready(self) {}
            drop(env);
            batch.ran()
        })
    }

    /// True while waiters run tasks and, with the workers that run one
    /// (a permit held, not looking for work), fill every core (a hint:
    /// `drain_loop.rs` naps rather than spin then).
    pub(super) fn cores_taken(&self) -> bool {
        // (The waiters without an entry, beyond the 64 that hold one, are
        // left out: `held` counts them with the tasks switched out.)
        let waiters = self.deques.outside_running();
        waiters > 0 && {
            // Relaxed: a hint; nothing is published through it.
            let s = self.drainers.hint();
            let running = s.permits().saturating_sub(s.lookers());
            waiters + running >= self.cores
        }
    }

    /// A cheap look, before the waiter counts itself in: may a task be
    /// queued for it? (One queued after this look is seen at the waiter's
    /// next round.) The slots only every few rounds, as an idle drainer
    /// looks at them (`SlotPatience::looks_at_slots`).
    fn may_have_task_for_waiter(&self, patience: &SlotPatience) -> bool {
        !self.queue.is_empty() || self.has_own_outside_task() || self.may_have_pool_task(patience)
    }

    /// May a runtime thread's deque, or (every few rounds, as an idle
    /// drainer looks at them: `SlotPatience::looks_at_slots`) its
    /// next-task slot, hold a task for the waiter? A hint.
    fn may_have_pool_task(&self, patience: &SlotPatience) -> bool {
        self.deques.any_deque_task() || (patience.looks_at_slots() && self.deques.any_slot_task())
    }

    /// The oldest task of a runtime thread's deque, else a task that
    /// waited long enough in a runtime thread's next-task slot, if it
    /// produces `awaited` (a completion's address; `pool_bindings.rs`). A
    /// task that does not goes to the shared queue, where the pool runs
    /// it; after [`POOL_MISSES`] of those in a batch, the waiter leaves the
    /// pool's tasks alone until its next round. (A parallel loop's block
    /// that a worker split off before it ran its own big block waits in
    /// its slot until that block ends, while the caller, its own blocks
    /// done, would only wait: a triangular loop's last block.)
    fn take_pool_producer(&self, awaited: usize, misses: &Cell<u32>, patience: &mut SlotPatience) -> Option<Task> {
        while misses.get() < POOL_MISSES {
            let task = self.deques.steal_one().or_else(|| self.take_slot_task_for_waiter(patience))?;
            if self.pool_bindings.produces(&task, awaited) {
                return Some(task);
            }
            misses.set(misses.get() + 1);
            self.push(task);
        }
        None
    }

    /// Counts the calling thread in `held` until the guard drops:
    /// tasks it holds out of the queue and the entries (the batch of a
    /// waiter without an entry, an exiting thread's leftovers on their way
    /// to the queue) keep the scheduler from being idle meanwhile. (A
    /// waiter with an entry holds its batch through the entry's running
    /// flag: `with_waiter_fiber`.)
    pub(super) fn hold_for_waiter(&self) -> WaiterHold<'_> {
        // (SeqCst, as `is_idle`'s load: a thread that sees the queue and
        // the entries empty after a take sees the count raised.)
        self.idle.hold();
        WaiterHold(self)
    }

    /// The newest task this thread queued itself (`outside.rs`), else the
    /// oldest in the shared queue, else the oldest of a runtime thread's
    /// deque, as an idle drainer steals it (a parallel loop's blocks that a
    /// worker split off its part, which the caller would otherwise only
    /// wait for), else a task that waited long enough in a runtime
    /// thread's next-task slot, with an idle drainer's patience.
    fn take_for_waiter(&self, patience: &mut SlotPatience) -> Option<Task> {
        if let Some(task) = self.take_own_outside() {
            return Some(task);
        }
        loop {
            match self.queue.steal() {
                Steal::Success(task) => return Some(task),
                Steal::Empty => break,
                Steal::Retry => {}
            }
        }
        if let Some(task) = self.deques.steal_one() {
            return Some(task);
        }
        self.take_slot_task_for_waiter(patience)
    }

    /// A task that waited in a runtime thread's next-task slot for as
    /// long as an idle drainer lets it, in the waiter's rounds.
    fn take_slot_task_for_waiter(&self, patience: &mut SlotPatience) -> Option<Task> {
        if !patience.looks_at_slots() {
            return None;
        }
        let task = self.deques.steal_from_slots_for_waiter(patience)?;
        // The next task watched starts its patience over.
        patience.reset();
        Some(task)
    }
}

/// See [`Scheduler::hold_for_waiter`].
pub(super) struct WaiterHold<'a>(&'a Scheduler);

impl Drop for WaiterHold<'_> {
    fn drop(&mut self) {
        // SeqCst: with a leaving drainer's `SeqCst` update and its look at
        // this count in `is_idle`, one of the two sees the other gone; the
        // one that does tells the threads waiting for idleness.
        if self.0.idle.release() {
            self.0.idle.notify_if(|| self.0.is_idle());
        }
    }
}
