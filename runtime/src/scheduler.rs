//! The runtime instance: a rayon pool that runs every task, and teardown.
//!
//! One instance exists at a time. It is created lazily by the first call
//! that needs it, and torn down by [`destroy`] (the runners' destroy hook),
//! after which the next call creates a fresh one.
//!
//! Every task (an `Execute` call, or a continuation fired by a completion)
//! is counted in [`IN_FLIGHT`] from the moment it is queued until its
//! `resume` returns. Teardown waits for that count to reach zero, then drops
//! the pool and joins every worker thread, so no worker can
//! run JIT-compiled code after the destroy hook returns (upstream's bug: a
//! pool that the runtime neither owned nor drained).
//!
//! Workers spawn onto their own local deque (`rayon::spawn` from inside the
//! pool); other threads inject through the instance's pool handle.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use once_cell::sync::Lazy;

use crate::fuzz;
use crate::misuse::abort_misuse;
use crate::observe::{self, Origin, Route};
use crate::stats;

/// Environment variable that sets the number of worker threads.
pub const WORKERS_ENV: &str = "MLIR_ASYNC_RUNTIME_WORKERS";

/// A coroutine to resume: `resume(handle)`.
#[derive(Clone, Copy, Debug)]
pub struct Task {
    handle: *mut c_void,
    resume: unsafe extern "C" fn(*mut c_void),
    /// What made the task ready (the trace and the counters show it).
    origin: Origin,
}

// SAFETY: a coroutine handle may be resumed on any thread; that is the
// contract of `mlirAsyncRuntimeExecute`.
unsafe impl Send for Task {}

impl Task {
    /// A task from the ABI's `(handle, resume)` pair; aborts on a null
    /// resume function.
    pub fn new(
        handle: *mut c_void,
        resume: Option<unsafe extern "C" fn(*mut c_void)>,
        call: &str,
    ) -> Task {
        match resume {
            Some(resume) => Task { handle, resume, origin: Origin::Execute },
            None => abort_misuse(call, "null resume function"),
        }
    }

    /// The same task, made ready by `origin`.
    pub fn with_origin(self, origin: Origin) -> Task {
        Task { origin, ..self }
    }

    pub fn origin(self) -> Origin {
        self.origin
    }

    pub(crate) fn run(self) {
        // SAFETY: the compiled code handed us a valid coroutine handle and
        // its resume function; resuming it exactly once is the contract.
        unsafe { (self.resume)(self.handle) }
    }
}

thread_local! {
    /// True on the worker threads of the current instance's pool.
    static ON_WORKER: Cell<bool> = const { Cell::new(false) };
    /// A worker's next task: a continuation made ready by the task running
    /// on this worker, run as soon as that task returns (see
    /// [`spawn_continuation`]).
    static NEXT_TASK: Cell<Option<Task>> = const { Cell::new(None) };
}

/// Tasks queued or running.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Threads blocked in [`wait_idle`]; a task that brings `IN_FLIGHT` to zero
/// only takes the idle lock when this is non-zero.
static IDLE_WAITERS: AtomicUsize = AtomicUsize::new(0);
static IDLE_LOCK: Mutex<()> = Mutex::new(());
static IDLE_CV: Condvar = Condvar::new();

struct Instance {
    pool: rayon::ThreadPool,
    /// The pool's threads, spawned by us so that teardown can join them.
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

/// The singleton: holds the current instance, if any. Callers use the
/// instance under the read lock; teardown takes the write lock.
static RUNTIME: Lazy<RwLock<Option<Instance>>> = Lazy::new(|| RwLock::new(None));

fn configured_workers() -> usize {
    let default = std::thread::available_parallelism().map_or(1, |n| n.get());
    match std::env::var(WORKERS_ENV) {
        Err(_) => default,
        Ok(text) => match text.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!(
                    "mlir_async_runtime: ignoring {WORKERS_ENV}={text:?}: \
                     expected a positive integer; using {default} workers"
                );
                default
            }
        },
    }
}

