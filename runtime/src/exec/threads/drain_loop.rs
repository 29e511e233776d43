//! The drain loop: a drainer takes tasks and runs them until there are
//! none, on task stacks (`fibers.rs`) or, with task stacks off or none to
//! be had, on its thread's own stack (README.md beside this file).

use crate::exec::threads::patience::SlotPatience;
use crate::exec::threads::drainers::DrainerKind;
use crate::exec::threads::fibers::{self, FiberContext, LoopEnd};
use crate::exec::threads::overflow;
use crate::exec::threads::spares::SpareThread;
use crate::exec::threads::{with_state, Scheduler, IDLE_SPINS, IDLE_YIELDS, SLOT_WAIT_NAP};
use crate::probe::fuzz;
use crate::probe::observe;
use crate::sync::backoff::Backoff;
use crate::sync::tls;

impl Scheduler {

    /// Takes tasks (see [`Scheduler::next_task`]) and runs them until there
    /// are none, holding a permit (taken by whoever started this drainer):
    /// a pool job, or the job of the spare thread `spare`.
    pub(super) fn run_drainer(&self, spare: Option<&SpareThread>) {
        self.ensure_deque(spare);
        with_state(|s| {
            tls::with(|slots| slots.draining.set((self as *const Scheduler).cast()));
            s.holds_permit.set(true);
        });
        if self.config.task_stacks {
            self.drain_on_fibers();
        } else {
            self.drain_loop(None);
        }
        let holds_permit = with_state(|s| {
            tls::with(|slots| slots.draining.set(std::ptr::null()));
            s.holds_permit.replace(false)
        });
        let after = match spare {
            None => self.drainers.leave(DrainerKind::PoolJob, holds_permit),
            // The spare can take a job again before it stops counting as
            // a drainer: a start refused at the cap meanwhile strands
            // nothing (`spares.rs`).
            Some(spare) => spare.before_leaving(|| self.drainers.leave(DrainerKind::Spare, holds_permit)),
        };
        fuzz::at_transition();
        self.after_leave(after);
    }

    /// The drain loop on task stacks: when the task running on one
    /// switches out, the loop goes on on a fresh one. With no stack to be
    /// had, on this thread's own (a task that blocks then blocks it).
    fn drain_on_fibers(&self) {
        overflow::prepare_thread();
        loop {
            let Some(fiber) = fibers::new_fiber(self) else {
                self.drain_loop(None);
                return;
            };
            match fibers::drive(fiber) {
                Some(LoopEnd::Left) => return,
                // Its task switched out (parked, or resumed here at once
                // because its object completed while it switched out, and
                // then finished): go on with a fresh fiber.
                Some(LoopEnd::SwitchedOut) | None => {}
            }
        }
    }

