//! The switch and the hooks of observability: the task trace
//! ([`crate::probe::trace`], `MLIR_ASYNC_RUNTIME_TRACE=<file>`) and the counters
//! ([`crate::probe::counters`], `MLIR_ASYNC_RUNTIME_STATS=1`).
//!
//! Both variables are read once per process, at the first hook, into one
//! byte ([`MODE`]). With both unset every hook costs one relaxed load of that
//! byte and a branch; the recording code is out of line (`#[cold]`).
//!
//! The results are written when the runtime is destroyed (after its workers
//! were joined, so every worker's record is complete), and at process exit
//! if a runtime was started and not destroyed since. Both are cumulative
//! since the process started: a process that creates and destroys several
//! runtimes rewrites the whole trace file at each destroy, with the events
//! of all of them, and prints the counters of all of them so far.

// Under loom every hook is off, so the switch itself goes unused.
#![cfg_attr(loom, allow(dead_code))]

use std::cell::Cell;

use crate::base::kind::Kind;
use crate::base::task::{Origin, Route, Task};
use crate::probe::clock;
use crate::probe::counters;
use crate::probe::trace;
use crate::sync::process::{AtomicBool, AtomicU8, OnceLock, Ordering};

/// Environment variable naming the trace file (Chrome Trace Event JSON).
pub const TRACE_ENV: &str = "MLIR_ASYNC_RUNTIME_TRACE";
/// Environment variable that prints the counters at destroy (`1`).
pub const STATS_ENV: &str = "MLIR_ASYNC_RUNTIME_STATS";

/// Bit set once the environment was read.
const KNOWN: u8 = 0b100;
/// Bit: the trace is on.
pub(super) const TRACE: u8 = 0b001;
/// Bit: the counters are on.
pub(super) const STATS: u8 = 0b010;
/// Both off: the value every hook compares against first.
const OFF: u8 = KNOWN;

static MODE: AtomicU8 = AtomicU8::new(0);
static TRACE_PATH: OnceLock<std::path::PathBuf> = OnceLock::new();
/// True while a runtime ran since the last write; the exit handler writes
/// only then.
static UNWRITTEN: AtomicBool = AtomicBool::new(false);

/// The mode bits (`TRACE`, `STATS`); 0 when both are off.
#[cfg(not(loom))]
#[inline(always)]
fn mode() -> u8 {
    // Relaxed: the byte guards no other memory; every thread that reads
    // the environment decides the same way.
    match MODE.load(Ordering::Relaxed) {
        OFF => 0,
        0 => init(),
        known => known & (TRACE | STATS),
    }
}

/// The loom models check the state machines, not the recording.
#[cfg(loom)]
#[inline(always)]
fn mode() -> u8 {
    0
}

