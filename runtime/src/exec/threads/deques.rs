//! Per-thread task deques and the registry that lets drainers steal from
//! each other, as in rayon: a runtime thread pushes the tasks it makes
//! ready (`mlirAsyncRuntimeExecute` inside a task) onto its own deque and
//! pops the newest first, so a recursive spawner runs depth-first; an idle
//! drainer steals the oldest from another thread's deque.
//!
//! Every runtime thread of a scheduler (pool threads and spares) has one
//! slot in the registry: pool threads the slot of their rayon index, spares
//! the slot after those that their spare number gives (unique among the
//! spares alive, `spares.rs`). A thread registers its deque when it
//! first drains; a slot whose thread ended keeps that thread's (empty)
//! deque's stealer until the next thread of the slot registers its own.
//! Nothing here is touched when a thread exits, so a thread's exit never
//! reaches into its scheduler.
//!
//! Each slot of the registry also holds that thread's next-task slot
//! (`slot.rs`): it lives here, not in the thread, so that thieves can reach
//! it, and it outlives every thread that uses it.
//!
//! Threads outside the pool that queue tasks (the program's main thread,
//! an embedder's) have entries of their own, after the runtime threads'
//! (`outside.rs`): a slot and a deque each, which thieves take from only as
//! they take from a slot, once the owner has left them alone for a while
//! ([`SlotPatience`]): the owner runs them itself when it waits.

use crossbeam_deque::{Steal, Stealer, Worker};

use crate::base::task::Task;
use crate::exec::threads::patience::{
    look_at_slot, SlotPatience, SlotsSeen, OUTSIDE_GRACE_NS, OUTSIDE_PATIENCE_NS,
};
use crate::exec::threads::slot::Slot;
use std::time::Instant;

use crate::sync::mutation;
use crate::sync::process::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
// The running flag and its fences are loom's in a model
// (`loom_idle::a_task_a_waiter_takes_for_its_batch_keeps_the_scheduler_busy`).
use crate::sync::{fence, AtomicBool as RunningFlag};
use crate::sync::{lock, Mutex};

pub(super) struct Deques {
    /// One stealer per thread slot; `None` until a thread drains there.
    stealers: Box<[Mutex<Option<Stealer<Task>>>]>,
    /// The next-task slot of the thread in each slot.
    slots: Box<[Slot]>,
    /// One past the highest slot ever registered: thieves look no further.
    high: AtomicUsize,
    /// The entries of threads outside the pool: their stealers, how many
    /// times each deque went from empty to not, since when thieves see
    /// each one's tasks, and whether a thread holds each.
    outside_stealers: Box<[Mutex<Option<Stealer<Task>>>]>,
    /// Their next-task slots: what a task that the thread runs while it
    /// waits makes ready (`outside.rs`, `push_from_waiter`).
    outside_slots: Box<[Slot]>,
    outside_fills: Box<[Fills]>,
    outside_seen: Box<[Seen]>,
    outside_held: Box<[AtomicBool]>,
    /// One past the highest outside entry ever held.
    outside_high: AtomicUsize,
    /// The origin of the `Seen` times.
    epoch: Instant,
}

/// How many threads outside the pool may hold an entry at once; the others
/// queue their tasks in the shared queue.
pub(super) const OUTSIDE_ENTRIES: usize = 64;

/// How many times an outside thread's deque went from empty to holding
/// tasks: counted by its owner when it pushes onto an empty deque (a load
/// and a store, no read-modify-write, and no clock: reading the clock there
/// cost 178 instructions a task of a dependency chain on a waiting thread,
/// where every push is onto an empty deque). A cache line of its own.
#[repr(align(64))]
pub(super) struct Fills {
    count: AtomicU64,
    /// The owner runs a batch of tasks (`waiter.rs`): it holds the tasks
    /// it took out of its entry, which keep the scheduler from being idle
    /// (`Scheduler::is_idle`), and thieves wait `OUTSIDE_PATIENCE_NS` for
    /// the ones left; otherwise `OUTSIDE_GRACE_NS`.
    running: RunningFlag,
}

