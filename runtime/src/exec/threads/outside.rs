//! A thread outside the pool that queues tasks (the program's main thread,
//! an embedder's thread): its entry in the scheduler's registry, a deque of
//! its own.
//!
//! Its tasks go to its deque, and the thread runs them itself, newest
//! first, when it waits in an `Await*` (`waiter.rs`): in the usual shape
//! (queue tasks, then await them) none crosses to another core and no
//! worker is woken for it. An idle drainer takes them as it takes a task
//! waiting in a runtime thread's slot: once they have waited there for a
//! while (`patience.rs`, `OUTSIDE_PATIENCE_NS`), or on its last look; and a
//! put starts a drainer when none looks for work (`lookout.rs`), unless
//! the watch holds and the put is the first of a fill (`watch.rs`: the
//! watch starts one within two milliseconds for a task its owner leaves),
//! so a thread that queues a task and then does not wait for it (a spin on
//! memory, a condvar, its own work) does not hold it.
//!
//! The entry is held from the thread's first task until the thread exits,
//! or until it queues on another scheduler (a later instance). At most
//! [`OUTSIDE_ENTRIES`] threads hold one; the others use the shared queue.
//! The hot paths reach it through a thread-local slot (`sync/tls.rs`: one
//! load), the `thread_local!` that owns it only when it is made or ends.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use crossbeam_deque::Worker;

use crate::base::task::Task;
use crate::exec::config::WaiterRuns;
use crate::exec::threads::binding;
use crate::exec::threads::deques::OUTSIDE_ENTRIES;
use crate::exec::threads::fibers::WaiterFiber;
use crate::exec::threads::Scheduler;
use crate::object::completion::Completion;
use crate::probe::observe;
use crate::sync::asymmetric;
use crate::sync::tls;

/// How many tasks an outside thread's deque holds at most: crossbeam's
/// smallest buffer, which then never resizes. The tasks a thread queues and
/// then awaits are usually a few (the awaited task, a parallel loop's
/// blocks).
const OUTSIDE_DEQUE_CAP: usize = 64;

/// The entry of this thread in one scheduler's registry.
struct OutsideEntry {
    /// The fiber this thread's waits run tasks on, kept from one wait to
    /// the next (`waiter.rs`). First, so that it ends before the scheduler
    /// may go with the entry. Borrowed for a waiter's batch of tasks.
    fiber: RefCell<WaiterFiber>,
    /// Keeps the registry alive for the thread's exit, after which the
    /// entry is let go.
    scheduler: Arc<Scheduler>,
    entry: usize,
    worker: Worker<Task>,
    /// The owner pops the deque's oldest task first
    /// (`WaiterRuns::Producers`: a waiter looks for its producers from the
    /// oldest task on, and the older ones it passes go to the pool in
    /// their order), else its newest.
    fifo: bool,
    /// A push of the running batch left its check for a drainer to the
    /// batch's end (`push_from_waiter`).
    check_owed: Cell<bool>,
}

thread_local! {
    /// Owns this thread's entry; the `outside` slot of `tls` points to it
    /// while it lives.
    static ENTRY: RefCell<Option<Box<OutsideEntry>>> = const { RefCell::new(None) };
}

/// This thread's entry on `scheduler`, if it holds one there. The entry
/// lives until the thread exits or holds one on another scheduler, which
/// the caller does not do while it uses the reference.
#[inline(always)]
fn entry_on<'a>(scheduler: &Scheduler) -> Option<&'a OutsideEntry> {
    let ptr = tls::with(|slots| slots.outside.get()).cast::<OutsideEntry>();
    // SAFETY: the slot points to the entry that `ENTRY` owns, from its
    // making to the start of its drop (`hold_entry`, `Drop`); nothing
    // takes a `&mut` to it meanwhile (its mutable part is in a `RefCell`).
    let entry = (!ptr.is_null()).then(|| unsafe { &*ptr })?;
    std::ptr::eq(Arc::as_ptr(&entry.scheduler), scheduler).then_some(entry)
}

impl Drop for OutsideEntry {
    /// The thread exits (or moves to another scheduler): tasks it left go
    /// to the shared queue, and the entry is free for another thread.
    fn drop(&mut self) {
        tls::with(|slots| slots.outside.set(std::ptr::null()));
        // The tasks are counted as held by a waiter while they move from
        // the entry to the queue: between the two, the idle check (which
        // looks at both) would otherwise see neither, and the destroy hook
        // could join the threads before they reach the queue. (A destroy
        // that found the scheduler idle before this count went up found
        // the entry empty, and nothing fills it since: this thread queues
        // through the instance's gate, closed by then.)
        let slot = self.scheduler.deques.outside_slot(self.entry);
        if !slot.is_full() && self.worker.is_empty() {
            // Nothing to move (only this thread fills the entry, so it
            // stays empty): no count either. Counting it anyway showed a
            // destroy that had just joined its threads one task "in flight"
            // while this thread, already on the next instance, let go of
            // its empty entry on the old one ("1 task(s) abandoned", 2 runs
            // of 200 of `destroy-while-queuing` with waiters running tasks).
            self.scheduler.deques.let_go_outside(self.entry);
            return;
        }
        let moving = self.scheduler.hold_for_waiter();
        // Newest first: the slot's task, then the deque's.
        let mut left: Vec<Task> = slot.take_own().into_iter().collect();
        let from_deque = left.len();
        while let Some(task) = self.worker.pop() {
            left.push(task);
        }
        if self.fifo {
            left[from_deque..].reverse();
        }
        self.scheduler.deques.let_go_outside(self.entry);
        if !left.is_empty() && !self.scheduler.takes_tasks() {
            // Cannot be (see above); rather than push onto a joined pool,
            // the tasks are dropped unrun, and the destroy hook's report of
            // abandoned tasks is what a bug here would look like.
            std::mem::forget(left);
        } else {
            // Oldest first, as thieves would have taken them.
            for task in left.into_iter().rev() {
                self.scheduler.push(task);
            }
        }
        drop(moving);
    }
}