#[cold]
#[inline(never)]
fn init() -> u8 {
    let mut bits = KNOWN;
    if let Some(path) = std::env::var_os(TRACE_ENV).filter(|p| !p.is_empty()) {
        let _ = TRACE_PATH.set(path.into());
        bits |= TRACE;
    }
    match std::env::var(STATS_ENV).as_deref().map(str::trim) {
        Err(_) | Ok("" | "0" | "off") => {}
        Ok(_) => bits |= STATS,
    }
    clock::start();
    // The first thread to decide wins; the others read the same environment.
    if MODE
        .compare_exchange(0, bits, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
        && bits != OFF
    {
        // SAFETY: registers a plain function with no captured state.
        unsafe { libc::atexit(at_exit) };
    }
    MODE.load(Ordering::Relaxed) & (TRACE | STATS)
}

/// Nanoseconds since the first hook of the process, or logical time
/// under a deterministic schedule ([`clock`]).
pub(super) fn now_ns() -> u64 {
    clock::now_ns()
}

/// Runs `task`, recording it when observation is on.
#[inline(always)]
pub(crate) fn run_task(task: Task, route: Route) {
    let bits = mode();
    if bits == 0 {
        task.run();
    } else {
        run_recorded(bits, task, route);
    }
}

#[cold]
#[inline(never)]
fn run_recorded(bits: u8, task: Task, route: Route) {
    let origin = task.origin();
    let running = Running {
        start: if bits & TRACE != 0 { now_ns() } else { 0 },
        origin,
        route,
        switched_out: Cell::new(false),
    };
    let outer = set_running(&running);
    task.run();
    // A task that switched out was recorded up to its switch, on the
    // thread it left, and its resumption is a task of its own (origin
    // `resume`): this frame may now run on another thread, whose record of
    // the running task it must leave alone.
    if running.switched_out.get() {
        return;
    }
    set_running(outer);
    if bits & TRACE != 0 {
        trace::task(running.start, now_ns(), origin, route);
    }
    if bits & STATS != 0 {
        counters::task_ran(origin, route);
    }
}

/// A task being run and recorded, on the stack of [`run_recorded`]'s frame
/// (a task stack, for a task that may switch out).
struct Running {
    start: u64,
    origin: Origin,
    route: Route,
    switched_out: Cell<bool>,
}

thread_local! {
    /// The task this thread runs and records now, if any.
    static RUNNING: Cell<*const Running> = const { Cell::new(std::ptr::null()) };
}

/// Makes `running` this thread's running task; returns the one before.
/// `#[inline(never)]`: it runs after a switch, and must read this thread's
/// slot, not the one of the thread the frame started on.
#[inline(never)]
fn set_running(running: *const Running) -> *const Running {
    RUNNING.try_with(|slot| slot.replace(running)).unwrap_or(std::ptr::null())
}

/// This thread's kernel id (`gettid`): a fresh system call, which no
/// compiler can keep across a switch.
#[inline(never)]
fn thread_id() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

/// The running task switched out of this thread in a blocking wait: its
/// run so far is recorded here, and the thread runs no task now.
#[inline(never)]
pub(crate) fn task_switched_out() {
    let bits = mode();
    if bits == 0 {
        return;
    }
    let running = set_running(std::ptr::null());
    // SAFETY: the running task's record lives in its `run_recorded` frame,
    // which is below this call on the same stack.
    if let Some(running) = unsafe { running.as_ref() } {
        running.switched_out.set(true);
        if bits & TRACE != 0 {
            trace::task(running.start, now_ns(), running.origin, running.route);
        }
        if bits & STATS != 0 {
            counters::task_ran(running.origin, running.route);
        }
    }
    if bits & STATS != 0 {
        counters::task_switched_out();
    }
}

/// A task that switched out was resumed on this thread, after it left the
/// thread `left` ([`switch_thread`]'s value then).
#[inline(never)]
pub(crate) fn task_switched_in(left: u64) {
    if mode() & STATS != 0 && left != thread_id() {
        counters::task_migrated();
    }
}

/// The thread a task switches out of, to pass to [`task_switched_in`]
/// (0 when observation is off).
#[inline(never)]
pub(crate) fn switch_thread() -> u64 {
    if mode() == 0 {
        0
    } else {
        thread_id()
    }
}

/// A task stack was taken; `in_use` are taken now.
#[inline(always)]
pub(crate) fn task_stack_taken(in_use: impl FnOnce() -> usize) {
    if mode() & STATS != 0 {
        counters::task_stacks_in_use(in_use());
    }
}

/// The kernel refused a task stack.
#[cold]
pub(crate) fn task_stack_refused() {
    if mode() & STATS != 0 {
        counters::task_stack_refused();
    }
}

/// A task was queued; `queued` tasks wait in the queue now.
#[inline(always)]
pub(crate) fn task_queued(queued: impl FnOnce() -> usize) {
    if mode() & STATS != 0 {
        counters::queued(queued());
    }
}

/// An object of `kind` was created; `live` counts the objects alive now.
#[inline(always)]
pub(crate) fn object_created(kind: Kind, live: impl FnOnce() -> i64) {
    if mode() & STATS != 0 {
        counters::object_created(kind, live());
    }
}

/// A spare thread started, to take the place of a blocked one.
#[inline(always)]
pub(crate) fn spare_thread_started() {
    if mode() & STATS != 0 {
        counters::spare_thread_started();
    }
}

/// An outside thread's push woke nobody: the watch covered it.
#[inline(always)]
pub(crate) fn watch_covered() {
    if mode() & STATS != 0 {
        counters::watch_covered();
    }
}

/// The watch started a drainer for a task that its owner left in its entry.
#[cold]
pub(crate) fn watch_started() {
    if mode() & STATS != 0 {
        counters::watch_started();
    }
}

/// The start of a blocking wait, to pass to [`wait_ended`]; `None` when
/// observation is off.
#[inline(always)]
pub(crate) fn wait_started() -> Option<u64> {
    match mode() {
        0 => None,
        bits => Some(if bits & TRACE != 0 { now_ns() } else { 0 }),
    }
}

/// A blocking wait that began at `start` (from [`wait_started`]) ended;
/// `in_task` when a runtime thread waited inside a task.
#[cold]
pub(crate) fn wait_ended(start: u64, in_task: bool) {
    let bits = mode();
    if bits & TRACE != 0 {
        trace::wait(start, now_ns());
    }
    if bits & STATS != 0 {
        counters::blocking_wait(in_task);
    }
}

/// A runtime instance started.
pub(crate) fn instance_started() {
    if mode() != 0 {
        UNWRITTEN.store(true, Ordering::Relaxed);
    }
}

/// Writes the trace and prints the counters. Called by destroy once the
/// workers were joined.
pub(crate) fn write_results() {
    let bits = mode();
    if bits == 0 {
        return;
    }
    UNWRITTEN.store(false, Ordering::Relaxed);
    if let (true, Some(path)) = (bits & TRACE != 0, TRACE_PATH.get()) {
        trace::write_file(path);
    }
    if bits & STATS != 0 {
        counters::print_table();
    }
}

/// Before `fork`: finishes reading the environment (a child must not find
/// that one-time read in progress on a thread that does not exist there).
pub(crate) fn prepare_for_fork() {
    let _ = mode();
    clock::start();
}

/// At exit, what destroy did not write. After `exit` from inside a task
/// the instance's teardown is skipped (`instance::in_task`, a layer above:
/// this one cannot ask it), so this writes while the other tasks still
/// run: the trace as far as each thread published it (its writer reads
/// only published events, under the registry's lock), and the counters
/// so far.
extern "C" fn at_exit() {
    // Relaxed: the exit handler runs on the exiting thread, after the
    // writes it would repeat (destroy) on any thread that joined it.
    if UNWRITTEN.load(Ordering::Relaxed) {
        write_results();
    }
}
