//! A thread start that the system refuses below the runtime's thread cap
//! (`pthread_create` failing with `EAGAIN`: `ulimit -u`, memory, the
//! kernel's thread limit). Before the fix, the refused spare gave its
//! permit back and nothing tried again: every runtime thread blocked in a
//! task, the task that would end their wait queued, and the program hung
//! until an unrelated `Execute` came (8 runs of 8).
//!
//! This test binary defines `pthread_create` itself, so every thread it
//! starts (std's `spawn`, and with it the runtime's) goes through this
//! file: it refuses the next N starts when armed, and otherwise calls the
//! C library's. Only a scenario child arms it, after the runtime's pool is
//! up, so the refused starts are the runtime's spare threads. Each
//! scenario runs in a child process (this test binary again), so a hang
//! is killed and reported instead of stalling the suite.

mod common;

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use common::{execute_and_await, run_child, task, ChildRun, TokenPtr};
use mlir_async_runtime::abi::*;

const SCENARIO_ENV: &str = "MLIR_ASYNC_RUNTIME_TEST_SCENARIO";

/// Thread starts still to refuse.
static REFUSALS_LEFT: AtomicUsize = AtomicUsize::new(0);
/// Thread starts refused so far.
static REFUSED: AtomicUsize = AtomicUsize::new(0);

type PthreadCreate = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    extern "C" fn(*mut c_void) -> *mut c_void,
    *mut c_void,
) -> c_int;

/// Every thread this process starts comes here (the executable's own
/// definition wins over the C library's at link time): refuses with
/// `EAGAIN` while armed, as the system does at its limit, else starts the
/// thread with the C library's `pthread_create`.
///
/// # Safety
/// `pthread_create`'s contract.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
) -> c_int {
    // SeqCst: a counter read by the scenario after the fact; no data rides on it.
    if REFUSALS_LEFT.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
        REFUSED.fetch_add(1, Ordering::SeqCst);
        return libc::EAGAIN;
    }
    // SAFETY: a symbol name, NUL-terminated; the next definition after
    // this executable's is the C library's, of this type.
    let real = unsafe { libc::dlsym(libc::RTLD_NEXT, c"pthread_create".as_ptr()) };
    assert!(!real.is_null(), "no pthread_create after this executable's");
    // SAFETY: as above; the arguments are passed through unchanged.
    unsafe { std::mem::transmute::<*mut c_void, PthreadCreate>(real)(thread, attr, start, arg) }
}

// ---- scenarios (child side) ------------------------------------------------

/// Every worker blocks in a task on a gate token; then `refusals` thread
/// starts are refused, the first of them the spare that the task which
/// opens the gate needs. That task must run anyway, and all must end.
///
/// Where the blocked tasks land is the scheduler's choice: a push while a
/// permit is free may start a spare although an idle pool thread then
/// takes the task, and a blocked task may run on that spare while a pool
/// thread stays free for the opener. Such a round needs no start, so it
/// proves nothing; the scenario runs rounds until one refused a start,
/// each on a fresh instance (spares live until the destroy hook, and an
/// idle one would take the opener).
fn blocked_workers_and_a_refused_spare(refusals: usize) {
    let workers = mlirAsyncRuntimGetNumWorkerThreads() as usize;
    let mut rounds = 0;
    while REFUSED.load(Ordering::SeqCst) == 0 {
        rounds += 1;
        if rounds > 20 {
            eprintln!("scenario: no thread start in 20 rounds");
            std::process::exit(4);
        }
        REFUSALS_LEFT.store(0, Ordering::SeqCst);
        // The pool's threads are up before anything is refused.
        execute_and_await();
        round(workers, refusals);
        __mlir_execution_engine_destroy();
    }
    println!("refused: {} in round {rounds}", REFUSED.load(Ordering::SeqCst));
}