impl Fills {
    pub(super) fn new() -> Fills {
        Fills { count: AtomicU64::new(0), running: RunningFlag::new(false) }
    }

    /// The owner starts a batch (row 10 of README.md's table).
    pub(super) fn begin_running(&self) {
        // Relaxed, then a Release fence: a look that reads a later take
        // of the batch (the slot's `Relaxed` compare-and-swap, a LIFO
        // deque's `Relaxed` store of its back; a FIFO deque's `SeqCst`
        // increment of its front needs no fence) and then
        // `count_running`'s Acquire fence sees the flag up.
        self.running.store(true, Ordering::Relaxed);
        if !mutation::RUNNING_NO_FENCE {
            fence(Ordering::Release);
        }
    }

    /// The batch ends.
    pub(super) fn end_running(&self) {
        // Release: what the batch queued is visible to a look that sees
        // the flag down (`count_running`'s Acquire).
        self.running.store(false, Ordering::Release);
    }

    /// How many of `fills` run a batch; read after the look at their
    /// entries' tasks.
    pub(super) fn count_running(fills: &[Fills]) -> usize {
        // Acquire fence: pairs with `begin_running`'s Release fence through
        // the take that the caller's look at the entries read.
        fence(Ordering::Acquire);
        // Acquire: pairs with `end_running`'s Release.
        fills.iter().filter(|fills| fills.running.load(Ordering::Acquire)).count()
    }
}

/// Since when thieves see an outside thread's tasks: the fill they first
/// saw, and when, in nanoseconds from the registry's epoch (thieves read
/// the clock anyway). Written by thieves, once a fill; a line of its own,
/// so that the owner's count stays in its cache.
#[repr(align(64))]
pub(super) struct Seen {
    fill: AtomicU64,
    at: AtomicU64,
}

impl Deques {
    /// A registry for up to `max_threads` threads.
    pub(crate) fn new(max_threads: usize) -> Deques {
        Deques {
            stealers: (0..max_threads).map(|_| Mutex::new(None)).collect(),
            slots: (0..max_threads).map(|_| Slot::new()).collect(),
            high: AtomicUsize::new(0),
            outside_stealers: (0..OUTSIDE_ENTRIES).map(|_| Mutex::new(None)).collect(),
            outside_slots: (0..OUTSIDE_ENTRIES).map(|_| Slot::new()).collect(),
            outside_fills: (0..OUTSIDE_ENTRIES).map(|_| Fills::new()).collect(),
            outside_seen: (0..OUTSIDE_ENTRIES).map(|_| Seen { fill: AtomicU64::new(0), at: AtomicU64::new(0) }).collect(),
            outside_held: (0..OUTSIDE_ENTRIES).map(|_| AtomicBool::new(false)).collect(),
            outside_high: AtomicUsize::new(0),
            epoch: Instant::now(),
        }
    }

    /// The next-task slot of the thread in `slot`.
    pub(super) fn slot(&self, slot: usize) -> &Slot {
        &self.slots[slot]
    }

    /// The owner of `entry` starts a batch of its own tasks: until it ends,
    /// the tasks it takes count as in flight (README.md, "Idle").
    pub(super) fn begin_outside_running(&self, entry: usize) {
        self.outside_fills[entry].begin_running();
    }

    /// The batch ends (its tasks done, switched out, or queued again).
    pub(super) fn end_outside_running(&self, entry: usize) {
        self.outside_fills[entry].end_running();
    }

    /// How many owners run a batch; read after [`Deques::any_outside_task`].
    pub(super) fn outside_running(&self) -> usize {
        Fills::count_running(&self.outside_fills[..self.outside_high.load(Ordering::Relaxed)])
    }

