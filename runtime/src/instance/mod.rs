//! The runtime the C ABI talks to: the current instance (a scheduler and
//! its gate), created lazily by the first call that needs it and replaced
//! by a fresh one after the destroy hook; where tasks go; the destroy hook
//! itself; and `fork`.
//!
//! - A task made ready on a runtime thread goes to that thread's scheduler
//!   (the instance it belongs to, even while that instance is being
//!   destroyed: destroy waits for it). A task made ready on any other
//!   thread enters the current instance through its [`Gate`]. Destroy
//!   drains the instance while it is still current, so a task queued or a
//!   continuation fired by another thread meanwhile is drained too; once
//!   the instance is idle, destroy closes the gate, and later callers go to
//!   a fresh instance. Never lost, never blocked.
//! - Process exit: a runner calls the destroy hook before it exits; a
//!   program compiled ahead of time (docs/aot.md) has no runner. The first
//!   instance registers an `atexit` handler that gives such a process the
//!   destroy hook's teardown (every task still queued or running runs to
//!   the end, the workers are joined, the trace and counters are written,
//!   objects still alive are reported), unless no instance is running or
//!   `exit` was called from inside a task ([`in_task`], on any thread:
//!   that task could never finish), which exits with its status. `_exit`, a
//!   fatal signal or an abort run no handler.
//! - `fork`: the child of a process whose runtime started has none of the
//!   runtime's threads. A `pthread_atfork` handler forgets the instance in
//!   the child (without touching it), so the child's next call starts a
//!   fresh one, and its destroy hook works; a child forked from inside a
//!   task is bound to no scheduler of the parent.
//! - An instance runs its tasks on the ordinary multithreaded scheduler,
//!   or, when a deterministic schedule is selected (`deterministic::spec`), on the
//!   deterministic executor ([`Deterministic`]). The paths of the ordinary
//!   scheduler's threads do not look at the mode; the others (a program
//!   thread queueing a task, blocking waits, completions) dispatch on the
//!   instance, or check one relaxed flag ([`deterministic::enabled`]) first.

mod cached;
mod exit_hook;
pub(crate) mod gate;
#[cfg(all(test, loom))]
mod loom_gate;

use std::sync::Arc;
use std::time::Duration;

use crate::base::task::Task;
use crate::exec::config::{drain_while_current, Config};
use crate::exec::deterministic::spec::{self, Schedule};
use crate::exec::deterministic::{self, Deterministic};
use crate::exec::threads::{self, wait};
use crate::exec::Executor;
use crate::instance::cached::{forget_cached, with_entered_instance};
use crate::instance::gate::Gate;
use crate::object::completion::{take_node, Completion, Outcome, Waiter, WaiterNode};
use crate::object::live;
use crate::object::recycle;
use crate::probe::counters;
use crate::probe::observe;
use crate::probe::trace;
use crate::sync::misuse::{abort_misuse, warn};
use crate::sync::mutation;
use crate::sync::process::ForkSafeLock;
use crate::sync::asymmetric;
use crate::sync::spawn;

/// One runtime instance.
struct Instance {
    executor: Executor,
    gate: Gate,
}

impl Instance {
    fn start() -> Arc<Instance> {
        install_fork_handlers();
        threads::migration::register_instance_cache(cached::cached_instance_address);
        // Before the pool's threads start: a process that has one thread
        // now registers for the gate's light fences at once.
        asymmetric::prepare();
        let executor = Executor::start(Config::from_env());
        let instance = Arc::new(Instance { executor, gate: Gate::new() });
        observe::instance_started();
        // After observe's own exit handler (registered by the line above
        // when observation is on): handlers run in reverse order, so the
        // teardown runs first and the trace and counters are written once,
        // complete.
        install_exit_handler();
        instance
    }
}

/// The current instance, if any, behind a lock that the `fork` handlers
/// hold across a fork.
struct Current(ForkSafeLock<Option<Arc<Instance>>>);

static CURRENT: Current = Current(ForkSafeLock::new(None));

impl Current {
    /// Runs `f` on the slot, under the lock. `f` must not call back here.
    fn with<R>(&self, f: impl FnOnce(&mut Option<Arc<Instance>>) -> R) -> R {
        f(&mut self.0.lock())
    }
}

