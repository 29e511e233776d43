//! The switch and the hooks of observability: the task trace
//! ([`crate::trace`], `MLIR_ASYNC_RUNTIME_TRACE=<file>`) and the counters
//! ([`crate::counters`], `MLIR_ASYNC_RUNTIME_STATS=1`).
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

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use crate::counters;
use crate::object::Kind;
use crate::scheduler::Task;
use crate::trace;

/// Environment variable naming the trace file (Chrome Trace Event JSON).
pub const TRACE_ENV: &str = "MLIR_ASYNC_RUNTIME_TRACE";
/// Environment variable that prints the counters at destroy (`1`).
pub const STATS_ENV: &str = "MLIR_ASYNC_RUNTIME_STATS";

/// Bit set once the environment was read.
const KNOWN: u8 = 0b100;
/// Bit: the trace is on.
pub(crate) const TRACE: u8 = 0b001;
/// Bit: the counters are on.
pub(crate) const STATS: u8 = 0b010;
/// Both off: the value every hook compares against first.
const OFF: u8 = KNOWN;

static MODE: AtomicU8 = AtomicU8::new(0);
static TRACE_PATH: OnceLock<std::path::PathBuf> = OnceLock::new();
/// The origin of trace timestamps.
static EPOCH: OnceLock<Instant> = OnceLock::new();
/// True while a runtime ran since the last write; the exit handler writes
/// only then.
static UNWRITTEN: AtomicBool = AtomicBool::new(false);

/// What made a task ready to run: the trace's `origin` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Origin {
    /// `mlirAsyncRuntimeExecute`.
    Execute,
    /// A continuation after a token completed.
    AfterToken,
    /// A continuation after a value completed.
    AfterValue,
    /// A continuation after a group completed.
    AfterGroup,
}

impl Origin {
    pub fn name(self) -> &'static str {
        match self {
            Origin::Execute => "execute",
            Origin::AfterToken => "after-token",
            Origin::AfterValue => "after-value",
            Origin::AfterGroup => "after-group",
        }
    }

    pub(crate) fn from_u8(bits: u8) -> Origin {
        match bits {
            1 => Origin::AfterToken,
            2 => Origin::AfterValue,
            3 => Origin::AfterGroup,
            _ => Origin::Execute,
        }
    }
}

/// How a task reached the thread that ran it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Route {
    /// Taken from the pool's queues (injected, own deque, or stolen).
    Queued,
    /// From the worker's next-task slot, right after the task before it.
    Slot,
    /// At once, nested in the completing call (schedule fuzzing only).
    Nested,
}

impl Route {
    pub fn name(self) -> &'static str {
        match self {
            Route::Queued => "queued",
            Route::Slot => "slot",
            Route::Nested => "nested",
        }
    }

    pub(crate) fn from_u8(bits: u8) -> Route {
        match bits {
            1 => Route::Slot,
            2 => Route::Nested,
            _ => Route::Queued,
        }
    }
}

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
    EPOCH.get_or_init(Instant::now);
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

/// Nanoseconds since the first hook of the process.
pub(crate) fn now_ns() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

pub(crate) fn trace_path() -> Option<&'static std::path::Path> {
    TRACE_PATH.get().map(|p| p.as_path())
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
    let start = if bits & TRACE != 0 { now_ns() } else { 0 };
    task.run();
    if bits & TRACE != 0 {
        trace::task(start, now_ns(), task.origin(), route);
    }
    if bits & STATS != 0 {
        counters::task_ran(task.origin(), route);
    }
}

/// A task was queued; `in_flight` counts it.
#[inline(always)]
pub(crate) fn task_queued(in_flight: usize) {
    if mode() & STATS != 0 {
        counters::queued(in_flight);
    }
}

/// An object of `kind` was created.
#[inline(always)]
pub(crate) fn object_created(kind: Kind) {
    if mode() & STATS != 0 {
        counters::object_created(kind);
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

/// A blocking wait that began at `start` (from [`wait_started`]) ended.
#[cold]
pub(crate) fn wait_ended(start: u64, on_worker: bool) {
    let bits = mode();
    if bits & TRACE != 0 && !on_worker {
        trace::wait(start, now_ns());
    }
    if bits & STATS != 0 {
        counters::blocking_wait();
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
    if bits & TRACE != 0 {
        trace::write_file();
    }
    if bits & STATS != 0 {
        counters::print_table();
    }
}

extern "C" fn at_exit() {
    // Relaxed: the exit handler runs on the exiting thread, after the
    // writes it would repeat (destroy) on any thread that joined it.
    if UNWRITTEN.load(Ordering::Relaxed) {
        write_results();
    }
}
