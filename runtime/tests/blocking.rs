//! Blocking awaits inside tasks, destroy racing with other threads, fork,
//! and the runtime's limits: each scenario runs in a child process (this
//! test binary again, the scenario named in an environment variable), so a
//! hang is killed and reported instead of stalling the suite, a crash is
//! seen as a signal, and each child reads its own worker count.
//!
//! These are regression tests: each one hung, crashed or printed the wrong
//! thing on an earlier version of this runtime.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{execute_and_await, run_child, task, wait_child, ChildRun, GatedTasks, TokenPtr};
use mlir_async_runtime::abi::*;

const SCENARIO_ENV: &str = "MLIR_ASYNC_RUNTIME_TEST_SCENARIO";

/// A child's exit code when a scenario detects a hang itself.
const HUNG: i32 = 3;

fn recv_or_exit(rx: &mpsc::Receiver<()>, what: &str, limit: Duration) {
    if rx.recv_timeout(limit).is_err() {
        eprintln!("scenario: {what} did not happen within {limit:?}");
        std::process::exit(HUNG);
    }
}

/// Threads of this process now.
fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// Samples the thread count every millisecond until `stop`; returns the
/// peak.
fn sample_peak_threads(stop: Arc<AtomicBool>) -> thread::JoinHandle<usize> {
    thread::spawn(move || {
        let mut peak = 0;
        while !stop.load(Ordering::Relaxed) {
            peak = peak.max(thread_count());
            thread::sleep(Duration::from_millis(1));
        }
        peak
    })
}

// ---- scenarios (child side) ------------------------------------------------

/// Task A blocks on T1 (completed later by the test thread); task B,
/// queued after A, blocks on A's token. Neither may run nested in the
/// other's wait.
fn blocked_chain() {
    for round in 0..20 {
        let t1 = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let ta = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let (tx, rx) = mpsc::channel();
        // SAFETY: each task gets its own consumer reference.
        unsafe {
            mlirAsyncRuntimeAddRef(t1.get().cast(), 1);
            mlirAsyncRuntimeAddRef(ta.get().cast(), 1);
        }
        let (h, r) = task(move || unsafe {
            mlirAsyncRuntimeAwaitToken(t1.get());
            mlirAsyncRuntimeDropRef(t1.get().cast(), 1);
            mlirAsyncRuntimeEmplaceToken(ta.get());
        });
        mlirAsyncRuntimeExecute(h, r);
        let (h, r) = task(move || unsafe {
            mlirAsyncRuntimeAwaitToken(ta.get());
            mlirAsyncRuntimeDropRef(ta.get().cast(), 1);
            tx.send(()).unwrap();
        });
        mlirAsyncRuntimeExecute(h, r);
        // Let both tasks reach their waits.
        thread::sleep(Duration::from_millis(if round < 3 { 50 } else { 2 }));
        // SAFETY: the producer's reference of T1, then ours of both.
        unsafe {
            mlirAsyncRuntimeEmplaceToken(t1.get());
            mlirAsyncRuntimeDropRef(t1.get().cast(), 1);
            mlirAsyncRuntimeDropRef(ta.get().cast(), 1);
        }
        recv_or_exit(&rx, &format!("round {round}: task B"), Duration::from_secs(20));
    }
    __mlir_execution_engine_destroy();
}

/// `n` tasks each count themselves as started, then block on one gate
/// token, which the test thread opens only once every task has started:
/// all `n` are blocked at once. Prints the peak thread count.
fn all_started_then_opened(n: usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_peak_threads(Arc::clone(&stop));
    let tasks = GatedTasks::start(n);
    if let Err(started) = tasks.wait_all_started(Duration::from_secs(60)) {
        eprintln!("scenario: only {started} of {n} tasks started");
        std::process::exit(HUNG);
    }
    tasks.open();
    if !tasks.wait_all_finished(Duration::from_secs(60)) {
        eprintln!("scenario: the last of {n} gated tasks did not finish within 60 s");
        std::process::exit(HUNG);
    }
    __mlir_execution_engine_destroy();
    stop.store(true, Ordering::Relaxed);
    println!("peak threads: {}", sampler.join().unwrap());
}

