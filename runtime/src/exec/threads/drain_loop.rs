//! The drain loop: a drainer takes tasks and runs them until there are
//! none, on task stacks (`fibers.rs`) or, with task stacks off or none to
//! be had, on its thread's own stack (README.md beside this file). The
//! loop is the run loop that waiters run too ([`fibers::run_batch`]); what
//! is the drainer's own is how it picks its next task
//! ([`Scheduler::next_for_drainer`]): its idle backoff, its looks at other
//! threads' slots, and when it leaves.

use std::cell::{Cell, UnsafeCell};

use crossbeam_deque::Steal;

use crate::base::task::{Route, Task};
use crate::exec::threads::fibers::{self, Picker, RunFiber};
use crate::exec::threads::overflow;
use crate::exec::threads::patience::SlotPatience;
use crate::exec::threads::{drainer_state, with_state, Scheduler, SchedulerRef, IDLE_SPINS, IDLE_YIELDS, SLOT_WAIT_NAP};
use crate::probe::fuzz;
use crate::sync::backoff::Backoff;
use crate::sync::tls;

/// A drainer: what its run loop picks its tasks with
/// ([`Scheduler::next_for_drainer`]).
struct Drainer {
    scheduler: SchedulerRef,
    state: UnsafeCell<DrainState>,
    /// The run loop is on this thread's stack (task stacks off, or none to
    /// be had), where a task that blocks blocks the thread and gives its
    /// permit away.
    on_thread_stack: Cell<bool>,
}

impl Picker for Drainer {
    #[inline(always)]
    fn next(&self, route: &mut Route) -> Option<Task> {
        // SAFETY: the drainer runs while its scheduler lives
        // (`Scheduler::run_drainer`).
        let scheduler = unsafe { self.scheduler.get() };
        // SAFETY: only this method touches the state, and the run loop
        // calls it one call at a time (nothing it calls runs a task of
        // this drainer's).
        let st = unsafe { &mut *self.state.get() };
        scheduler.next_for_drainer(st, self.on_thread_stack.get(), route)
    }
}

/// A drainer's state between two of its picks.
struct DrainState {
    idle: Backoff,
    /// Counted among the drainers looking for work (`lookout.rs`).
    spinning: bool,
    patience: SlotPatience,
    /// Went through the idle path since the last task: the backoff and
    /// the patience start over at the next task.
    idled: bool,
}

impl Scheduler {
    /// Takes tasks (see [`Scheduler::next_task`]) and runs them until there
    /// are none, holding a permit (taken by whoever started this drainer):
    /// on a pool thread (`slot` `None`), or on a spare thread, whose
    /// registry slot `slot` is.
    pub(super) fn run_drainer(&self, slot: Option<usize>) {
        self.ensure_deque(slot);
        with_state(|s| {
            tls::with(|slots| slots.draining.set((self as *const Scheduler).cast()));
            s.holds_permit.set(true);
        });
        let drainer = Drainer {
            scheduler: self.as_ref(),
            state: UnsafeCell::new(DrainState {
                idle: Backoff::new(IDLE_SPINS, IDLE_YIELDS),
                spinning: false,
                patience: SlotPatience::default(),
                idled: false,
            }),
            on_thread_stack: Cell::new(!self.config.task_stacks),
        };
        if self.config.task_stacks {
            self.drain_on_fibers(&drainer);
        } else {
            fibers::run_batch(None, &drainer);
        }
        let holds_permit = with_state(|s| {
            tls::with(|slots| slots.draining.set(std::ptr::null()));
            s.holds_permit.replace(false)
        });
        // It stops looking for work (if it looked) in its leave's update.
        let looking = drainer.state.into_inner().spinning;
        let after = self.drainers.leave(holds_permit, looking);
        fuzz::at_transition();
        self.after_leave(after);
    }

    /// The drain loop on task stacks: when the task running on one
    /// switches out, the loop goes on on a fresh one. With no stack to be
    /// had, on this thread's own (a task that blocks then blocks it).
    fn drain_on_fibers(&self, drainer: &Drainer) {
        overflow::prepare_thread();
        let mut fiber = RunFiber::new();
        loop {
            if !fiber.ready(self) {
                drainer.on_thread_stack.set(true);
                fibers::run_batch(None, drainer);
                return;
            }
            if fiber.run(drainer) {
                return;
            }
            // Its task switched out (parked, or resumed here at once
            // because its object completed while it switched out, and then
            // finished): go on with a fresh fiber.
        }
    }