    /// Takes tasks (see [`Scheduler::next_task`]) and runs them until there
    /// are none or this thread has no permit left to go on. On a fiber
    /// (`fiber`), also ends when the task it ran switched out and returned
    /// (on this thread or on another).
    pub(super) fn drain_loop(&self, fiber: Option<&FiberContext>) -> LoopEnd {
        let mut idle = Backoff::new(IDLE_SPINS, IDLE_YIELDS);
        let mut spinning = false;
        let mut patience = SlotPatience::default();
        // Went through the idle path since the last task: the backoff and
        // the patience start over at the next task.
        let mut idled = false;
        let end = loop {
            if let Some((task, route)) = self.next_task(&mut patience) {
                if idled {
                    idled = false;
                    idle.reset();
                    patience.reset();
                    if spinning {
                        spinning = false;
                        // A producer that saw this drainer looking started
                        // no drainer for the task it put in its slot: look
                        // at the slots again (`lookout.rs`).
                        self.lookout.stop_looking();
                        self.after_looking();
                    }
                }
                fuzz::before_task();
                observe::run_task(task, route);
                if let Some(fiber) = fiber {
                    if fiber.switched_out() {
                        // This frame may be on another thread now: it
                        // touches nothing of the thread's, and the fiber
                        // ends.
                        return LoopEnd::SwitchedOut;
                    }
                    // On a fiber a task that blocks switches out; it never
                    // gives this thread's permit away (`wait.rs`).
                    continue;
                }
                if with_state(|s| s.holds_permit.get()) {
                    continue;
                }
                // The task blocked and gave its permit away: go on only
                // with a permit, else hand this thread's tasks over.
                if self.drainers.try_reacquire() {
                    with_state(|s| s.holds_permit.set(true));
                    continue;
                }
                self.release_local_tasks();
                break LoopEnd::Left;
            }
            idled = true;
            // Nothing found on the last look: leave. (Every way out below
            // goes through one last look, which takes a task waiting in
            // another thread's slot however short it waited: a drainer
            // leaves only when no slot holds one.)
            if patience.is_last_look() {
                break LoopEnd::Left;
            }
            // Somebody waits for this scheduler to go idle (a harness
            // between two runs, the destroy hook): a drainer without a task
            // leaves now instead of spinning that wait out.
            if self.idle.has_waiters() {
                patience.set_last_look(true);
                continue;
            }
            // Enough drainers look for work already: leave (see
            // `Scheduler::lookout`). Counted from the first spin round,
            // not the first yield: a cap on the yielding ones only was
            // slower than no cap (4 workers on 2 cores, fine-grained loops:
            // 0.82 s against 0.57 s; this cap 0.34 s).
            if !spinning {
                if !self.lookout.start_looking() {
                    patience.set_last_look(true);
                    // The drainers that look for work take care of the
                    // outside threads' young tasks (`deques.rs`).
                    patience.set_over_cap();
                    continue;
                }
                spinning = true;
            }
            // (Every few rounds: the count of waiters' tasks is on a line
            // that a waiter writes twice at each of its batches.)
            if patience.looks_at_slots() && self.cores_taken() {
                // Every core runs a task, a waiter's among them (a
                // parallel loop's caller and the workers): a drainer that
                // spun or yielded here would be one thread more than the
                // cores, and slow them all. It sleeps between its looks
                // while that lasts, still counted as looking: a task put
                // in a slot meanwhile starts no drainer, and is taken at
                // its next look, or by its owner.
                std::thread::sleep(SLOT_WAIT_NAP);
                patience.look_next();
                patience.next_round();
                continue;
            }
            if patience.saw_waiting_outside() {
                // A task waits in an outside thread's entry, taken within
                // microseconds (`OUTSIDE_GRACE_NS`, `OUTSIDE_PATIENCE_NS`):
                // spin until it may be taken, rather than yield the core
                // (a yield behind a thread that computes gave it the core
                // for as long: a triangular loop's big half started 40-65
                // µs after its loop, against 1-3 µs from the shared queue);
                // a nap would come too late (a 50 µs sleep is what the
                // kernel's timer slack makes of any shorter one). At most
                // the lookout's cap of drainers look for work at once. The
                // spin does not look at the entry (`wait_for_outside`),
                // only at the shared queue and at whether somebody waits
                // for idleness.
                self.deques.wait_for_outside(&mut patience, || !self.queue.is_empty() || self.idle.has_waiters());
                patience.next_round();
                continue;
            }
            if idle.snooze() {
                patience.next_round();
                continue;
            }
            if patience.saw_waiting() {
                // A task waits in another thread's slot: keep looking until
                // its owner takes it or it has waited long enough to be
                // taken here. Leaving would need a new drainer for it at
                // once, and taking it now would move a dependency chain to
                // this core at every backoff. Between two looks, sleep: a
                // drainer that spun or yielded here slowed the chain on the
                // other core (2 vCPUs of one machine share more than a
                // cache line).
                std::thread::sleep(SLOT_WAIT_NAP);
                patience.napping();
                patience.next_round();
                continue;
            }
            patience.set_last_look(true);
        };
        if spinning {
            self.lookout.stop_looking();
        }
        end
    }
}