/// `n` tasks each block on one gate token, opened by the test thread once
/// all are queued. Prints the peak thread count.
fn many_blocked_on_a_gate(n: usize) {
    blocked_on_a_gate(n, Duration::from_millis(100));
}

/// [`many_blocked_on_a_gate`], the gate opened after `open_after`.
fn blocked_on_a_gate(n: usize, open_after: Duration) {
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_peak_threads(Arc::clone(&stop));
    let gate = TokenPtr::new(mlirAsyncRuntimeCreateToken());
    let done = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    for _ in 0..n {
        // SAFETY: each task owns one reference to the gate.
        unsafe { mlirAsyncRuntimeAddRef(gate.get().cast(), 1) };
        let (done, tx) = (Arc::clone(&done), tx.clone());
        let (h, r) = task(move || unsafe {
            mlirAsyncRuntimeAwaitToken(gate.get());
            mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
            if done.fetch_add(1, Ordering::SeqCst) + 1 == n {
                tx.send(()).unwrap();
            }
        });
        mlirAsyncRuntimeExecute(h, r);
    }
    thread::sleep(open_after);
    // SAFETY: the producer's reference, then ours.
    unsafe {
        mlirAsyncRuntimeEmplaceToken(gate.get());
        mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
    }
    recv_or_exit(&rx, &format!("the last of {n} gated tasks"), Duration::from_secs(60));
    __mlir_execution_engine_destroy();
    stop.store(true, Ordering::Relaxed);
    println!("peak threads: {}", sampler.join().unwrap());
}

/// A task announces that it is about to block on a token, and the test
/// thread completes the token at once: many of the completions land while
/// the task is still switching out (the hand-off's second case, where the
/// drainer resumes the task itself), for `rounds` rounds.
fn completed_while_switching_out(rounds: usize) {
    for _ in 0..rounds {
        let t = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let about_to_wait = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        // SAFETY: the task owns one consumer reference.
        unsafe { mlirAsyncRuntimeAddRef(t.get().cast(), 1) };
        let flag = Arc::clone(&about_to_wait);
        let (h, r) = task(move || unsafe {
            flag.store(true, Ordering::SeqCst);
            mlirAsyncRuntimeAwaitToken(t.get());
            mlirAsyncRuntimeDropRef(t.get().cast(), 1);
            tx.send(()).unwrap();
        });
        mlirAsyncRuntimeExecute(h, r);
        while !about_to_wait.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        // SAFETY: the producer's reference, then ours.
        unsafe {
            mlirAsyncRuntimeEmplaceToken(t.get());
            mlirAsyncRuntimeDropRef(t.get().cast(), 1);
        }
        recv_or_exit(&rx, "the task that blocked", Duration::from_secs(30));
    }
    __mlir_execution_engine_destroy();
}

/// Recurses with a page of stack per frame until the stack runs out.
#[inline(never)]
fn recurse(depth: usize) -> usize {
    let frame = std::hint::black_box([depth as u8; 4096]);
    if depth == usize::MAX {
        return 0;
    }
    recurse(depth + 1) + frame[depth % 4096] as usize
}

/// A task that overflows its stack.
fn task_overflows_its_stack() {
    let (h, r) = task(|| {
        std::hint::black_box(recurse(0));
    });
    mlirAsyncRuntimeExecute(h, r);
    thread::sleep(Duration::from_secs(30));
}

/// Starts a task that runs for `ms` milliseconds.
fn start_slow_task(ms: u64) {
    let (h, r) = task(move || thread::sleep(Duration::from_millis(ms)));
    mlirAsyncRuntimeExecute(h, r);
}

/// Runs `destroy` on another thread and returns a receiver for its return.
fn destroy_in_background() -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        __mlir_execution_engine_destroy();
        tx.send(()).unwrap();
    });
    rx
}

/// A thread outside the pool calls Execute while destroy drains a task.
fn destroy_races_execute() {
    start_slow_task(300);
    let destroyed = destroy_in_background();
    thread::sleep(Duration::from_millis(100));
    let (tx, rx) = mpsc::channel();
    let spawner = thread::spawn(move || {
        let (h, r) = task(move || tx.send(()).unwrap());
        mlirAsyncRuntimeExecute(h, r);
    });
    recv_or_exit(&rx, "the task queued during destroy", Duration::from_secs(20));
    recv_or_exit(&destroyed, "destroy", Duration::from_secs(20));
    spawner.join().unwrap();
    __mlir_execution_engine_destroy();
}