/// Forgets this thread's entry without touching its scheduler (a forked
/// child, where that scheduler's threads do not exist).
pub(super) fn forget() {
    tls::with(|slots| slots.outside.set(std::ptr::null()));
    let _ = ENTRY.try_with(|entry| {
        if let Ok(mut entry) = entry.try_borrow_mut() {
            std::mem::forget(entry.take());
        }
    });
}

impl Scheduler {
    /// Queues a task made ready on a thread outside the pool: in that
    /// thread's entry when waiters run tasks, else in the shared queue.
    pub(crate) fn push_from_outside(&self, task: Task) {
        if self.config.waiters_run == WaiterRuns::Nothing {
            return self.push(task);
        }
        let Some(entry) = entry_on(self).or_else(|| self.hold_entry()) else {
            return self.push(task);
        };
        if entry.worker.len() >= OUTSIDE_DEQUE_CAP {
            // A long burst (a fan-out of thousands): the rest goes to the
            // shared queue, where idle workers take it at once, and the
            // deque never grows (a grown deque copies its tasks, and shrinks
            // again as they are taken: 220 instructions a task on fan-out).
            return self.push(task);
        }
        // Bound only when it goes to the entry: a waiter asks only about
        // the tasks of its own entry (`take_own_producer`); one in the
        // shared queue runs on the pool (fan-out: 40 instructions a task).
        if self.config.waiters_run == WaiterRuns::Producers {
            binding::pushed(&task);
        }
        let fill = self.deques.push_outside(entry.entry, &entry.worker, task);
        observe::task_queued(|| self.queue.len() + entry.worker.len());
        // A drainer must be looking, or be started (`lookout.rs`), or the
        // watch must hold (`watch.rs`: the first task of a fill, which
        // this thread usually runs itself at its next `Await*`): at every
        // push, even onto a deque that held a task. Skipping the fence
        // there ("the drainer found for the older task looks again") lost
        // tasks: this thread's "not empty" may be stale against a thief
        // that just emptied the deque, and that thief's last look may miss
        // this push, which no fence orders before it
        // (`runtime/tests/lifecycle.rs`,
        // `the_destroy_hook_returns_against_an_endless_producer`, hung in
        // 1 run of 2).
        if self.drainers.should_start() {
            if fill && self.watch.covers(&self.drainers, entry.entry) {
                observe::watch_covered();
            } else {
                self.start_drainer(self.drainers.try_start());
            }
        }
    }

    /// Queues a task made ready by a task that this thread runs while it
    /// waits (`waiter.rs`): in the entry's slot, run next, as a drainer's
    /// task's go to the drainer's slot (`Scheduler::push_local`); the
    /// slot's older task goes to the deque.
    pub(crate) fn push_from_waiter(&self, task: Task) {
        if self.config.waiters_run == WaiterRuns::Producers {
            binding::pushed(&task);
        }
        // A waiter without an entry (all were held) runs shared tasks.
        let Some(entry) = entry_on(self) else {
            return self.push(task);
        };
        if let Some(older) = self.deques.outside_slot(entry.entry).put(task) {
            if entry.worker.len() >= OUTSIDE_DEQUE_CAP {
                self.push(older);
            } else {
                self.deques.push_outside(entry.entry, &entry.worker, older);
            }
        }
        observe::task_queued(|| self.queue.len() + entry.worker.len() + 1);
        // A drainer must be looking, or be started: as after any push onto
        // a slot (`lookout.rs`). While one looks, the check (its `SeqCst`
        // fence, a locked instruction a task) waits for the batch's end
        // (`with_waiter_fiber`): until then this thread takes the task
        // itself, or a looker does (one that stops looking looks at the
        // entries). Fine-grained: 0.956x as long.
        if self.drainers.hint().lookers() == 0 {
            self.after_local_push();
        } else {
            entry.check_owed.set(true);
        }
    }

