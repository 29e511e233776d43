//! Blocking waits (`mlirAsyncRuntimeAwait*`): the calling thread sleeps
//! until the object completes.
//!
//! The waiter is a node on the blocked thread's own stack, pushed onto the
//! object's waiter list; the completion sets its flag and unparks the
//! thread. A runtime thread that blocks inside a task first hands its place
//! in the pool over ([`Blocked`]), so other tasks keep running on other
//! threads and none runs nested on this stack.

use crate::exec::config::WaiterRuns;
use crate::exec::threads::patience::SlotPatience;
use crate::exec::threads::fibers;
use crate::exec::threads::{self, Blocked, Scheduler, STUCK_CHECK_INTERVAL};
use crate::object::completion::{Completion, Outcome, Waiter};
use crate::probe::observe;
use crate::sync::backoff::Backoff;
use crate::sync::thread::{self, Thread};
use crate::sync::{AtomicBool, Ordering};

/// How long a thread outside the runtime yields before it parks in a
/// blocking wait (see `wait`; README.md, "How a thread waits"). A
/// millisecond: the caller of a triangular loop waits 100-200 µs for the
/// worker's big block after its own, and at 100 µs it parked and was woken
/// through the kernel at each loop (the loop took 1.6x as long in 21
/// interleaved runs, `bench/loops/triangular.mlir`, 2026-12-03).
#[cfg(not(loom))]
const OUTSIDE_SPIN: std::time::Duration = std::time::Duration::from_millis(1);

/// The backoff of a thread outside the runtime: timed, except under loom,
/// whose models have no clock (every yield is a branch to explore, and a
/// waiter that is never woken must park for loom to report the deadlock).
#[cfg(not(loom))]
fn outside_backoff() -> Backoff {
    Backoff::timed(64, OUTSIDE_SPIN)
}

#[cfg(loom)]
fn outside_backoff() -> Backoff {
    Backoff::new(64, 16)
}

/// A waiter that wakes a blocked thread. It lives on that thread's stack:
/// once `done` is set, the thread may return and the node is gone.
#[repr(C)]
struct WakeWaiter {
    waiter: Waiter,
    thread: Thread,
    done: AtomicBool,
}

impl WakeWaiter {
    /// The waiter's fire function.
    ///
    /// # Safety
    /// `node` is a `WakeWaiter` whose thread waits for `done`.
    unsafe fn fire(node: *mut Waiter, _outcome: Outcome) {
        // SAFETY: valid until `done` is set; only the clone is used after.
        let node = unsafe { &*node.cast::<WakeWaiter>() };
        let thread = node.thread.clone();
        // Release: the completer's view of the object's final state (and of
        // a value's payload) is visible to the woken thread.
        node.done.store(true, Ordering::Release);
        thread.unpark();
    }
}

/// Calls the function it is given with the scheduler of the instance this
/// thread entered (inside its gate), if that instance has one: how a thread
/// outside the pool reaches the tasks it may run while it waits.
pub(crate) type WithScheduler<'a> = &'a mut dyn FnMut(&mut dyn FnMut(&Scheduler));

/// Blocks the calling thread until `completion` completes. A thread outside
/// the pool runs queued tasks meanwhile (`waiter.rs`), on the scheduler
/// `with_scheduler` gives it.
pub(crate) fn wait(completion: &Completion, with_scheduler: WithScheduler<'_>) -> Outcome {
    if let Some(outcome) = completion.state() {
        return outcome;
    }
    // A task on a stack of its own switches out, and its thread goes on.
    if let Some(fiber) = fibers::current() {
        return fibers::switch_out_until(fiber, fiber.scheduler(), completion);
    }
    let on_runtime_thread = threads::current().is_some();
    // A thread outside the pool runs the queued tasks that produce its
    // object while it is not ready, each on a task stack (README.md, "A
    // waiting thread runs its producers"): first without registering as a
    // waiter, which the usual case (it ran the task it waits for) does
    // not need.
    let observed = observe::wait_started();
    // (Not in the loom models: there a task runs at once where it is made
    // ready, `instance::make_ready`, and a look at the queue per spin round
    // would only multiply the branches to explore.)
    // Whether the instance lets waiters run tasks (`WAITERS_RUN_TASKS`): if
    // not, the spin below does not enter its gate at every round to learn it.
    let mut runs_tasks = !on_runtime_thread && !cfg!(loom);
    // How long a task has waited in a runtime thread's next-task slot, in
    // this wait's rounds (`Scheduler::run_tasks_while_waiting`).
    let mut patience = SlotPatience::default();
    if runs_tasks {
        loop {
            if let Some(outcome) = completion.state() {
                if let Some(start) = observed {
                    observe::wait_ended(start, false);
                }
                return outcome;
            }
            let mut ran = 0;
            with_scheduler(&mut |scheduler| {
                runs_tasks = scheduler.config().waiters_run != WaiterRuns::Nothing;
                ran = scheduler.run_tasks_while_waiting(completion, || completion.state().is_some(), &mut patience);
            });
            if ran == 0 {
                break;
            }
        }
    }
    let node =
        WakeWaiter { waiter: Waiter::new(WakeWaiter::fire), thread: thread::current(), done: AtomicBool::new(false) };
    let node_ptr = &node as *const WakeWaiter as *mut Waiter;
    // SAFETY: `node` outlives its time in the list: we do not return before
    // `done` is set, which is the completer's last use of it.
    if let Err(outcome) = unsafe { completion.add_waiter(node_ptr) } {
        if let Some(start) = observed {
            observe::wait_ended(start, false);
        }
        return outcome;
    }
    // A task this thread made ready may be the one that ends this wait.
    threads::release_local_tasks();
    let mut blocked: Option<Blocked> = None;
    // How long a thread spins before it parks. Fine-grained tasks often
    // finish within microseconds; spinning that long saves a futex sleep
    // and wake on both sides. A runtime thread holds a permit while it
    // spins, so it spins briefly and then hands its place over; a thread
    // outside (the program's main thread awaiting a parallel loop's
    // group) holds nothing, and yields for up to OUTSIDE_SPIN: on a busy
    // machine each yield gives the core to whoever can run.
    let mut backoff = if on_runtime_thread { Backoff::new(64, 16) } else { outside_backoff() };
    // Acquire: pairs with the Release in `WakeWaiter::fire`.
    while !node.done.load(Ordering::Acquire) {
        if runs_tasks {
            let mut ran = 0;
            with_scheduler(&mut |scheduler| {
                ran = scheduler.run_tasks_while_waiting(
                    completion,
                    || node.done.load(Ordering::Acquire),
                    &mut patience,
                );
            });
            if ran > 0 {
                backoff = outside_backoff();
                continue;
            }
        }
        if backoff.snooze() {
            continue;
        }
        if blocked.is_none() {
            // Spinning did not do: a runtime thread hands its place over
            // before it sleeps (once; then it looks at `done` again).
            blocked = Blocked::begin();
            if blocked.is_some() {
                continue;
            }
        }
        match blocked.as_mut() {
            Some(blocked) => {
                thread::park_timeout(STUCK_CHECK_INTERVAL);
                if !node.done.load(Ordering::Acquire) {
                    blocked.check_stuck();
                }
            }
            None => thread::park(),
        }
    }
    let in_task = blocked.is_some();
    drop(blocked);
    if let Some(start) = observed {
        observe::wait_ended(start, in_task);
    }
    completion.state().expect("woken before completion")
}