    /// After a task that blocked this thread and gave its permit away (task
    /// stacks off, or none to be had; on a fiber a task that blocks
    /// switches out instead, `wait.rs`): false when no permit is free to go
    /// on with, and this thread's tasks were handed over. Out of line: the
    /// thread-local access of its `with_state` would be computed ahead of
    /// its branch in the caller, a call to `__tls_get_addr` a task.
    #[cold]
    #[inline(never)]
    fn reacquire_or_leave(&self) -> bool {
        if !self.drainers.try_reacquire() {
            self.release_local_tasks();
            return false;
        }
        with_state(|s| s.holds_permit.set(true));
        true
    }

    /// The next task for this drainer (see [`Scheduler::next_task`]), after
    /// its idle backoff if none is there at once; `None` when it leaves:
    /// nothing found at its last look, or (on this thread's stack, its task
    /// blocked the thread and gave the permit away) no permit to go on
    /// with.
    ///
    /// Inline, this thread's own tasks and the queue's; the rest out of
    /// line, with the steals, whose thread-local (the epoch's) would have
    /// its address computed at the entry of the run loop they were inlined
    /// in: a call to `__tls_get_addr` a task.
    #[inline(always)]
    fn next_for_drainer(&self, st: &mut DrainState, on_thread_stack: bool, route: &mut Route) -> Option<Task> {
        if !on_thread_stack && !st.idled {
            if let Some(task) = self.next_own_or_queued(route) {
                return Some(task);
            }
        }
        self.look_for_work(st, on_thread_stack, route)
    }

    /// The next task of this thread's own or of the queue: its slot's, its
    /// deque's newest, else the queue's oldest (one task, never a batch:
    /// see below); `route` says which.
    #[inline(always)]
    fn next_own_or_queued(&self, route: &mut Route) -> Option<Task> {
        // SAFETY: called by the drain loop, which registered its state.
        let s = unsafe { drainer_state() };
        // SAFETY: this drainer registered its slot first.
        if let Some(task) = unsafe { &*s.slot.get() }.take_own() {
            *route = Route::Slot;
            return Some(task);
        }
        *route = Route::Queued;
        if let Some(task) = s.deque.borrow().as_ref().expect("a drainer registers its deque first").worker.pop() {
            return Some(task);
        }
        // One task at a time, the oldest: tasks queued from outside
        // start in the order they were queued (the ABI's invariant 4).
        // A batch moved into this LIFO deque would run newest first,
        // and a task that blocks on an older one still in the deque
        // could then wait forever at the thread cap.
        loop {
            match self.queue.steal() {
                Steal::Success(task) => return Some(task),
                Steal::Empty => return None,
                Steal::Retry => {}
            }
        }
    }

    /// The next task for this thread's drainer: its own or the queue's
    /// ([`Scheduler::next_own_or_queued`]), else one stolen from another
    /// thread's deque (with a batch of that deque's into this one), else
    /// one that waited long enough in another thread's slot.
    fn next_task(&self, patience: &mut SlotPatience, route: &mut Route) -> Option<Task> {
        if let Some(task) = self.next_own_or_queued(route) {
            return Some(task);
        }
        // SAFETY: called by the drain loop, which registered its state.
        let s = unsafe { drainer_state() };
        let deque = s.deque.borrow();
        let deque = deque.as_ref().expect("a drainer registers its deque first");
        if let Some(task) = self.deques.steal(&deque.worker, deque.slot) {
            return Some(task);
        }
        // Last, a task waiting in another thread's slot, once it has
        // waited there long enough (see `SlotPatience`). Looked at
        // every few idle rounds only: each look pulls the cache line
        // that the slot's owner writes twice a task.
        if !patience.looks_at_slots() {
            return None;
        }
        self.deques.steal_from_slots(deque.slot, patience).ok()
    }

