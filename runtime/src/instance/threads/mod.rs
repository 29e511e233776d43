//! The scheduler of one runtime instance: its task queue, the rayon pool
//! whose jobs drain it, the spare threads that stand in for blocked ones,
//! and the accounting that lets the destroy hook wait until all of it is
//! done. `README.md` beside this file describes the protocol; this file follows
//! it.
//!
//! - Every ready task goes to the queue (an unbounded lock-free injector,
//!   tasks stored by value), or, when a runtime thread makes a continuation
//!   ready, to that thread's next-task slot, run right after its current
//!   task returns: a chain of any length runs in a loop, never nested.
//! - Drainers take tasks from the queue and run them: jobs on the rayon
//!   pool (its threads are the workers) and, when every pool thread is
//!   taken because some are blocked, spare threads. A drainer holds one of
//!   `workers` run permits while it takes tasks ([`Drainers`]).
//! - A runtime thread that blocks in an `Await*` inside a task gives its
//!   permit back and, if tasks are waiting, starts a drainer in its place
//!   ([`Blocked`]). No task ever runs nested on a blocked thread's stack,
//!   so blocking cannot deadlock a program that would finish with
//!   unboundedly many threads, nor grow the stack; threads are capped
//!   (`MLIR_ASYNC_RUNTIME_MAX_THREADS`), and at the cap tasks wait.

mod blocked;
pub(super) mod deques;
pub(super) mod drainers;
mod idle;
mod lookout;
#[cfg(all(test, loom))]
mod loom_slot;
mod slot;
pub(crate) mod spares;
pub(crate) mod wait;

pub(super) use blocked::Blocked;
use idle::IdleSignal;

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_deque::{Injector, Steal, Worker};

use crate::base::task::{Route, Task};
use crate::instance::config::Config;
use crate::instance::threads::deques::{Deques, SlotPatience};
use crate::instance::threads::drainers::{AfterLeave, DrainerKind, Drainers, Snapshot, Start};
use crate::instance::threads::lookout::Lookout;
use crate::instance::threads::slot::Slot;
use crate::instance::threads::spares::{SpareThread, Spares, STACK_SIZE};
use crate::probe::fuzz;
use crate::probe::observe;
use crate::sync::backoff::Backoff;
use crate::sync::misuse::{abort_misuse, warn};
use crate::sync::process::{lock, Mutex};
use crate::sync::tls;
use crate::sync::AtomicBool;

/// How often a thread blocked inside a task checks whether every runtime
/// thread is blocked (see [`Blocked::check_stuck`]).
pub(super) const STUCK_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// How long an idle drainer keeps looking for work before it leaves: a
/// producer often pushes the next task within microseconds, and a drainer
/// that is still there saves starting a new one (a pool job, a wake-up).
/// First busy-wait rounds, then rounds that yield the core.
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
    /// The pool's threads, spawned by us so that shutdown can join them.
    pool_threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
    spares: Arc<Spares>,
    idle: IdleSignal,
    /// Idle drainers looking for work (spinning or yielding), and how many
    /// may at once: half the machine's cores, at least one, at most the
    /// workers. A drainer beyond that leaves at once. On an oversubscribed
    /// machine (more workers than cores) every idle drainer that yields
    /// takes a core from a thread that has work; a drainer that leaves
    /// costs nothing but the start of a new one when work comes (20,000
    /// fine-grained loops, 4 workers on 2 cores: 0.57 s with every idle
    /// drainer spinning, 0.34 s with one; threads/README.md, "How a thread
    /// waits"). A task put in a thread's slot starts a drainer only when
    /// none looks for work (`lookout.rs`).
    lookout: Lookout,
    /// The one-line report of a pool stuck at the cap was printed.
    stuck_reported: AtomicBool,
}

/// A pointer to a scheduler that crosses into its threads.
#[derive(Clone, Copy)]
struct SchedulerRef(*const Scheduler);

// SAFETY: a scheduler is `Sync`; the pointer stays valid for as long as
// any of its threads runs (see `Scheduler::join_threads`).
unsafe impl Send for SchedulerRef {}