    /// The first task of this thread here: holds an entry (and lets go of
    /// one on an earlier scheduler); `None` when none can be had or the
    /// thread is exiting (its thread-locals are gone).
    #[cold]
    #[inline(never)]
    fn hold_entry<'a>(&self) -> Option<&'a OutsideEntry> {
        let me = self.me.upgrade()?;
        let old = ENTRY.try_with(|entry| entry.try_borrow_mut().ok().and_then(|mut entry| entry.take())).ok()?;
        // Dropped outside the borrow: its drop queues its tasks and ends
        // its fiber.
        drop(old);
        let fifo = self.config.waiters_run == WaiterRuns::Producers;
        let (index, worker) = self.deques.hold_outside(fifo)?;
        self.watch.forget_entry(index);
        let entry = Box::new(OutsideEntry {
            fiber: RefCell::new(WaiterFiber::new()),
            scheduler: me,
            entry: index,
            worker,
            fifo,
            check_owed: Cell::new(false),
        });
        let ptr: *const OutsideEntry = &*entry;
        let held = ENTRY.try_with(|slot| match slot.try_borrow_mut() {
            Ok(mut slot) if slot.is_none() => {
                *slot = Some(entry);
                true
            }
            _ => false,
        });
        if held != Ok(true) {
            // Cannot happen outside a thread-local destructor; the entry
            // (empty) goes, the task to the shared queue.
            return None;
        }
        tls::with(|slots| slots.outside.set(ptr.cast()));
        // SAFETY: owned by `ENTRY` from here on (see `entry_on`).
        Some(unsafe { &*ptr })
    }

    /// Calls `f`, a waiter's batch of tasks, with this thread's waiter
    /// fiber here: its entry's (held now if the thread holds none here
    /// yet), else, with every entry held, a fiber for this call only. The
    /// tasks the batch takes count as in flight until it ends: through the
    /// entry's running flag, else through `held`
    /// ([`Scheduler::hold_for_waiter`]).
    pub(super) fn with_waiter_fiber<R>(&self, f: impl FnOnce(&mut WaiterFiber) -> R) -> R {
        // The borrow lasts for the batch: the tasks on the fiber reach the
        // entry only through shared references (their pushes), and a task
        // that waits switches out instead of waiting here again.
        let own = entry_on(self).or_else(|| self.hold_entry());
        let Some((entry, mut fiber)) = own.and_then(|entry| Some((entry, entry.fiber.try_borrow_mut().ok()?))) else {
            let _held = self.hold_for_waiter();
            return f(&mut WaiterFiber::new());
        };
        // The flag is the batch's hold: two plain stores on the entry's own
        // line, where a count shared by the waiters cost two locked
        // read-modify-writes a blocking await. Thieves also give the
        // tasks of a thread that runs them more time. (Without it, a
        // fine-grained loop's blocks went to a worker two microseconds
        // after the waiter queued them, while it ran the others: 1.7x
        // slower.)
        self.deques.begin_outside_running(entry.entry);
        let result = f(&mut fiber);
        self.deques.end_outside_running(entry.entry);
        // What the batch's tasks queued here and left: the check that
        // their pushes left to this end (`push_from_waiter`).
        if entry.check_owed.replace(false) && self.entry_holds_task(entry) {
            self.after_local_push();
        }
        // Light fence: the flag down before the look at the threads
        // waiting for idleness, against their count up, heavy fence and
        // look at the flag (`IdleSignal::wait`): one of the two sees the
        // other (row 9 of the README's table).
        asymmetric::light();
        self.idle.notify_if(|| self.is_idle());
        result
    }

    /// True when this thread's entry here holds a task (a hint: thieves
    /// may take it meanwhile).
    pub(super) fn has_own_outside_task(&self) -> bool {
        entry_on(self).is_some_and(|entry| self.entry_holds_task(entry))
    }

    /// True when `entry`, this thread's, holds a task in its slot or its
    /// deque (a hint: thieves may take it meanwhile).
    fn entry_holds_task(&self, entry: &OutsideEntry) -> bool {
        self.deques.outside_slot(entry.entry).is_full() || !entry.worker.is_empty()
    }

    /// The oldest task this thread queued in its entry here that produces
    /// `awaited`, if any (`waiter.rs`). Tasks before it go to the shared
    /// queue. (Thieves keep the patience of the entry's fill: one that
    /// started it anew at each take watched the tasks that the waiter
    /// awaits next, spinning, and took the core from the waiter:
    /// blocking-awaits took 5 to 8 times as long.)
    pub(super) fn take_own_producer(&self, awaited: &Completion) -> Option<Task> {
        let entry = entry_on(self)?;
        let slot = self.deques.outside_slot(entry.entry);
        loop {
            let task = slot.take_own().or_else(|| entry.worker.pop())?;
            if binding::produces(&task, awaited) {
                return Some(task);
            }
            // Not one: the pool runs it, in its order, as the C++
            // runtime's pool would.
            self.push(task);
        }
    }

    /// The newest task this thread queued in its entry here, if any: its
    /// slot's, else its deque's newest (its oldest with
    /// `WaiterRuns::Producers`).
    pub(super) fn take_own_outside(&self) -> Option<Task> {
        let entry = entry_on(self)?;
        self.deques.outside_slot(entry.entry).take_own().or_else(|| entry.worker.pop())
    }
}

const _: () = assert!(OUTSIDE_ENTRIES > 0);
