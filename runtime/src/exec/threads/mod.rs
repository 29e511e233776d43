//! The scheduler of one runtime instance: where a ready task goes, the
//! threads that run tasks, and the accounting that lets the destroy hook
//! wait until all of it is done. `README.md` beside this file describes the
//! protocol; this file and its siblings follow it.
//!
//! - Where a ready task goes: made ready on a runtime thread (a
//!   continuation, an `Execute` inside a task), to that thread's next-task
//!   slot, run right after its current task returns (the slot's older task
//!   goes to the thread's deque): a chain of any length runs in a loop,
//!   never nested. Queued by a thread outside the pool, to that thread's
//!   entry (a deque of its own, `outside.rs`), else to the shared queue (an
//!   unbounded lock-free injector, tasks stored by value).
//! - Who runs it: the `workers` threads of a rayon pool, each in one loop
//!   that waits for a drainer start (`pool_starts.rs`) and then drains
//!   while it holds one of `workers` run permits ([`Drainers`],
//!   `drain_loop.rs`). An idle drainer looks for work for a while (one a
//!   core at most, `lookout.rs`): the queue, other threads' deques, and,
//!   after some patience, their slots and the outside entries
//!   (`deques.rs`). A push starts a drainer when none looks; while the
//!   pool sleeps, one pool thread looks at the outside entries every
//!   millisecond instead, for an outside thread's first task (`watch.rs`).
//! - A task that blocks in an `Await*` on a runtime thread switches out on
//!   its own stack (`fibers.rs`, `stacks.rs`): the thread goes on with
//!   other tasks, and the task is queued again when the object completes,
//!   to go on on whichever thread takes it. Without a stack (task stacks
//!   off, or a stack refused) the thread blocks, gives its permit back and
//!   starts a drainer in its place ([`Blocked`]), on a new spare thread if
//!   every thread is in a job (`spares.rs`: spares then run the pool
//!   threads' loop until destroy); threads are capped
//!   (`MLIR_ASYNC_RUNTIME_MAX_THREADS`), and at the cap tasks wait.
//! - A thread outside the pool that waits in an `Await*` runs, on a task
//!   stack of its own, the queued tasks that produce what it waits for
//!   (`waiter.rs`, `binding.rs`, `pool_bindings.rs`), and blocks otherwise
//!   (`wait.rs`).
//! - Idle (`shutdown.rs`): no drainer alive, nothing queued in the queue
//!   or an outside entry, no task switched out, none held by a waiting
//!   thread. The destroy hook waits for it (`idle.rs`), then joins the
//!   threads.

pub(crate) mod binding;
mod blocked;
pub(super) mod deques;
mod drain_loop;
pub(super) mod drainers;
mod fibers;
mod handoff;
mod idle;
mod lookout;
#[cfg(all(test, loom))]
mod loom_bindings;
#[cfg(all(test, loom))]
mod loom_drainers;
#[cfg(all(test, loom))]
mod loom_entries;
#[cfg(all(test, loom))]
mod loom_handoff;
#[cfg(all(test, loom))]
mod loom_idle;
#[cfg(all(test, loom))]
mod loom_slot;
#[cfg(all(test, loom))]
mod loom_spares;
#[cfg(all(test, loom))]
mod loom_watch;
pub(crate) mod migration;
mod outside;
mod overflow;
mod patience;
mod pool_bindings;
mod pool_starts;
mod shutdown;
mod slot;
pub(crate) mod spares;
pub(crate) mod stacks;
pub(crate) mod wait;
mod waiter;
mod watch;

pub(super) use blocked::Blocked;
use idle::IdleSignal;

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_deque::{Injector, Worker};

use crate::base::task::{Origin, Task};
use crate::exec::config::{platform_stack_size, Config, WaiterRuns};
use crate::exec::threads::deques::Deques;
use crate::exec::threads::drainers::{AfterLeave, Drainers, Snapshot};
use crate::exec::threads::pool_bindings::PoolBindings;
use crate::exec::threads::pool_starts::PoolStarts;
use crate::exec::threads::slot::Slot;
use crate::exec::threads::watch::Watch;
use crate::exec::threads::spares::Spares;
use crate::object::completion::Completion;
use crate::probe::fuzz;
use crate::probe::observe;
use crate::sync::fenv::PoolEnv;
use crate::sync::misuse::abort_misuse;
use crate::sync::process::{lock, Mutex};
use crate::sync::tls;
use crate::sync::AtomicBool;