/// A thread outside the pool completes a token that has a continuation
/// while destroy drains a task.
fn destroy_races_continuation() {
    let token = TokenPtr::new(mlirAsyncRuntimeCreateToken());
    let (tx, rx) = mpsc::channel();
    let (h, r) = task(move || {
        // SAFETY: the continuation owns the consumer's reference.
        unsafe { mlirAsyncRuntimeDropRef(token.get().cast(), 1) };
        tx.send(()).unwrap();
    });
    // SAFETY: live token; the consumer's reference moves to the task.
    unsafe { mlirAsyncRuntimeAwaitTokenAndExecute(token.get(), h, r) };
    start_slow_task(300);
    let destroyed = destroy_in_background();
    thread::sleep(Duration::from_millis(100));
    // SAFETY: the producer's reference.
    let completer = thread::spawn(move || unsafe { mlirAsyncRuntimeEmplaceToken(token.get()) });
    recv_or_exit(&rx, "the continuation fired during destroy", Duration::from_secs(20));
    recv_or_exit(&destroyed, "destroy", Duration::from_secs(20));
    completer.join().unwrap();
    __mlir_execution_engine_destroy();
}

/// A child forked after the runtime started uses it and destroys it.
fn fork_child_uses_runtime() {
    for _ in 0..3 {
        execute_and_await();
    }
    // Keep the parent's workers busy while we fork.
    start_slow_task(50);
    // SAFETY: the child only calls the runtime, then `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        for _ in 0..100 {
            execute_and_await();
        }
        __mlir_execution_engine_destroy();
        execute_and_await();
        __mlir_execution_engine_destroy();
        // SAFETY: ends the child without running the parent's exit hooks.
        unsafe { libc::_exit(0) };
    }
    let Some(status) = wait_child(pid, Duration::from_secs(20)) else {
        eprintln!("scenario: the forked child hung");
        std::process::exit(HUNG);
    };
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        eprintln!("scenario: the forked child ended with wait status {status:#x}");
        std::process::exit(4);
    }
    // The parent's runtime still works.
    execute_and_await();
    __mlir_execution_engine_destroy();
}

/// Asks for the worker count under an absurd configuration.
fn report_workers() {
    println!("workers: {}", mlirAsyncRuntimGetNumWorkerThreads());
    execute_and_await();
    println!("threads: {}", thread_count());
    __mlir_execution_engine_destroy();
}

/// Destroy with a live object and no task ever run.
fn destroy_reports_live_objects_without_tasks() {
    let _leaked = mlirAsyncRuntimeCreateToken();
    __mlir_execution_engine_destroy();
}

/// The child side: runs the scenario named in the environment, if any.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var(SCENARIO_ENV) else { return };
    match name.as_str() {
        "blocked-chain" => blocked_chain(),
        "gate-100k" => many_blocked_on_a_gate(100_000),
        "gate-1000" => many_blocked_on_a_gate(1000),
        "all-started-10k" => all_started_then_opened(10_000),
        "overflow" => task_overflows_its_stack(),
        "completed-while-switching-out" => completed_while_switching_out(20_000),
        "gate-opened-late" => blocked_on_a_gate(100, Duration::from_millis(3500)),
        "destroy-races-execute" => destroy_races_execute(),
        "destroy-races-continuation" => destroy_races_continuation(),
        "fork" => fork_child_uses_runtime(),
        "report-workers" => report_workers(),
        "leak-without-tasks" => destroy_reports_live_objects_without_tasks(),
        other => panic!("unknown scenario {other}"),
    }
    std::process::exit(0);
}

// ---- the tests (parent side) ----------------------------------------------

/// Task stacks on (the default) or off (`MLIR_ASYNC_RUNTIME_TASK_STACKS=0`,
/// where a blocked task blocks its thread and a spare thread replaces it).
#[derive(Clone, Copy, Debug)]
enum Stacks {
    On,
    Off,
}

const BOTH: [Stacks; 2] = [Stacks::On, Stacks::Off];