/// One destroy at a time: a second one waits until the first is done. Not
/// held across a fork (a destroy may take long): a child resets it, since
/// the thread that held it does not exist there.
static DESTROYING: ForkSafeLock<()> = ForkSafeLock::new(());

/// The current instance, started if there is none.
fn current_instance() -> Arc<Instance> {
    CURRENT.with(|slot| Arc::clone(slot.get_or_insert_with(Instance::start)))
}

/// Queues a task from a thread outside the ordinary scheduler's pools: on
/// the instance it entered.
#[inline(always)]
fn push_outside(task: Task) {
    if let Err(refused) = with_entered_instance(move |instance| instance.executor.push(task)) {
        push_refused(refused);
    }
}

/// A deterministic instance that was closed meanwhile refused the task:
/// on the next one.
#[cold]
#[inline(never)]
fn push_refused(task: Task) {
    retry_on_next_instance(task, |task| with_entered_instance(move |instance| instance.executor.push(task)))
}

/// After the instance this thread entered refused an operation because the
/// destroy hook closed it meanwhile: forgets that instance, lets the
/// destroying thread go on, and tries `attempt` on the next, until one
/// does not refuse. A refusal hands `state` back (a refused push, its task).
fn retry_on_next_instance<S, R>(mut state: S, mut attempt: impl FnMut(S) -> Result<R, S>) -> R {
    loop {
        forget_cached();
        std::thread::yield_now();
        match attempt(state) {
            Ok(result) => return result,
            Err(refused) => state = refused,
        }
    }
}

/// Queues a task made ready, by `mlirAsyncRuntimeExecute` or by a
/// completion (a continuation): on a runtime thread, in that thread's
/// next-task slot (run when the current task returns); elsewhere on the
/// instance the thread entered.
#[inline(always)]
pub(crate) fn make_ready(task: Task) {
    if cfg!(loom) {
        // The loom models check the objects' state machines, not the pool:
        // a task runs at once on the calling thread.
        return task.run();
    }
    match threads::current() {
        Some(scheduler) => scheduler.push_local(task),
        // A task that a waiting thread runs (`threads/waiter.rs`) queues on
        // its own scheduler; any other thread on the instance it entered.
        None => match threads::waiter_scheduler() {
            Some(scheduler) => scheduler.push_from_waiter(task),
            None => push_outside(task),
        },
    }
}

/// The deterministic executor of the instance this thread would use, if
/// that instance is deterministic (starts one if there is none).
fn current_deterministic() -> Option<Arc<Deterministic>> {
    with_entered_instance(|instance| instance.executor.deterministic().cloned())
}

/// Calls `op` on this thread's deterministic executor until it does not
/// refuse (a closed one: the next instance is tried); `None` when the
/// instance is not deterministic.
fn on_deterministic<R>(op: impl FnMut(&Deterministic) -> Result<R, deterministic::Closed>) -> Option<R> {
    if !deterministic::enabled() {
        return None;
    }
    with_deterministic(op)
}

/// [`on_deterministic`] without its check of the flag.
fn with_deterministic<R>(mut op: impl FnMut(&Deterministic) -> Result<R, deterministic::Closed>) -> Option<R> {
    let mut attempt = |()| match current_deterministic() {
        None => Ok(None),
        Some(executor) => op(&executor).map(Some).map_err(|deterministic::Closed| ()),
    };
    match attempt(()) {
        Ok(result) => result,
        Err(()) => retry_on_next_instance((), attempt),
    }
}

/// A blocking await (`mlirAsyncRuntimeAwait*`).
pub(crate) fn wait(completion: &Completion) -> Outcome {
    if let Some(outcome) = on_deterministic(|executor| executor.wait(completion)) {
        return outcome;
    }
    // Outside the pool, the waiting thread runs tasks of the instance it entered.
    wait::wait(completion, &mut |run| {
        with_entered_instance(|instance| if let Executor::Threads(scheduler) = &instance.executor { run(scheduler) })
    })
}

/// Runs `complete`, the completion of a token or value. Under a
/// deterministic schedule it is a scheduling point, and the turn lasts
/// until the completion has fired its waiters; otherwise this costs one
/// relaxed load.
#[inline(always)]
pub(crate) fn completing(complete: impl FnOnce()) {
    if deterministic::enabled() {
        completing_deterministically(complete)
    } else {
        complete()
    }
}