/// One round of [`blocked_workers_and_a_refused_spare`].
fn round(workers: usize, refusals: usize) {
    let gate = TokenPtr::new(mlirAsyncRuntimeCreateToken());
    let (tx, rx) = mpsc::channel();
    for _ in 0..workers {
        // SAFETY: each blocked task owns one reference to the gate.
        unsafe { mlirAsyncRuntimeAddRef(gate.get().cast(), 1) };
        let (tx, (started_tx, started)) = (tx.clone(), mpsc::channel());
        let (h, r) = task(move || unsafe {
            started_tx.send(()).unwrap();
            mlirAsyncRuntimeAwaitToken(gate.get());
            mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
            tx.send(()).unwrap();
        });
        mlirAsyncRuntimeExecute(h, r);
        // One at a time, so that each finds the threads before it taken.
        if started.recv_timeout(Duration::from_secs(15)).is_err() {
            eprintln!("scenario: a blocked task did not start within 15 s");
            std::process::exit(3);
        }
    }
    // Let every worker reach its wait (a waiter spins for microseconds
    // before it blocks and gives its place away; one that is late asks for
    // the spare when it blocks).
    std::thread::sleep(Duration::from_millis(100));
    REFUSALS_LEFT.store(refusals, Ordering::SeqCst);
    // The opener: queued while every runtime thread is blocked, so it
    // needs a new spare.
    // SAFETY: the task owns the producer's reference.
    let (h, r) = task(move || unsafe {
        mlirAsyncRuntimeEmplaceToken(gate.get());
        mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
    });
    mlirAsyncRuntimeExecute(h, r);
    for i in 0..workers {
        if rx.recv_timeout(Duration::from_secs(15)).is_err() {
            eprintln!("scenario: only {i} of {workers} blocked tasks went on within 15 s");
            // SAFETY: ends the process at once: `exit` would run the
            // destroy hook, which waits for the stranded tasks.
            unsafe { libc::_exit(3) };
        }
    }
}

/// The child side: runs the scenario named in the environment, if any.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var(SCENARIO_ENV) else { return };
    match name.as_str() {
        "refused-once" => blocked_workers_and_a_refused_spare(1),
        "refused-thrice" => blocked_workers_and_a_refused_spare(3),
        other => panic!("unknown scenario {other}"),
    }
    std::process::exit(0);
}

// ---- the tests (parent side) ----------------------------------------------

fn scenario(name: &str, workers: &str) -> ChildRun {
    run_child(
        "scenario_child",
        &[
            (SCENARIO_ENV, name),
            ("MLIR_ASYNC_RUNTIME_WORKERS", workers),
            ("MLIR_ASYNC_RUNTIME_MAX_THREADS", "64"),
            // Spare threads stand in for blocked ones only where tasks
            // block their threads: task stacks off (or refused).
            ("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0"),
        ],
        Duration::from_secs(60),
    )
}

/// The runtime's warnings in a child's stderr.
fn warnings(run: &ChildRun) -> Vec<&str> {
    run.stderr.lines().filter(|l| l.starts_with("mlir_async_runtime:")).collect()
}

/// Checks that `refusals` starts were refused, the program ended, and one
/// line said so, naming the system's error and both limits.
fn assert_refused_and_completed(run: &ChildRun, refusals: usize) {
    assert!(run.succeeded(), "{}", run.describe());
    assert!(run.stdout.contains(&format!("refused: {refusals} ")), "the starts refused: {}", run.describe());
    let lines = warnings(run);
    assert_eq!(lines.len(), 1, "one line for the refusals: {}", run.describe());
    for word in ["os error 11", "MLIR_ASYNC_RUNTIME_MAX_THREADS", "ulimit -u"] {
        assert!(lines[0].contains(word), "the line names {word:?}: {}", lines[0]);
    }
}

/// One refused spare start, below the cap, while every worker is blocked
/// on the task it was for: the start is tried again and the program ends.
#[test]
fn a_spare_start_refused_by_the_system_is_retried() {
    for workers in ["1", "2", "3"] {
        let run = scenario("refused-once", workers);
        assert_refused_and_completed(&run, 1);
        println!("{workers} worker(s): {}", run.stdout.lines().find(|l| l.contains("refused:")).unwrap_or(""));
    }
}

/// Three refusals in a row (the retries refused too): still one line, and
/// the program still ends once the system lets a thread start.
#[test]
fn repeated_refusals_are_reported_once() {
    let run = scenario("refused-thrice", "1");
    assert_refused_and_completed(&run, 3);
}