fn scenario_with(name: &str, workers: &str, max_threads: &str, stacks: Stacks, limit: Duration) -> ChildRun {
    let stacks = match stacks {
        Stacks::On => "1",
        Stacks::Off => "0",
    };
    run_child(
        "scenario_child",
        &[
            (SCENARIO_ENV, name),
            ("MLIR_ASYNC_RUNTIME_WORKERS", workers),
            ("MLIR_ASYNC_RUNTIME_MAX_THREADS", max_threads),
            ("MLIR_ASYNC_RUNTIME_TASK_STACKS", stacks),
        ],
        limit,
    )
}

/// Runs the scenario with task stacks on and off; each must succeed.
fn assert_succeeds(name: &str, workers: &str, limit: Duration) -> ChildRun {
    let mut last = None;
    for stacks in BOTH {
        let run = scenario_with(name, workers, "512", stacks, limit);
        assert!(run.succeeded(), "{name} with {workers} worker(s), stacks {stacks:?}: {}", run.describe());
        last = Some(run);
    }
    last.expect("two runs")
}

/// The peak thread count a scenario printed.
fn peak_threads(run: &ChildRun) -> usize {
    run.stdout
        .lines()
        .find_map(|l| l.split("peak threads: ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak thread count: {}", run.describe()))
}

/// Threads of a scenario's process that are not the runtime's: the test
/// harness's, the test's and the thread sampler.
const TEST_THREADS: usize = 3;

#[test]
fn blocked_chain_completes_with_one_worker() {
    assert_succeeds("blocked-chain", "1", Duration::from_secs(60));
}

#[test]
fn blocked_chain_completes_with_two_workers() {
    assert_succeeds("blocked-chain", "2", Duration::from_secs(60));
}

#[test]
fn hundred_thousand_tasks_blocked_on_a_gate_complete_with_bounded_threads() {
    // Threads off: spares up to the default cap, plus the test's own.
    let run = scenario_with("gate-100k", "2", "512", Stacks::Off, Duration::from_secs(120));
    assert!(run.succeeded(), "{}", run.describe());
    let peak = peak_threads(&run);
    assert!(peak <= mlir_async_runtime::DEFAULT_MAX_THREADS + TEST_THREADS, "peak threads {peak}");
    // On task stacks: no thread beyond the workers.
    let run = scenario_with("gate-100k", "2", "512", Stacks::On, Duration::from_secs(120));
    assert!(run.succeeded(), "{}", run.describe());
    let peak = peak_threads(&run);
    assert!(peak <= 2 + 2 + TEST_THREADS, "peak threads {peak}: {}", run.describe());
}

/// Issue 25's target: 10,000 tasks blocked at once (the gate opens only
/// when every one has started) complete with 2 workers and at most
/// workers + 2 threads of the runtime. On threads alone this hung at the
/// cap (512 threads, the rest never started).
#[test]
fn ten_thousand_tasks_blocked_at_once_complete_on_two_workers() {
    let run = scenario_with("all-started-10k", "2", "512", Stacks::On, Duration::from_secs(120));
    assert!(run.succeeded(), "{}", run.describe());
    let peak = peak_threads(&run);
    assert!(peak <= 2 + 2 + TEST_THREADS, "peak threads {peak}: {}", run.describe());
    assert!(!run.stderr.contains("mlir_async_runtime:"), "no warning expected: {}", run.describe());
}

/// At the thread cap, tasks wait in the queue until a blocked thread goes
/// on; the thread that queues them (here the test thread, which then opens
/// the gate) must not spin trying to start threads the cap forbids. With a
/// cap of one thread, the only worker blocks on the gate at once.
#[test]
fn tasks_queued_at_the_thread_cap_wait_for_a_blocked_thread() {
    for ((workers, cap), stacks) in [("1", "1"), ("2", "3")].into_iter().flat_map(|c| BOTH.map(|s| (c, s))) {
        let run = scenario_with("gate-1000", workers, cap, stacks, Duration::from_secs(60));
        assert!(run.succeeded(), "{workers} worker(s), cap {cap}: {}", run.describe());
        assert!(!run.stderr.contains("mlir_async_runtime:"), "no warning expected: {}", run.describe());
    }
}