impl Instance {
    fn start() -> Instance {
        let workers = Arc::new(Mutex::new(Vec::new()));
        let handles = Arc::clone(&workers);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(configured_workers())
            .spawn_handler(move |thread| {
                let mut builder = std::thread::Builder::new()
                    .name(format!("mlir-async-{}", thread.index()));
                // Compiled code may nest deeply within one task; match the
                // main thread's usual 8 MiB (reserved, not committed).
                builder = builder.stack_size(8 << 20);
                let handle = builder.spawn(move || {
                    ON_WORKER.with(|w| w.set(true));
                    thread.run();
                })?;
                lock(&handles).push(handle);
                Ok(())
            })
            .panic_handler(|_| abort_misuse("worker thread", "a task panicked"))
            .build()
            .unwrap_or_else(|e| abort_misuse("runtime start", &format!("cannot start pool: {e}")));
        observe::instance_started();
        crate::exit::instance_started();
        Instance { pool, workers }
    }
}

/// Locks `mutex`, ignoring poisoning (nothing here panics while holding it).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on the current instance, created on first use.
fn with_instance<R>(f: impl FnOnce(&Instance) -> R) -> R {
    {
        let guard = RUNTIME.read().unwrap_or_else(|e| e.into_inner());
        if let Some(instance) = guard.as_ref() {
            return f(instance);
        }
    }
    let mut slot = RUNTIME.write().unwrap_or_else(|e| e.into_inner());
    f(slot.get_or_insert_with(Instance::start))
}

/// True on a worker thread of the pool.
pub fn on_worker_thread() -> bool {
    ON_WORKER.with(|w| w.get())
}

/// Queues `task` on the pool (`mlirAsyncRuntimeExecute`): it may run on any
/// worker, in parallel with the caller.
#[cfg(not(loom))]
pub fn spawn(task: Task) {
    // Relaxed: the matching decrement runs after the task starts, which
    // the pool's queue orders after this increment.
    let queued = IN_FLIGHT.fetch_add(1, Ordering::Relaxed) + 1;
    observe::task_queued(queued);
    if on_worker_thread() {
        // From inside the pool: push onto this worker's own deque.
        rayon::spawn(move || run_tasks(task));
    } else {
        with_instance(|instance| instance.pool.spawn(move || run_tasks(task)));
    }
}

/// Under loom, a task runs at once on the calling thread: the models check
/// the objects' state machines, which hand tasks over here, not the pool.
#[cfg(loom)]
pub fn spawn(task: Task) {
    task.run();
}

/// Schedules a continuation that a completion just made ready.
///
/// On a worker, the first one goes to the worker's next-task slot and runs
/// right after the current task returns, in the loop of [`run_tasks`]: not
/// nested in the completing call, so a chain of any length runs at constant
/// stack depth, and without a trip through the deque or waking another
/// worker (a dependency chain is sequential anyway). If the slot is taken,
/// the older task goes to the deque where other workers can steal it.
///
/// A task in the slot cannot be stolen until the current task returns.
/// That delays nothing in compiled code: a task completes its token or
/// value as its last step (`async.yield`), and a task that blocks in an
/// `Await*` first moves the slot's task to the deque
/// ([`release_next_task`]).
pub fn spawn_continuation(task: Task) {
    match fuzz::continuation_route() {
        fuzz::Route::Pool => return spawn(task),
        // Only on a worker: tasks never run on the caller's thread.
        fuzz::Route::Inline if on_worker_thread() => {
            return fuzz::run_inline(|| observe::run_task(task, Route::Nested))
        }
        _ => {}
    }
    if !on_worker_thread() {
        spawn(task);
        return;
    }
    let queued = IN_FLIGHT.fetch_add(1, Ordering::Relaxed) + 1;
    observe::task_queued(queued);
    if let Some(older) = NEXT_TASK.with(|slot| slot.replace(Some(task))) {
        rayon::spawn(move || run_tasks(older));
    }
}

/// Moves a task waiting in this worker's slot to the deque, where other
/// workers can take it. Called before a worker blocks: the task in the
/// slot may be the one that will end the wait.
pub(crate) fn release_next_task() {
    if let Some(task) = NEXT_TASK.with(Cell::take) {
        rayon::spawn(move || run_tasks(task));
    }
}

/// Runs `task`, then whatever continuation it left in this worker's slot,
/// and so on: a loop, never a recursion.
fn run_tasks(task: Task) {
    let mut next = Some(task);
    let mut route = Route::Queued;
    while let Some(task) = next {
        fuzz::before_task();
        observe::run_task(task, route);
        task_finished();
        next = NEXT_TASK.with(Cell::take);
        route = Route::Slot;
    }
}