/// How often a thread blocked inside a task checks whether every runtime
/// thread is blocked (see [`Blocked::check_stuck`]).
pub(super) const STUCK_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// How long an idle drainer keeps looking for work before it leaves (a
/// producer often pushes the next task within microseconds): busy-wait
/// rounds, then rounds that yield the core.
const IDLE_SPINS: u32 = 32;
const IDLE_YIELDS: u32 = 64;

/// How long an idle drainer whose backoff ran out sleeps between two looks
/// at a task waiting in another thread's slot (`run_drainer`). A task whose
/// owner spins on it is taken after 16 looks at most: under a millisecond.
const SLOT_WAIT_NAP: Duration = Duration::from_micros(50);

pub(crate) struct Scheduler {
    config: Config,
    queue: Injector<Task>,
    /// The runtime threads' own deques, for stealing.
    deques: Deques,
    drainers: Drainers,
    pool: Mutex<Option<rayon::ThreadPool>>,
    /// Drainer starts owed to the pool's threads, which wait for them.
    pool_starts: PoolStarts,
    /// Who looks at the outside entries while the pool sleeps (`watch.rs`).
    watch: Watch,
    /// What the tasks that runtime threads queue produce, for waiters
    /// (`pool_bindings.rs`).
    pool_bindings: PoolBindings,
    /// The pool's threads, spawned by us so that shutdown can join them.
    pool_threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
    spares: Spares,
    /// The threads waiting for idleness, and the tasks held out of the
    /// queue and the entries by no drainer (`idle.rs`).
    idle: IdleSignal,
    /// The one-line report of a pool stuck at the cap was printed.
    stuck_reported: AtomicBool,
    /// The one-line report of a thread refused by the system was printed.
    refusal_reported: AtomicBool,
    /// The pool threads' first floating-point environment (`waiter.rs`).
    pool_env: PoolEnv,
    /// The machine's parallelism (`Scheduler::cores_taken`).
    cores: usize,
    /// This scheduler, for the outside threads' entries, which keep it.
    me: std::sync::Weak<Scheduler>,
}

/// A pointer to a scheduler that crosses into its threads.
#[derive(Clone, Copy)]
pub(super) struct SchedulerRef(*const Scheduler);

// SAFETY: a scheduler is `Sync`; the pointer stays valid for as long as
// any of its threads runs (see `Scheduler::join_threads`).
unsafe impl Send for SchedulerRef {}
// SAFETY: as above; the pointer is only read.
unsafe impl Sync for SchedulerRef {}

impl SchedulerRef {
    /// # Safety
    /// The scheduler has not been shut down.
    pub(super) unsafe fn get<'a>(self) -> &'a Scheduler {
        // SAFETY: per the contract.
        unsafe { &*self.0 }
    }
}

/// What a runtime thread knows of the scheduler whose drainer it runs.
struct ThreadState {
    /// True while this thread's drainer holds a run permit.
    holds_permit: Cell<bool>,
    /// This thread's next-task slot (`slot.rs`), in its scheduler's
    /// registry: a task made ready by the task running here, run as soon
    /// as that task returns unless an idle thread takes it first. Null
    /// until the thread first drains.
    slot: Cell<*const Slot>,
    /// This thread's deque, registered with its scheduler when the thread
    /// first drained.
    deque: RefCell<Option<OwnedDeque>>,
}

/// A thread's deque and its slot in its scheduler's registry. Dropped with
/// the thread's thread-locals, and touching nothing else then: `owner` only
/// names the scheduler (it is never dereferenced), since a thread's
/// thread-local destructors may run after its scheduler is gone.
struct OwnedDeque {
    owner: *const Scheduler,
    slot: usize,
    worker: Worker<Task>,
}

impl Drop for ThreadState {
    fn drop(&mut self) {
        tls::with(|slots| slots.thread_state.set(std::ptr::null()));
    }
}

thread_local! {
    /// This thread's state; the hot paths read it through the
    /// `thread_state` slot of `tls` (one load), filled when the thread first drains and
    /// cleared when the state is gone.
    static STATE: ThreadState = const {
        ThreadState {
            holds_permit: Cell::new(false),
            slot: Cell::new(std::ptr::null()),
            deque: RefCell::new(None),
        }
    };
}