#[cold]
#[inline(never)]
fn completing_deterministically(complete: impl FnOnce()) {
    // A closed executor (a thread outside completing during the destroy
    // hook) has no turn to give: the completion happens at once.
    let _turn = current_deterministic().and_then(|executor| executor.scheduling_point().ok());
    complete()
}

/// The id `mlirAsyncRuntimePrintCurrentThreadId` prints under a
/// deterministic schedule: the thread's agent number (`None` otherwise).
pub(crate) fn logical_thread_id() -> Option<u64> {
    // Before the first instance (a program that prints its id first) the
    // selected schedule decides: ids must not change kind mid-run.
    if !deterministic::enabled() && spec::for_new_instance() == Schedule::Threads {
        return None;
    }
    with_deterministic(|executor| executor.logical_thread_id())
}

/// Tasks queued and tasks run by the last deterministic instance destroyed.
pub(crate) fn schedule_task_counts() -> (u64, u64) {
    deterministic::last_task_counts()
}

/// Scheduling steps of the current deterministic instance, else the last.
pub(crate) fn schedule_steps() -> u64 {
    running_instance()
        .and_then(|instance| instance.executor.deterministic().map(|executor| executor.steps()))
        .unwrap_or_else(deterministic::last_steps)
}

/// A waiter that resumes a coroutine (`Await*AndExecute`).
#[repr(C)]
struct ResumeWaiter {
    waiter: Waiter,
    task: Task,
}

// SAFETY: `#[repr(C)]` with its `Waiter` first.
unsafe impl WaiterNode for ResumeWaiter {}

impl ResumeWaiter {
    /// # Safety
    /// `node` is a `ResumeWaiter` from `Completion::new_node`, fired once.
    unsafe fn fire(node: *mut Waiter, _outcome: Outcome) {
        // SAFETY: per the contract, we own the node now.
        let node = unsafe { take_node(node.cast::<ResumeWaiter>()) };
        make_ready(node.task);
    }
}

/// Runs `task` once `completion` has completed: at once (through the
/// scheduler) if it already has.
pub(crate) fn resume_when_complete(completion: &Completion, task: Task) {
    if completion.state().is_some() {
        return make_ready(task);
    }
    let node = completion.new_node(ResumeWaiter { waiter: Waiter::new(ResumeWaiter::fire), task });
    // SAFETY: a fresh node whose fire function takes it back.
    if unsafe { completion.add_waiter(node.cast()) }.is_err() {
        // SAFETY: not linked, so still ours.
        let node = unsafe { take_node(node) };
        make_ready(node.task);
    }
}

/// A token (`token`) or value that the caller of the ABI created: bound
/// to the task this thread queues next (`threads/binding.rs`; on a runtime
/// thread, `threads/pool_bindings.rs`), so that a wait for it may run that
/// task.
#[inline(always)]
pub(crate) fn object_created(object: &Completion, token: bool) {
    threads::binding::created(object, token);
}

/// `AddTokenToGroup(token, group)`: the task bound to the token produces a
/// token of the group.
#[inline(always)]
pub(crate) fn token_added_to_group(token: &Completion, group: &Completion) {
    match threads::current() {
        Some(scheduler) => scheduler.pool_token_added_to_group(token, group),
        None => threads::binding::added_to_group(token, group),
    }
}

/// How many tasks the instance this thread belongs to runs at once (or
/// the current one's, started if needed): `Config::workers`.
pub(crate) fn num_workers() -> usize {
    match threads::current() {
        Some(scheduler) => scheduler.config().workers,
        None => current_instance().executor.config().workers,
    }
}

/// True on a thread that runs an instance's tasks: a worker or spare of
/// the multithreaded scheduler, or a worker of a deterministic one. Not on
/// a thread that runs a task while it waits outside the pool: what the
/// runtime must not do inside a task asks [`in_task`].
pub(crate) fn on_runtime_thread() -> bool {
    threads::on_runtime_thread() || deterministic::on_worker_thread()
}