    /// The next-task slot of the outside thread holding `entry`.
    pub(super) fn outside_slot(&self, entry: usize) -> &Slot {
        &self.outside_slots[entry]
    }

    /// The outside thread holding `entry` pushes `task` onto its deque
    /// `worker`; true when the deque was empty.
    #[inline(always)]
    pub(super) fn push_outside(&self, entry: usize, worker: &Worker<Task>, task: Task) -> bool {
        let fill = worker.is_empty();
        if fill {
            // Relaxed: a hint for thieves' patience; the deque publishes
            // its tasks itself. (A push onto a deque that still holds tasks
            // keeps the older fill's age: its task is taken sooner, which
            // is safe.) Only the owner writes the count.
            let fills = &self.outside_fills[entry].count;
            fills.store(fills.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }
        worker.push(task);
        fill
    }

    /// Since when thieves see the tasks of `entry`'s current fill: now, if
    /// this thief is the first to look at that fill.
    fn outside_seen_since(&self, entry: usize, now: u64) -> u64 {
        // Relaxed: a hint (see `push_outside`).
        let fill = self.outside_fills[entry].count.load(Ordering::Relaxed);
        let seen = &self.outside_seen[entry];
        // Acquire: pairs with the Release below, so that the time read
        // next is the one stored with this fill (another thief's). Thieves
        // racing on a fresh fill each store their own time: any is right.
        if seen.fill.load(Ordering::Acquire) == fill {
            return seen.at.load(Ordering::Relaxed);
        }
        seen.at.store(now, Ordering::Relaxed);
        seen.fill.store(fill, Ordering::Release);
        now
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Spins until the first task that the drainer's last look left
    /// waiting in an outside thread's entry may be taken (or `stop`), then
    /// lets the next round look again: the entries are not looked at
    /// meanwhile. From the second wait on without a task run, it waits
    /// longer each time, up to `OUTSIDE_LOOK_CAP_NS` (`patience.rs`). Their owner
    /// usually takes them within a microsecond (it queues tasks and then
    /// awaits them), and each look pulls the lines
    /// that it writes at every push and take: a drainer that looked every
    /// few rounds made a blocking-awaits program, whose main thread runs
    /// its own tasks, 1.7x slower (11 interleaved runs, 2 cores).
    pub(super) fn wait_for_outside(&self, patience: &mut SlotPatience, stop: impl Fn() -> bool) {
        let due = patience.outside_wait_until(self.now_ns());
        while !stop() && self.now_ns() < due {
            for _ in 0..16 {
                std::hint::spin_loop();
            }
        }
        patience.look_next();
    }

    /// Takes a free outside entry for the calling thread, with a fresh
    /// deque (its owner takes the oldest task first if `fifo`, else the
    /// newest); `None` when all are held.
    pub(super) fn hold_outside(&self, fifo: bool) -> Option<(usize, Worker<Task>)> {
        let entry = (0..OUTSIDE_ENTRIES).find(|&e| {
            // Acquire: the entry's last holder left its slot empty and its
            // deque's stealer unregistered before its Release below.
            self.outside_held[e].compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
        })?;
        let worker = if fifo { Worker::new_fifo() } else { Worker::new_lifo() };
        *lock(&self.outside_stealers[entry]) = Some(worker.stealer());
        // Relaxed: a bound for thieves, as `high`.
        self.outside_high.fetch_max(entry + 1, Ordering::Relaxed);
        Some((entry, worker))
    }

    /// The thread holding `entry` lets it go (its slot and deque are empty).
    pub(super) fn let_go_outside(&self, entry: usize) {
        *lock(&self.outside_stealers[entry]) = None;
        // Release: see `hold_outside`.
        self.outside_held[entry].store(false, Ordering::Release);
    }

    /// Creates the deque of the thread in `slot` and registers it.
    pub(crate) fn register(&self, slot: usize) -> Worker<Task> {
        let worker = Worker::new_lifo();
        *lock(&self.stealers[slot]) = Some(worker.stealer());
        // Relaxed: a bound for thieves; a thief that misses a fresh slot
        // finds nothing there to steal yet.
        self.high.fetch_max(slot + 1, Ordering::Relaxed);
        worker
    }

    /// Steals a batch of tasks from another thread's deque into `local`
    /// and returns one of them; `me` is the thief's own slot.
    pub(super) fn steal(&self, local: &Worker<Task>, me: usize) -> Option<Task> {
        let n = self.high.load(Ordering::Relaxed).max(me + 1);
        for offset in 1..n {
            let slot = (me + offset) % n;
            let stealer = lock(&self.stealers[slot]);
            let Some(stealer) = stealer.as_ref() else {
                continue;
            };
            loop {
                match stealer.steal_batch_and_pop(local) {
                    Steal::Success(task) => return Some(task),
                    Steal::Empty => break,
                    Steal::Retry => {}
                }
            }
        }
        None
    }

    /// Steals the oldest task of a runtime thread's deque, for a thread
    /// outside the pool that waits (`waiter.rs`): one, not a batch (the
    /// waiter's own deque is for the tasks it queued).
    pub(super) fn steal_one(&self) -> Option<Task> {
        let n = self.high.load(Ordering::Relaxed);
        for slot in 0..n {
            let stealer = lock(&self.stealers[slot]);
            let Some(stealer) = stealer.as_ref() else {
                continue;
            };
            loop {
                match stealer.steal() {
                    Steal::Success(task) => return Some(task),
                    Steal::Empty => break,
                    Steal::Retry => {}
                }
            }
        }
        None
    }

    /// True when a runtime thread's deque holds a task (a hint).
    pub(super) fn any_deque_task(&self) -> bool {
        let n = self.high.load(Ordering::Relaxed);
        (0..n).any(|slot| lock(&self.stealers[slot]).as_ref().is_some_and(|s| !s.is_empty()))
    }

    /// True when a runtime thread's next-task slot holds a task (a hint).
    pub(super) fn any_slot_task(&self) -> bool {
        let n = self.high.load(Ordering::Relaxed);
        self.slots[..n].iter().any(Slot::is_full)
    }

    /// Looks at the runtime threads' next-task slots for a thread outside
    /// the pool that waits (`waiter.rs`), with an idle drainer's patience:
    /// takes the first task that `patience` lets it take. (A parallel
    /// loop's block that a worker split off before it ran its own big
    /// block waits there until that block ends, while the caller, its own
    /// blocks done, would only wait: a triangular loop's last block.)
    pub(super) fn steal_from_slots_for_waiter(&self, patience: &mut SlotPatience) -> Option<Task> {
        let n = self.high.load(Ordering::Relaxed);
        let mut seen = SlotsSeen::default();
        for slot in 0..n {
            if let Some(task) = look_at_slot(&self.slots[slot], slot, patience, &mut seen) {
                return Some(task);
            }
        }
        patience.looked_at_slots(&seen);
        None
    }

    /// Looks at the other threads' next-task slots (`me` is the caller's
    /// own): takes the first task that `patience` lets it take, and says
    /// whether a task it did not take is waiting in one
    /// (`Scheduler::next_task`).
    pub(super) fn steal_from_slots(&self, me: usize, patience: &mut SlotPatience) -> Result<Task, bool> {
        let n = self.high.load(Ordering::Relaxed).max(me + 1);
        let mut seen = SlotsSeen::default();
        for offset in 1..n {
            let slot = (me + offset) % n;
            if let Some(task) = look_at_slot(&self.slots[slot], slot, patience, &mut seen) {
                return Ok(task);
            }
        }
        // The outside threads' entries: their oldest task, once their
        // deque has held tasks for long enough (or on the last look).
        let outside = self.outside_high.load(Ordering::Relaxed);
        let mut now = None;
        let mut waiting_outside = false;
        let mut outside_due = u64::MAX;
        patience.looking_now();
        for entry in 0..outside {
            // Its slot, as a runtime thread's (the next link of a chain
            // that the thread runs while it waits): the same patience.
            let id = self.slots.len() + entry;
            if let Some(task) = look_at_slot(&self.outside_slots[entry], id, patience, &mut seen) {
                return Ok(task);
            }
            let stealer = lock(&self.outside_stealers[entry]);
            let Some(stealer) = stealer.as_ref() else {
                continue;
            };
            if stealer.is_empty() {
                continue;
            }
            let now = *now.get_or_insert_with(|| self.now_ns());
            let since = self.outside_seen_since(entry, now);
            // Young tasks wait, but on the last look of a drainer that
            // leaves for good; one that leaves because enough drainers look
            // for work leaves them to those, which do not leave while they
            // wait (an extra drainer that took them would run them on a
            // third thread of two cores, and come back for more).
            // Relaxed: a hint (see `Fills::begin_running`).
            let patience_ns = if self.outside_fills[entry].running.load(Ordering::Relaxed) {
                OUTSIDE_PATIENCE_NS
            } else {
                OUTSIDE_GRACE_NS
            };
            let young = now.saturating_sub(since) < patience_ns;
            if young && patience.leaves_young_outside_tasks() {
                seen.waiting = true;
                waiting_outside = true;
                outside_due = outside_due.min(since.saturating_add(patience_ns));
                continue;
            }
            // One task, the oldest: a batch (half the deque, as from a
            // runtime thread's) took most of a parallel loop's blocks from
            // the caller that runs them too, and left the other worker
            // idle (elementwise 0.0182 s against 0.0131 s, 7 interleaved
            // runs).
            loop {
                match stealer.steal() {
                    Steal::Success(task) => return Ok(task),
                    Steal::Empty => break,
                    Steal::Retry => {}
                }
            }
        }
        patience.looked_at_slots(&seen);
        patience.looked_outside(waiting_outside, outside_due);
        Err(seen.waiting)
    }

    /// True when a task that another thread could take waits in a thread's
    /// deque or next-task slot. The caller orders this after its own update
    /// with a `SeqCst` fence (README.md, "No lost wake-up").
    pub(super) fn any_local_task(&self) -> bool {
        let n = self.high.load(Ordering::Relaxed);
        (0..n).any(|slot| {
            self.slots[slot].is_full() || lock(&self.stealers[slot]).as_ref().is_some_and(|s| !s.is_empty())
        }) || self.any_outside_task()
    }

    /// True when a task waits in an outside thread's entry (its slot or
    /// its deque). Unlike a
    /// runtime thread's slot and deque, whose owner is a drainer, an entry
    /// may hold tasks while no drainer is alive: the last drainer to leave,
    /// and the idle check, look (`Scheduler::act_after_leave`,
    /// `Scheduler::is_idle`).
    pub(super) fn any_outside_task(&self) -> bool {
        (0..self.outside_entries()).any(|entry| self.outside_holds_task(entry))
    }

    /// One past the highest outside entry ever held.
    pub(super) fn outside_entries(&self) -> usize {
        self.outside_high.load(Ordering::Relaxed)
    }

    /// How many times `entry`'s deque went from empty to not, and whether
    /// the entry holds a task now (the watch's look, `watch.rs`).
    pub(super) fn outside_fill(&self, entry: usize) -> (u64, bool) {
        // Relaxed: a hint (see `push_outside`).
        (self.outside_fills[entry].count.load(Ordering::Relaxed), self.outside_holds_task(entry))
    }

    /// True when `entry` holds a task in its slot or its deque (a hint).
    fn outside_holds_task(&self, entry: usize) -> bool {
        self.outside_slots[entry].is_full()
            || lock(&self.outside_stealers[entry]).as_ref().is_some_and(|s| !s.is_empty())
    }
}