/// This thread's state, if it ever drained.
#[inline(always)]
fn state<'a>() -> Option<&'a ThreadState> {
    let ptr = tls::with(|slots| slots.thread_state.get()).cast::<ThreadState>();
    // SAFETY: the slot points to this thread's `STATE` while it lives (its
    // drop clears the slot); the borrow stays on this thread.
    (!ptr.is_null()).then(|| unsafe { &*ptr })
}

/// Calls `f` with this thread's state, registering it in the slot first
/// if needed. Only drainers call this (the thread lives).
#[inline(always)]
fn with_state<R>(f: impl FnOnce(&ThreadState) -> R) -> R {
    match state() {
        Some(state) => f(state),
        None => STATE.with(|s| {
            tls::with(|slots| slots.thread_state.set((s as *const ThreadState).cast()));
            f(s)
        }),
    }
}

/// This thread's state, on a thread that runs a drain loop: its state is
/// registered ([`Scheduler::run_drainer`] registers it before anything
/// else).
///
/// # Safety
/// The calling thread runs a scheduler's drain loop.
#[inline(always)]
unsafe fn drainer_state<'a>() -> &'a ThreadState {
    let ptr = tls::with(|slots| slots.thread_state.get()).cast::<ThreadState>();
    // SAFETY: per the contract the slot points to this thread's `STATE`,
    // which lives while the thread runs; the borrow stays on this thread.
    unsafe { &*ptr }
}

/// The scheduler whose task runs on this thread, if any.
#[inline(always)]
pub(crate) fn current<'a>() -> Option<&'a Scheduler> {
    let ptr = tls::with(|slots| slots.draining.get()).cast::<Scheduler>();
    // SAFETY: set only while this thread runs the scheduler's drain loop,
    // during which the scheduler is alive.
    (!ptr.is_null()).then(|| unsafe { &*ptr })
}

/// The scheduler of the task that a thread outside the pool runs while it
/// waits (on a waiter's fiber), if any: the task's Executes and
/// continuations go to that scheduler's queue.
#[inline(never)]
pub(crate) fn waiter_scheduler<'a>() -> Option<&'a Scheduler> {
    fibers::current().map(|fiber| fiber.scheduler())
}

/// True on a thread of a runtime instance, running its tasks (a worker or
/// a spare thread): where a test expects the pool to run a task.
pub(crate) fn on_runtime_thread() -> bool {
    current().is_some()
}

/// True when the calling code runs inside a task of this scheduler kind:
/// on a runtime thread (a worker or a spare, in its drain loop), or on a
/// task stack, which includes the task stack of a thread that waits in an
/// `Await*` outside the pool and runs a task meanwhile (`waiter.rs`),
/// where [`on_runtime_thread`] is false. Reads two plain thread-local
/// slots (`sync/tls.rs`), which stay right while glibc's `exit` destroys
/// the thread's other thread-locals.
pub(crate) fn in_task() -> bool {
    current().is_some() || fibers::current().is_some()
}

/// Moves the task in this thread's next-task slot and its deque's tasks,
/// if any, to its scheduler's queue, where any drainer can take them.
/// Called before this thread blocks: one of them may be the task that ends
/// the wait.
pub(super) fn release_local_tasks() {
    if let Some(scheduler) = current() {
        scheduler.release_local_tasks();
    }
}

/// Forgets this thread's scheduler context without touching the scheduler
/// (a forked child, where that scheduler's threads do not exist).
///
/// A child forked from inside a task goes on as a plain thread of its own
/// process ([`in_task`] is false from here on), though it still runs on
/// the parent's task stack if the task had one: it may use the runtime
/// (a fresh instance), and must end the process rather than return from
/// that task, whose caller (the parent's drain loop or wait) does not
/// exist here, as after any `fork` of a multithreaded process.
pub(crate) fn forget_thread_context() {
    outside::forget();
    fibers::forget_in_child();
    tls::with(|slots| slots.draining.set(std::ptr::null()));
    let _ = STATE.try_with(|s| {
        s.holds_permit.set(false);
        // The slot is the forgotten scheduler's memory.
        s.slot.set(std::ptr::null());
        if let Ok(mut deque) = s.deque.try_borrow_mut() {
            std::mem::forget(deque.take());
        }
    });
}