fn task_finished() {
    // SeqCst here and on both counters in `wait_idle`: either the waiter
    // sees the count at zero, or this thread sees the waiter and notifies
    // it under the lock (no lost wake-up).
    if IN_FLIGHT.fetch_sub(1, Ordering::SeqCst) == 1
        && IDLE_WAITERS.load(Ordering::SeqCst) > 0
    {
        let _guard = lock(&IDLE_LOCK);
        IDLE_CV.notify_all();
    }
}

/// Runs one queued task on this worker, if there is one (used by blocking
/// waits on workers, so they keep the pool moving).
pub(crate) fn run_one_pending_task() -> bool {
    matches!(rayon::yield_now(), Some(rayon::Yield::Executed))
}

/// Tasks queued or running now.
pub fn tasks_in_flight() -> usize {
    IN_FLIGHT.load(Ordering::SeqCst)
}

/// Blocks until no task is in flight or `timeout` passed; true when idle.
/// Never creates the runtime.
pub fn wait_idle(timeout: Option<Duration>) -> bool {
    let deadline = timeout.map(|t| Instant::now() + t);
    IDLE_WAITERS.fetch_add(1, Ordering::SeqCst);
    let mut guard = lock(&IDLE_LOCK);
    let idle = loop {
        if IN_FLIGHT.load(Ordering::SeqCst) == 0 {
            break true;
        }
        let wait = match deadline {
            None => Duration::from_secs(1),
            Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left,
                _ => break false,
            },
        };
        guard = IDLE_CV
            .wait_timeout(guard, wait)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    };
    drop(guard);
    IDLE_WAITERS.fetch_sub(1, Ordering::SeqCst);
    idle
}

/// Number of worker threads, starting the runtime if needed.
pub fn num_workers() -> usize {
    if on_worker_thread() {
        // Never touch the singleton's lock from a worker: teardown holds it
        // while it waits for the workers' tasks.
        return rayon::current_num_threads();
    }
    with_instance(|instance| instance.pool.current_num_threads())
}

/// The teardown at process exit without the destroy hook
/// ([`crate::exit`]): [`destroy`] when an instance is running, except on a
/// worker (a task that calls `exit` can never finish, so draining would
/// hang).
pub(crate) fn teardown_at_exit() {
    let running = RUNTIME.read().map_or(true, |slot| slot.is_some());
    if running && !on_worker_thread() {
        destroy();
    }
}

/// Tears the current instance down, if there is one: waits for every task
/// queued or running, drops the pool, waits until its threads have exited,
/// and reports objects still alive on stderr. Must not run on a worker.
#[cfg_attr(feature = "mutation-destroy-no-drain", allow(unreachable_code))]
pub fn destroy() {
    if on_worker_thread() {
        abort_misuse("__mlir_execution_engine_destroy", "called from a worker thread");
    }
    // Holding the write lock keeps other threads from starting a new
    // instance while this one drains; workers never take this lock.
    let mut slot = RUNTIME.write().unwrap_or_else(|e| e.into_inner());
    let Some(instance) = slot.take() else {
        drop(slot);
        observe::write_results();
        return;
    };
    #[cfg(feature = "mutation-destroy-no-drain")]
    {
        // Mutation 1 (test-only): upstream's unowned pool. Return without
        // waiting for the tasks in flight or the workers running them.
        drop((instance, slot));
        return;
    }
    if !wait_idle(Some(Duration::from_secs(5))) {
        eprintln!(
            "mlir_async_runtime: destroy: waiting for {} task(s) still in flight",
            tasks_in_flight()
        );
        wait_idle(None);
    }
    // Dropping the pool lets its threads leave their loop once their
    // queues are empty; joining them means none of them runs anything after
    // this function returns.
    drop(instance.pool);
    let handles = std::mem::take(&mut *lock(&instance.workers));
    for handle in handles {
        if handle.join().is_err() {
            abort_misuse("__mlir_execution_engine_destroy", "a worker thread panicked");
        }
    }
    drop(slot);
    // Every worker has exited: their trace buffers and counters are final.
    observe::write_results();
    stats::report_live_objects("destroy");
}