/// The one predicate "this code runs inside a task", on any thread: a
/// worker or spare of the multithreaded scheduler, a task stack (also one
/// that a thread waiting in an `Await*` outside the pool runs a task on),
/// or a worker of a deterministic executor. The destroy hook and
/// `Runtime::shutdown` refuse to run there (they would wait for the task
/// that called them), the teardown at exit is skipped there (an `exit`
/// from a task), and a child forked there is made a plain thread
/// (`after_fork_in_child`). Async-signal-safe enough for an exit handler:
/// plain thread-local reads that outlive the thread's other thread-locals.
pub(crate) fn in_task() -> bool {
    threads::in_task() || deterministic::on_worker_thread()
}

/// The current instance, if one runs (never starts one).
fn running_instance() -> Option<Arc<Instance>> {
    CURRENT.with(|slot| slot.clone())
}

/// Starts the current instance if none runs (what the first task would
/// do); its worker count.
pub(crate) fn start() -> usize {
    current_instance().executor.config().workers
}

/// True while an instance runs (between its start and the destroy hook).
pub(crate) fn is_running() -> bool {
    running_instance().is_some()
}

/// Blocks until the current instance has no task queued or running, or
/// `timeout` passed; true when idle. Never starts an instance.
pub(crate) fn wait_idle(timeout: Option<Duration>) -> bool {
    running_instance().map_or(true, |instance| instance.executor.wait_idle(timeout))
}

/// Tasks queued or running on the current instance.
pub(crate) fn tasks_in_flight() -> usize {
    running_instance().map_or(0, |instance| instance.executor.tasks_in_flight())
}

/// The destroy hook: drains the current instance (a task queued or a
/// continuation fired by another thread meanwhile joins the drain), takes
/// it out so that the next call starts a fresh one, closes its gate and
/// drains what slipped in before the gate closed, joins its threads, then
/// writes the trace and counters and reports the objects still alive. Must
/// not run inside a task ([`in_task`], on any thread: it would wait for
/// that task): the one-line misuse abort there, before any of its locks or
/// this thread's borrowed state is touched.
pub(crate) fn destroy(call: &str) {
    if in_task() {
        abort_misuse(call, "called from inside a task");
    }
    let _serial = match DESTROYING.try_lock() {
        Some(serial) => serial,
        None => {
            // Another thread is destroying. Under a deterministic schedule
            // this thread may hold the turn between its runtime calls (the
            // primary), which that destroy waits for: give it up first, or
            // both wait forever.
            if let Some(executor) = running_instance().and_then(|instance| instance.executor.deterministic().cloned()) {
                executor.step_away();
            }
            DESTROYING.lock()
        }
    };
    // `try_with`: at process exit (`at_exit`), glibc has already destroyed
    // the main thread's thread-locals.
    forget_cached();
    if let Some(instance) = running_instance() {
        let scheduler = match &instance.executor {
            Executor::Threads(scheduler) => scheduler,
            Executor::Deterministic(executor) => {
                // Waits until no task is in flight and closes the executor
                // in one step: a late caller is refused from then on and
                // goes to the next instance, once this one is not current.
                executor.close();
                take_current(&instance);
                instance.gate.close();
                observe::write_results();
                live::report_live_objects("destroy");
                return;
            }
        };
        if mutation::DESTROY_NO_DRAIN {
            // Mutation 1 (test-only): upstream's unowned pool. Return
            // without waiting for the tasks in flight or the threads
            // running them (which keep using the scheduler: leak it).
            CURRENT.with(Option::take);
            std::mem::forget(instance);
            return;
        }
        // While the program's tasks finish, any thread may still queue
        // work on this instance: it is drained too, within bounds while
        // tasks are queued or run and threads outside the pool call in. A
        // thread that queues faster than the tasks finish (an endless
        // producer, or any producer under schedule fuzzing) would keep it
        // from ever going idle: past them, tasks queued from outside go to
        // a fresh instance instead, as if they had come just after this
        // destroy, and only what this instance accepted is drained. While
        // every task in flight waits in an await, or no thread outside the
        // pool called in since the drain began (a task that computes
        // long), nothing outpaces the drain and the instance stays
        // current: what another thread completes, fires or queues later
        // joins the drain.
        instance.gate.begin_drain();
        drain_while_current(
            |limit| scheduler.wait_idle(Some(limit)),
            || scheduler.tasks_in_flight(),
            || scheduler.has_runnable_tasks() && instance.gate.entered_while_draining() > 0,
        );
        take_current(&instance);
        // From here on, callers outside the pool go to a fresh instance.
        instance.gate.close_and_wait();
        scheduler.drain();
        scheduler.join_threads();
        // Every task accepted ran: the pool's threads leave only with
        // their queues empty. Checked in release builds too: a lost task
        // is said, never silent.
        let abandoned = scheduler.tasks_in_flight();
        if abandoned > 0 {
            warn(&format!(
                "destroy: {abandoned} task(s) abandoned: still queued after the threads were joined (a runtime bug)"
            ));
        }
    }
    // Every runtime thread has exited: their trace buffers and counters
    // are final.
    observe::write_results();
    live::report_live_objects("destroy");
}