impl Scheduler {
    /// A scheduler with its rayon pool started.
    pub(crate) fn start(config: Config) -> Arc<Scheduler> {
        // crossbeam's epoch collector (what a steal from a deque pins) is
        // created at its first use, under a `Once`: created here, before
        // any thread of ours starts, a fork can never catch a worker in the
        // middle of creating it (a forked child's workers would wait on
        // that `Once` forever). Before the outside threads had deques of
        // their own, the queue's first steals on the creating thread did
        // this by chance.
        let _ = Worker::<()>::new_lifo().stealer().steal();
        let pool_env = PoolEnv::capture(); // the pool's threads inherit it
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let pool_threads = Arc::new(Mutex::new(Vec::new()));
        let handles = Arc::clone(&pool_threads);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.workers)
            .spawn_handler(move |thread| {
                let handle = crate::sync::spawn::spawn(
                    std::thread::Builder::new()
                        .name(format!("mlir-async-{}", thread.index()))
                        .stack_size(platform_stack_size()),
                    move || thread.run(),
                )?;
                lock(&handles).push(handle);
                Ok(())
            })
            .panic_handler(|_| abort_misuse("worker thread", "the runtime panicked"))
            .build()
            .unwrap_or_else(|e| abort_misuse("runtime start", &format!("cannot start the pool: {e}")));
        let scheduler = Arc::new_cyclic(|me| Scheduler {
            config,
            queue: Injector::new(),
            deques: Deques::new(config.max_threads),
            drainers: Drainers::new(config.workers, config.max_threads, cores),
            pool: Mutex::new(None),
            pool_starts: PoolStarts::new(),
            watch: Watch::new(),
            pool_bindings: PoolBindings::new(),
            pool_threads,
            spares: Spares::new(config.workers),
            idle: IdleSignal::new(),
            stuck_reported: AtomicBool::new(false),
            refusal_reported: AtomicBool::new(false),
            pool_env,
            cores,
            me: me.clone(),
        });
        let this = scheduler.as_ref().as_ref();
        // SAFETY: the scheduler outlives its pool's threads' loops, which
        // end when the pool closes (`Scheduler::join_threads`).
        pool.spawn_broadcast(move |_| unsafe { this.get() }.run_pool_thread(None));
        *lock(&scheduler.pool) = Some(pool);
        scheduler
    }

    pub(crate) fn config(&self) -> Config {
        self.config
    }

    pub(super) fn as_ref(&self) -> SchedulerRef {
        SchedulerRef(self)
    }

    fn is_current(&self) -> bool {
        std::ptr::eq(tls::with(|slots| slots.draining.get()).cast::<Scheduler>(), self)
    }

    // ---- queueing -----------------------------------------------------------

    /// Queues `task` where any drainer can take it, and starts a drainer if
    /// a permit is free.
    pub(crate) fn push(&self, task: Task) {
        self.queue.push(task);
        observe::task_queued(|| self.queue.len());
        self.start_drainer(self.drainers.after_push());
    }

    /// A task made ready on this scheduler's own thread: by a completion
    /// (a continuation) or by `mlirAsyncRuntimeExecute` inside a task.
    /// It goes to the thread's next-task slot and runs as soon as the
    /// current task returns, on this thread: a dependency chain does not
    /// hop between cores, and a spawner's newest task runs first. The
    /// slot's older occupant goes to the thread's deque, where an idle
    /// drainer may steal it.
    ///
    /// The current task may go on for long, or wait for the task it made
    /// ready without an `Await*` (a spin on memory): an idle drainer takes
    /// a task that waits in a slot ([`Scheduler::next_task`]), and one is
    /// started here if none is looking for work and a permit is free
    /// (README.md, "The next-task slot"). A task that blocks in an
    /// `Await*` first moves the slot's task to the queue
    /// ([`Blocked::begin`]).
    pub(crate) fn push_local(&self, task: Task) {
        debug_assert!(self.is_current());
        match fuzz::continuation_detour() {
            fuzz::Detour::Pool => return self.push(task),
            fuzz::Detour::PoolThenYield => {
                self.push(task);
                return std::thread::yield_now();
            }
            fuzz::Detour::Usual => {}
        }
        if self.config.waiters_run == WaiterRuns::Producers {
            // Only an `Execute` binds a token; between a token's creation
            // and its `Execute`, and between the `Execute` and its
            // `AddTokenToGroup`, the lowering calls nothing that could
            // fire a continuation, so a continuation's push leaves the
            // thread's binder as it is (`binding.rs`).
            let handle = task.handle() as usize;
            let token = match task.origin() {
                Origin::Execute => binding::pushed_to_pool(handle),
                _ => 0,
            };
            self.pool_bindings.bind(handle, token);
        }
        // SAFETY: this thread runs this scheduler's drain loop
        // (`is_current`), which registered its state, slot and deque first.
        let s = unsafe { drainer_state() };
        // SAFETY: as above.
        let slot = unsafe { &*s.slot.get() };
        if let Some(older) = slot.put(task) {
            match s.deque.borrow().as_ref() {
                Some(deque) => deque.worker.push(older),
                None => unreachable!("a drainer registers its deque first"),
            }
        }
        self.after_local_push();
    }

    /// `AddTokenToGroup(token, group)` inside a task on this scheduler's
    /// thread: the task this thread queued for the token produces a token
    /// of the group (`pool_bindings.rs`).
    pub(crate) fn pool_token_added_to_group(&self, token: &Completion, group: &Completion) {
        if self.config.waiters_run == WaiterRuns::Producers {
            let pushes = binding::newest_pool_pushes();
            self.pool_bindings.add_group(pushes, binding::address(token), binding::address(group));
        }
    }

    /// After a task was put in this thread's slot or deque: starts a
    /// drainer if none looks for work and a permit is free (`lookout.rs`).
    #[inline(always)]
    fn after_local_push(&self) {
        if self.drainers.should_start() {
            self.start_drainer(self.drainers.try_start());
        }
    }

    /// After a drainer stopped looking for work, or left: starts a drainer
    /// for a task waiting in another thread's slot or deque if no other
    /// drainer looks for work and a permit is free (`lookout.rs`).
    fn after_looking(&self) {
        self.start_drainer(self.drainers.after_looking(|| self.deques.any_local_task()));
    }

    /// See [`release_local_tasks`].
    fn release_local_tasks(&self) {
        let (next, mut local) = with_state(|s| {
            let mut local = Vec::new();
            if let Some(deque) = s.deque.borrow().as_ref() {
                while let Some(task) = deque.worker.pop() {
                    local.push(task);
                }
            }
            // SAFETY: the slot, if set, is this scheduler's (`current`).
            (unsafe { s.slot.get().as_ref() }.and_then(Slot::take_own), local)
        });
        // Oldest first, as thieves would have taken them.
        local.reverse();
        for task in next.into_iter().chain(local) {
            self.push(task);
        }
    }

    /// Registers this thread's deque with this scheduler on its first
    /// drain: a pool thread in the slot of its rayon index, a spare in
    /// `slot`, given it at its start (after the pool's).
    fn ensure_deque(&self, slot: Option<usize>) {
        with_state(|s| {
            let mut deque = s.deque.borrow_mut();
            if deque.as_ref().is_some_and(|d| std::ptr::eq(d.owner, self)) {
                return;
            }
            let slot = slot.unwrap_or_else(|| rayon::current_thread_index().expect("a pool job runs on the pool"));
            let worker = self.deques.register(slot);
            s.slot.set(self.deques.slot(slot));
            *deque = Some(OwnedDeque { owner: self, slot, worker });
        });
    }

    /// After a drainer left or blocked, or a pool thread's owed start was
    /// taken back (`take_back_owed_starts`).
    fn after_leave(&self, after: Snapshot) {
        self.act_after_leave(self.drainers.after_leave(after, || self.queue.is_empty()));
    }

    fn act_after_leave(&self, after: AfterLeave) {
        match after {
            AfterLeave::Start(start) => self.start_drainer(start),
            // No drainer is alive, so no runtime thread's slot or deque
            // holds a task; an outside thread's entry may (a drainer over
            // the lookers' cap leaves young outside tasks to the lookers,
            // which may have left since): a drainer for it, else idle.
            AfterLeave::Idle => match lookout::after_last_leave(&self.drainers, || self.deques.any_outside_task()) {
                Some(start) => self.start_drainer(start),
                None => self.idle.notify(),
            },
            // A task may wait in another thread's slot or deque, put there
            // after this drainer's last look.
            AfterLeave::Nothing => self.after_looking(),
        }
    }

    /// Called by a thread blocked in a task each time it wakes to look
    /// around ([`Blocked::check_stuck`], every [`STUCK_CHECK_INTERVAL`]):
    /// starts a drainer if tasks wait and a permit is free
    /// (`Drainers::look_while_blocked`).
    fn look_while_blocked(&self) {
        self.act_after_leave(self.drainers.look_while_blocked(|| self.queue.is_empty()));
    }
}