    /// [`Scheduler::next_for_drainer`] when this thread's own tasks and the
    /// queue gave none at once (or on this thread's stack, where a task
    /// may have given the permit away): the other threads' tasks, the idle
    /// backoff, and the last look.
    #[inline(never)]
    fn look_for_work(&self, st: &mut DrainState, on_thread_stack: bool, route: &mut Route) -> Option<Task> {
        // SAFETY: as in `next_for_drainer`.
        if on_thread_stack && !unsafe { drainer_state() }.holds_permit.get() && !self.reacquire_or_leave() {
            return None;
        }
        loop {
            if let Some(task) = self.next_task(&mut st.patience, route) {
                if st.idled {
                    st.idled = false;
                    st.idle.reset();
                    st.patience.reset();
                    if st.spinning {
                        st.spinning = false;
                        // A producer that saw this drainer looking started
                        // no drainer for the task it put in its slot: look
                        // at the slots again (`lookout.rs`).
                        self.drainers.stop_looking();
                        self.after_looking();
                    }
                }
                return Some(task);
            }
            st.idled = true;
            // Nothing found on the last look: leave. (Every way out below
            // goes through one last look, which takes a task waiting in
            // another thread's slot however short it waited: a drainer
            // leaves only when no slot holds one.)
            if st.patience.is_last_look() {
                // (Still counted among the lookers, if it looked: it stops
                // in its leave, `run_drainer`.)
                return None;
            }
            // Somebody waits for this scheduler to go idle (a harness
            // between two runs, the destroy hook): a drainer without a task
            // leaves now instead of spinning that wait out.
            if self.idle.has_waiters() {
                st.patience.set_last_look(true);
                continue;
            }
            // Enough drainers look for work already: leave (see
            // `Drainers::new`). Counted from the first spin round,
            // not the first yield: a cap on the yielding ones only was
            // slower than no cap (4 workers on 2 cores, fine-grained loops:
            // 0.82 s against 0.57 s; this cap 0.34 s).
            if !st.spinning {
                if !self.drainers.start_looking() {
                    st.patience.set_last_look(true);
                    // The drainers that look for work take care of the
                    // outside threads' young tasks (`deques.rs`).
                    st.patience.set_over_cap();
                    continue;
                }
                st.spinning = true;
            }
            // (Every few rounds: the count of waiters' tasks is on a line
            // that a waiter writes twice at each of its batches.)
            if st.patience.looks_at_slots() && self.cores_taken() {
                // Every core runs a task, a waiter's among them (a
                // parallel loop's caller and the workers): a drainer that
                // spun or yielded here would be one thread more than the
                // cores, and slow them all. It sleeps between its looks
                // while that lasts, still counted as looking: a task put
                // in a slot meanwhile starts no drainer, and is taken at
                // its next look, or by its owner.
                std::thread::sleep(SLOT_WAIT_NAP);
                st.patience.look_next();
                st.patience.next_round();
                continue;
            }
            if st.patience.saw_waiting_outside() {
                // A task waits in an outside thread's entry, taken within
                // microseconds (`OUTSIDE_GRACE_NS`, `OUTSIDE_PATIENCE_NS`):
                // spin until it may be taken, rather than yield the core
                // (a yield behind a thread that computes gave it the core
                // for as long: a triangular loop's big half started 40-65
                // µs after its loop, against 1-3 µs from the shared queue);
                // a nap would come too late (a 50 µs sleep is what the
                // kernel's timer slack makes of any shorter one). At most
                // the lookers' cap of drainers look for work at once. The
                // spin does not look at the entry (`wait_for_outside`),
                // only at the shared queue and at whether somebody waits
                // for idleness.
                self.deques.wait_for_outside(&mut st.patience, || !self.queue.is_empty() || self.idle.has_waiters());
                st.patience.next_round();
                continue;
            }
            if st.idle.snooze() {
                st.patience.next_round();
                continue;
            }
            if st.patience.saw_waiting() {
                // A task waits in another thread's slot: keep looking until
                // its owner takes it or it has waited long enough to be
                // taken here. Leaving would need a new drainer for it at
                // once, and taking it now would move a dependency chain to
                // this core at every backoff. Between two looks, sleep: a
                // drainer that spun or yielded here slowed the chain on the
                // other core (2 vCPUs of one machine share more than a
                // cache line).
                std::thread::sleep(SLOT_WAIT_NAP);
                st.patience.napping();
                st.patience.next_round();
                continue;
            }
            st.patience.set_last_look(true);
        }
    }
}