/// Every thread blocked at the cap with tasks queued, for seconds: one
/// line says so, naming the cap and its variable; the program still ends
/// when the gate opens. (Threads that block: task stacks off. On task
/// stacks, the same program blocks no thread: next test.)
#[test]
fn every_thread_blocked_at_the_cap_is_reported_once() {
    let run = scenario_with("gate-opened-late", "1", "2", Stacks::Off, Duration::from_secs(60));
    assert!(run.succeeded(), "{}", run.describe());
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("mlir_async_runtime:")).collect();
    assert_eq!(lines.len(), 1, "{}", run.describe());
    assert!(
        lines[0].contains("all 2 runtime threads are blocked") && lines[0].contains("MLIR_ASYNC_RUNTIME_MAX_THREADS"),
        "{}",
        lines[0]
    );
}

/// The object completes while its task is still switching out: the drainer
/// finds the hand-off fired and resumes the task at once, on its own loop's
/// fiber (which then ends: a fresh one goes on). That path panicked ("a
/// drainer's own fiber ends only when it leaves") under ASan's timing.
#[test]
fn a_task_whose_object_completes_while_it_switches_out_goes_on() {
    for workers in ["1", "2"] {
        let run = scenario_with("completed-while-switching-out", workers, "512", Stacks::On, Duration::from_secs(120));
        assert!(run.succeeded(), "{workers} worker(s): {}", run.describe());
    }
}

/// A task that overflows its task stack dies with one line naming the knob
/// that sets the size, not with a bare SIGSEGV.
#[test]
fn a_task_that_overflows_its_stack_says_which_knob_sets_the_size() {
    let run = run_child(
        "scenario_child",
        &[
            (SCENARIO_ENV, "overflow"),
            ("MLIR_ASYNC_RUNTIME_WORKERS", "1"),
            ("MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE", "262144"),
        ],
        Duration::from_secs(60),
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(run.status.and_then(|s| s.signal()), Some(libc::SIGABRT), "{}", run.describe());
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("mlir_async_runtime:")).collect();
    assert_eq!(lines.len(), 1, "{}", run.describe());
    assert_eq!(
        lines[0],
        "mlir_async_runtime: a task overflowed its stack of 262144 bytes; raise MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE (bytes)"
    );
}

#[test]
fn on_task_stacks_tasks_blocked_for_seconds_block_no_thread() {
    let run = scenario_with("gate-opened-late", "1", "2", Stacks::On, Duration::from_secs(60));
    assert!(run.succeeded(), "{}", run.describe());
    assert!(!run.stderr.contains("mlir_async_runtime:"), "no warning expected: {}", run.describe());
}

#[test]
fn destroy_does_not_hang_when_another_thread_executes() {
    for workers in ["1", "2"] {
        assert_succeeds("destroy-races-execute", workers, Duration::from_secs(30));
    }
}

#[test]
fn destroy_does_not_hang_when_another_thread_fires_a_continuation() {
    for workers in ["1", "2"] {
        assert_succeeds("destroy-races-continuation", workers, Duration::from_secs(30));
    }
}

#[test]
fn a_forked_child_uses_the_runtime_and_destroys_it() {
    for workers in ["1", "2"] {
        assert_succeeds("fork", workers, Duration::from_secs(30));
    }
}

#[test]
fn an_absurd_worker_count_is_capped_with_one_warning() {
    let run = assert_succeeds("report-workers", "100000", Duration::from_secs(20));
    let workers: usize = run
        .stdout
        .lines()
        .find_map(|l| l.split("workers: ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no worker count: {}", run.describe()));
    assert!(workers <= mlir_async_runtime::DEFAULT_MAX_THREADS, "{workers} workers");
    let warnings: Vec<&str> =
        run.stderr.lines().filter(|l| l.starts_with("mlir_async_runtime:")).collect();
    assert_eq!(warnings.len(), 1, "expected one warning line: {}", run.describe());
    assert!(
        warnings[0].contains("MLIR_ASYNC_RUNTIME_WORKERS") && warnings[0].contains("MLIR_ASYNC_RUNTIME_MAX_THREADS"),
        "the warning names both variables: {}",
        warnings[0]
    );
}

#[test]
fn destroy_reports_live_objects_even_if_no_task_ran() {
    let run = assert_succeeds("leak-without-tasks", "1", Duration::from_secs(20));
    assert!(
        run.stderr.contains("mlir_async_runtime: destroy: still alive: 1 token(s), 0 value(s), 0 group(s)"),
        "{}",
        run.describe()
    );
}