/// Takes `instance` out of the current slot, if it is still there: the
/// next call starts a fresh one.
fn take_current(instance: &Arc<Instance>) {
    CURRENT.with(|slot| {
        if slot.as_ref().is_some_and(|current| Arc::ptr_eq(current, instance)) {
            *slot = None;
        }
    });
}

// ---- process exit ---------------------------------------------------------------

fn install_exit_handler() {
    exit_hook::install(at_exit);
}

/// The teardown at process exit, when an instance still runs and `exit`
/// was not called from inside a task. An `exit` from a task, on any thread
/// ([`in_task`]: a worker, a spare, or the task stack of a thread waiting
/// outside the pool), skips it: the teardown would wait for the very task
/// that exits (on a waiting thread's task stack, for the gate entry that
/// this thread holds), and the process exits with the task's status while
/// the other tasks are still where they are.
extern "C" fn at_exit() {
    if running_instance().is_some() && !in_task() {
        destroy("exit");
    }
}

// ---- fork ---------------------------------------------------------------------

fn install_fork_handlers() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: registers three plain functions with no captured state.
        let rc =
            unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork_in_parent), Some(after_fork_in_child)) };
        if rc != 0 {
            crate::sync::misuse::warn("cannot register fork handlers: a forked child cannot use the runtime");
        }
    });
}

/// Before `fork`: the forking thread holds every process-wide lock that a
/// child needs, so no other thread is inside one of them when the child is
/// made; one-time reads of the environment are finished. The order is the
/// order in which the runtime nests them (an instance starts under
/// `CURRENT` and reads the selected schedule; the rest are leaves), so this
/// cannot deadlock against a thread that takes two.
extern "C" fn before_fork() {
    observe::prepare_for_fork();
    CURRENT.0.hold_for_fork();
    gate::hold_for_fork();
    spec::hold_for_fork();
    trace::hold_for_fork();
    counters::hold_for_fork();
    live::hold_for_fork();
    recycle::lock_for_fork();
    // Last: a thread that starts one (an instance starting under `CURRENT`)
    // may hold the locks above; no thread in transition needs them.
    spawn::hold_for_fork();
}

/// After `fork`, in the parent and in the child: the reverse order.
fn release_after_fork() {
    spawn::release_after_fork();
    recycle::unlock_after_fork();
    live::release_after_fork();
    counters::release_after_fork();
    trace::release_after_fork();
    spec::release_after_fork();
    gate::release_after_fork();
    CURRENT.0.release_after_fork();
}

extern "C" fn after_fork_in_parent() {
    release_after_fork();
}

/// In the child: the instance's threads do not exist here. Forget it (its
/// memory is the parent's copy; nothing may touch its locks or join its
/// threads), so the next call starts a fresh one. A fork from inside a
/// task ([`in_task`]) also forgets that this thread runs a task: the child
/// is bound to no scheduler of the parent, and its calls (a task queued
/// and awaited, the destroy hook) go to its own fresh instance.
extern "C" fn after_fork_in_child() {
    // SAFETY: `before_fork` took the lock in the forking thread, which is
    // this one, the only thread of the child; no other reference exists.
    let old = unsafe { CURRENT.0.held_for_fork() }.take();
    std::mem::forget(old);
    DESTROYING.reset_in_child();
    release_after_fork();
    cached::forget_in_child();
    threads::forget_thread_context();
    deterministic::forget_thread_registration();
    if in_task() {
        // A runtime bug: the child would stay bound to the parent's
        // scheduler (its tasks queued where no thread runs them).
        abort_misuse("fork", "the child is still bound to the parent's scheduler");
    }
}