impl SchedulerRef {
    /// # Safety
    /// The scheduler has not been shut down.
    unsafe fn get<'a>(self) -> &'a Scheduler {
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

/// True on a thread of a runtime instance, running its tasks.
pub(crate) fn on_runtime_thread() -> bool {
    current().is_some()
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
pub(super) fn forget_thread_context() {
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

/// How many idle drainers may look for work at once (`Scheduler::lookout`).
fn max_spinning(workers: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / 2).clamp(1, workers.max(1))
}

impl Scheduler {
    /// A scheduler with its rayon pool started.
    pub(crate) fn start(config: Config) -> Arc<Scheduler> {
        let pool_threads = Arc::new(Mutex::new(Vec::new()));
        let handles = Arc::clone(&pool_threads);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.workers)
            .spawn_handler(move |thread| {
                let handle = crate::sync::spawn::spawn(
                    std::thread::Builder::new().name(format!("mlir-async-{}", thread.index())).stack_size(STACK_SIZE),
                    move || thread.run(),
                )?;
                lock(&handles).push(handle);
                Ok(())
            })
            .panic_handler(|_| abort_misuse("worker thread", "the runtime panicked"))
            .build()
            .unwrap_or_else(|e| abort_misuse("runtime start", &format!("cannot start the pool: {e}")));
        Arc::new(Scheduler {
            config,
            queue: Injector::new(),
            deques: Deques::new(config.max_threads),
            drainers: Drainers::new(config.workers),
            pool: Mutex::new(Some(pool)),
            pool_threads,
            spares: Spares::new(config.max_spares(), config.spare_keep_alive),
            idle: IdleSignal::new(),
            lookout: Lookout::new(max_spinning(config.workers)),
            stuck_reported: AtomicBool::new(false),
        })
    }

    pub(crate) fn config(&self) -> Config {
        self.config
    }

    fn as_ref(&self) -> SchedulerRef {
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
    pub(super) fn push_local(&self, task: Task) {
        debug_assert!(self.is_current());
        match fuzz::continuation_detour() {
            fuzz::Detour::Pool => return self.push(task),
            fuzz::Detour::PoolThenYield => {
                self.push(task);
                return std::thread::yield_now();
            }
            fuzz::Detour::Usual => {}
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

    /// After a task was put in this thread's slot or deque: starts a
    /// drainer if none looks for work and a permit is free (`lookout.rs`).
    #[inline(always)]
    fn after_local_push(&self) {
        if self.lookout.should_start(&self.drainers) {
            self.start_drainer(self.drainers.try_start());
        }
    }

    /// After a drainer stopped looking for work, or left: starts a drainer
    /// for a task waiting in another thread's slot or deque if no other
    /// drainer looks for work and a permit is free (`lookout.rs`).
    fn after_looking(&self) {
        self.start_drainer(self.lookout.after_looking(&self.drainers, || self.deques.any_local_task()));
    }

    /// The next task for this thread's drainer: its slot's, its deque's
    /// newest, the queue's oldest (one task, never a batch: see below), or
    /// one stolen from another thread's deque (with a batch of that deque's
    /// into this one).
    fn next_task(&self, patience: &mut SlotPatience) -> Option<(Task, Route)> {
        // SAFETY: called by the drain loop, which registered its state.
        let s = unsafe { drainer_state() };
        {
            // SAFETY: this drainer registered its slot first.
            if let Some(task) = unsafe { &*s.slot.get() }.take_own() {
                return Some((task, Route::Slot));
            }
            let deque = s.deque.borrow();
            let deque = deque.as_ref().expect("a drainer registers its deque first");
            if let Some(task) = deque.worker.pop() {
                return Some((task, Route::Queued));
            }
            // One task at a time, the oldest: tasks queued from outside
            // start in the order they were queued (the ABI's invariant 4).
            // A batch moved into this LIFO deque would run newest first,
            // and a task that blocks on an older one still in the deque
            // could then wait forever at the thread cap.
            loop {
                match self.queue.steal() {
                    Steal::Success(task) => return Some((task, Route::Queued)),
                    Steal::Empty => break,
                    Steal::Retry => {}
                }
            }
            if let Some(task) = self.deques.steal(&deque.worker, deque.slot) {
                return Some((task, Route::Queued));
            }
            // Last, a task waiting in another thread's slot, once it has
            // waited there long enough (see `SlotPatience`). Looked at
            // every few idle rounds only: each look pulls the cache line
            // that the slot's owner writes twice a task.
            if !patience.looks_at_slots() {
                return None;
            }
            self.deques.steal_from_slots(deque.slot, patience).ok().map(|task| (task, Route::Queued))
        }
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
    /// drain: a pool thread in the slot of its rayon index, a spare in the
    /// slot of its spare number, after the pool's.
    fn ensure_deque(&self, spare: Option<&SpareThread>) {
        with_state(|s| {
            let mut deque = s.deque.borrow_mut();
            if deque.as_ref().is_some_and(|d| std::ptr::eq(d.owner, self)) {
                return;
            }
            let slot = match spare {
                None => rayon::current_thread_index().expect("a pool job runs on the pool"),
                Some(spare) => self.config.workers + spare.slot(),
            };
            let worker = self.deques.register(slot);
            s.slot.set(self.deques.slot(slot));
            *deque = Some(OwnedDeque { owner: self, slot, worker });
        });
    }

    /// Starts the drainer `start` took a permit for: a job on the pool, or
    /// a spare thread when every pool thread is taken.
    fn start_drainer(&self, start: Start) {
        match start {
            Start::NotNeeded => {}
            Start::PoolJob => {
                let this = self.as_ref();
                let pool = lock(&self.pool);
                let pool = pool.as_ref().expect("the pool lives until its threads are joined");
                // SAFETY: the scheduler outlives its pool's jobs.
                pool.spawn(move || unsafe { this.get() }.run_drainer(None));
            }
            Start::Spare => {
                let this = self.as_ref();
                // SAFETY: the scheduler outlives its spare threads' jobs.
                let job = Box::new(move |spare: &SpareThread| unsafe { this.get() }.run_drainer(Some(spare)));
                match self.spares.run(job) {
                    Ok(started) => {
                        if started {
                            observe::spare_thread_started();
                        }
                    }
                    Err(_) => {
                        // At the cap every thread is busy, and some are
                        // blocked: the queued tasks wait until one of them
                        // goes on and takes a permit back (its drain loop
                        // reacquires one). Trying again now would only
                        // spin.
                        let _ = self.drainers.spare_failed();
                    }
                }
            }
        }
    }

    // ---- the drain loop -----------------------------------------------------

    /// Takes tasks (see [`Scheduler::next_task`]) and runs them until there
    /// are none, holding a permit (taken by whoever started this drainer):
    /// a pool job, or the job of the spare thread `spare`.
    fn run_drainer(&self, spare: Option<&SpareThread>) {
        self.ensure_deque(spare);
        with_state(|s| {
            tls::with(|slots| slots.draining.set((self as *const Scheduler).cast()));
            s.holds_permit.set(true);
        });
        let mut idle = Backoff::new(IDLE_SPINS, IDLE_YIELDS);
        let mut spinning = false;
        let mut patience = SlotPatience::default();
        // Went through the idle path since the last task: the backoff and
        // the patience start over at the next task.
        let mut idled = false;
        loop {
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
                break;
            }
            idled = true;
            // Nothing found on the last look: leave. (Every way out below
            // goes through one last look, which takes a task waiting in
            // another thread's slot however short it waited: a drainer
            // leaves only when no slot holds one.)
            if patience.is_last_look() {
                break;
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
                    continue;
                }
                spinning = true;
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
        }
        if spinning {
            self.lookout.stop_looking();
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

    /// After a drainer left, blocked, or failed to start.
    fn after_leave(&self, after: Snapshot) {
        match self.drainers.after_leave(after, || self.queue.is_empty()) {
            AfterLeave::Start(start) => self.start_drainer(start),
            // No drainer is alive, so no slot or deque holds a task.
            AfterLeave::Idle => self.idle.notify(),
            // A task may wait in another thread's slot or deque, put there
            // after this drainer's last look.
            AfterLeave::Nothing => self.after_looking(),
        }
    }

    // ---- idleness and shutdown ----------------------------------------------

    /// True when no task is queued or running.
    pub(super) fn is_idle(&self) -> bool {
        self.drainers.snapshot().drainers() == 0 && self.queue.is_empty()
    }

    /// Zero exactly when no task is queued or running; else the shared
    /// queue's length plus the drainers, each counted once whatever it runs,
    /// awaits or holds in its slot and deque (docs/introspection-abi.md).
    pub(crate) fn tasks_in_flight(&self) -> usize {
        self.queue.len() + self.drainers.snapshot().drainers()
    }

    /// Blocks until no task is queued or running, or `timeout` passed;
    /// true when idle.
    pub(crate) fn wait_idle(&self, timeout: Option<Duration>) -> bool {
        self.idle.wait(timeout, || self.is_idle())
    }

    /// Waits until no task is queued or running, saying on stderr what it
    /// waits for if that takes long.
    pub(crate) fn drain(&self) {
        if !self.wait_idle(Some(Duration::from_secs(5))) {
            warn(&format!("destroy: waiting for {} task(s) still in flight", self.tasks_in_flight()));
            self.wait_idle(None);
        }
    }

    /// Ends the pool's and the spares' threads and joins them: no thread of
    /// this scheduler runs after this returns. The caller drained the
    /// scheduler and guarantees that nothing queues tasks here any more
    /// (the instance's gate is closed).
    pub(super) fn join_threads(&self) {
        // Dropping the pool lets its threads leave once their queues are
        // empty (they are: idle); joining them means none runs anything
        // after this function returns.
        drop(lock(&self.pool).take());
        let handles = std::mem::take(&mut *lock(&self.pool_threads));
        for handle in handles {
            if handle.join().is_err() {
                abort_misuse("__mlir_execution_engine_destroy", "a worker thread panicked");
            }
        }
        self.spares.shutdown();
    }

    /// Runtime threads alive: the pool's and the spares.
    pub(crate) fn threads(&self) -> usize {
        self.config.workers + self.spares.alive()
    }
}

/// loom models of a spare thread's life against the drainers word, on the
/// real [`Spares`] and [`Drainers`]: a spare start refused at the cap or
/// by the system, and a spare that goes idle or expires while a push is
/// in flight. The model's glue is the scheduler's own: a spare's job
/// drains the model's queue (a `SeqCst` counter, as in `drainers.rs`'s
/// models), then leaves through [`SpareThread::before_leaving`], and a
/// refused start gives the permit back (`Scheduler::start_drainer`).
#[cfg(all(test, loom))]
mod loom_models {
    use std::sync::Arc;

    use loom::sync::atomic::AtomicUsize;
    use loom::thread;

    use super::*;
    use crate::instance::threads::spares::{spawn_thread, SpawnFn};
    use crate::sync::Ordering;
    use crate::sync::thread::JoinHandle;

    struct Model {
        drainers: Drainers,
        queued: AtomicUsize,
        ran: AtomicUsize,
        spares: Arc<Spares>,
    }

    impl Model {
        /// One worker, at most `max_spares` spares.
        fn new(max_spares: usize, keep_alive: Duration, spawn: SpawnFn) -> Arc<Model> {
            Arc::new(Model {
                drainers: Drainers::new(1),
                queued: AtomicUsize::new(0),
                ran: AtomicUsize::new(0),
                spares: Spares::with_spawn(max_spares, keep_alive, spawn),
            })
        }

        fn pop(&self) -> bool {
            self.queued.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
        }

        /// `Scheduler::push`.
        fn push(self: &Arc<Model>) {
            self.queued.fetch_add(1, Ordering::SeqCst);
            self.start(self.drainers.after_push());
        }

        /// `Scheduler::start_drainer` (the pool thread is blocked in these
        /// models, so every start is a spare's).
        fn start(self: &Arc<Model>, start: Start) {
            match start {
                Start::NotNeeded => {}
                Start::PoolJob => unreachable!("the only pool thread is in its job"),
                Start::Spare => {
                    let m = Arc::clone(self);
                    if self.spares.run(Box::new(move |spare: &SpareThread| m.drain_as_spare(spare))).is_err() {
                        let _ = self.drainers.spare_failed();
                    }
                }
            }
        }

        /// `Scheduler::run_drainer` on a spare thread.
        fn drain_as_spare(self: &Arc<Model>, spare: &SpareThread) {
            while self.pop() {
                self.ran.fetch_add(1, Ordering::SeqCst);
            }
            let after = spare.before_leaving(|| self.drainers.leave(DrainerKind::Spare, true));
            if let AfterLeave::Start(start) = self.drainers.after_leave(after, || self.queued.load(Ordering::SeqCst) == 0)
            {
                self.start(start);
            }
        }

        /// The only pool thread takes its permit and blocks inside a task
        /// (on the task that the model's producer pushes).
        fn block_the_pool_thread(&self) {
            assert_eq!(self.drainers.try_start(), Start::PoolJob);
            let _ = self.drainers.block(true);
        }

        /// Ends the spares (each runs the jobs handed to it first) and
        /// checks that every task ran once and the spares left the word.
        fn shut_down_and_check(&self, tasks: usize) {
            self.spares.shutdown();
            assert_eq!(self.spares.alive(), 0, "a spare still counts as alive");
            assert_eq!(self.ran.load(Ordering::SeqCst), tasks, "a task was stranded or ran twice");
            let s = self.drainers.snapshot();
            assert_eq!((s.permits(), s.pool_jobs(), s.spares(), s.blocked()), (0, 1, 0, 1));
        }
    }

    const FOREVER: Duration = Duration::from_secs(3600);

    /// One worker (blocked), one spare with `keep_alive`: the spare runs a
    /// task while another thread pushes the next, and every task runs once.
    fn push_while_the_only_spare_finishes(keep_alive: Duration) {
        loom::model(move || {
            let m = Model::new(1, keep_alive, spawn_thread);
            m.block_the_pool_thread();
            m.push();
            let producer = {
                let m = Arc::clone(&m);
                thread::spawn(move || m.push())
            };
            producer.join().unwrap();
            m.shut_down_and_check(2);
        });
    }

    /// One worker (blocked), one spare: the spare runs a task, and the
    /// task that ends the wait is pushed while that spare goes idle. The
    /// start that push asks for is refused at the cap when the spare is
    /// still counted as alive but not yet idle; the task must run anyway.
    #[test]
    fn a_push_as_the_only_spare_goes_idle_is_run() {
        push_while_the_only_spare_finishes(FOREVER);
    }

    /// The system refuses the first spare thread while another push is in
    /// flight: the refused start gives its permit and its count back. As at
    /// the cap, the queued tasks then wait for the next start or for the
    /// blocked thread to go on, which here drains what is left. (That the
    /// slot comes back too: `spares.rs`'s tests.)
    #[test]
    fn a_spare_start_refused_by_the_system_gives_everything_back() {
        static REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        fn refuse_once(name: String, main: Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>> {
            if !REFUSED.swap(true, std::sync::atomic::Ordering::SeqCst) {
                return Err(std::io::Error::new(std::io::ErrorKind::WouldBlock, "refused by the model"));
            }
            spawn_thread(name, main)
        }
        loom::model(|| {
            REFUSED.store(false, std::sync::atomic::Ordering::SeqCst);
            let m = Model::new(1, FOREVER, refuse_once);
            m.block_the_pool_thread();
            let producer = {
                let m = Arc::clone(&m);
                thread::spawn(move || m.push())
            };
            m.push();
            producer.join().unwrap();
            // The blocked pool thread goes on: with a permit it drains the
            // queue, else (a spare holds it) it leaves.
            let _ = m.drainers.unblock();
            let holds_permit = m.drainers.try_reacquire();
            if holds_permit {
                while m.pop() {
                    m.ran.fetch_add(1, Ordering::SeqCst);
                }
            }
            let after = m.drainers.leave(DrainerKind::PoolJob, holds_permit);
            if let AfterLeave::Start(start) = m.drainers.after_leave(after, || m.queued.load(Ordering::SeqCst) == 0) {
                m.start(start);
            }
            m.spares.shutdown();
            assert_eq!(m.spares.alive(), 0, "the refused start still counts as alive");
            assert_eq!(m.ran.load(Ordering::SeqCst), 2, "a task was stranded or ran twice");
            let s = m.drainers.snapshot();
            assert_eq!((s.permits(), s.drainers(), s.blocked()), (0, 0, 0));
        });
    }

    /// The spare expires at once when idle (keep-alive zero) while a push
    /// is in flight: the push either hands its job to the spare before it
    /// ends, or starts a new spare in the slot the old one gave back (and
    /// joins the old one first); the task runs once either way.
    #[test]
    fn a_spare_expiring_while_a_push_is_in_flight() {
        push_while_the_only_spare_finishes(Duration::ZERO);
    }

    /// A thread waits for idleness (the harness between two runs, the
    /// destroy hook) while the only drainer, out of tasks, goes through its
    /// idle wait and leaves: it leaves at once once it sees the waiter,
    /// else after one more look, as `run_drainer`. On the real
    /// [`IdleSignal`] and [`Drainers`]: the waiter must hear of idleness
    /// whichever comes first, its spin's last look, its re-check under the
    /// signal's lock or its sleep. Without the re-check (mutation 4) loom
    /// finds the notification lost before the sleep: a deadlock.
    #[test]
    fn the_last_drainer_leaving_wakes_the_thread_waiting_for_idleness() {
        loom::model(|| {
            let drainers = Arc::new(Drainers::new(1));
            let idle = Arc::new(IdleSignal::new());
            let queued = Arc::new(AtomicUsize::new(0));
            assert_eq!(drainers.try_start(), Start::PoolJob);
            let drainer = {
                let (drainers, idle, queued) = (Arc::clone(&drainers), Arc::clone(&idle), Arc::clone(&queued));
                thread::spawn(move || {
                    if !idle.has_waiters() {
                        thread::yield_now();
                    }
                    let after = drainers.leave(DrainerKind::PoolJob, true);
                    match drainers.after_leave(after, || queued.load(Ordering::SeqCst) == 0) {
                        AfterLeave::Idle => idle.notify(),
                        other => panic!("the only drainer left an empty queue: {other:?}"),
                    }
                })
            };
            let is_idle = || drainers.snapshot().drainers() == 0 && queued.load(Ordering::SeqCst) == 0;
            assert!(idle.wait(None, is_idle));
            drainer.join().unwrap();
        });
    }
}
