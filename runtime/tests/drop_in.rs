//! Programs that MLIR's C++ runtime (LLVM 19.1.7) completes must complete
//! on ours, with the same outcome (issue 39; the ABI doc's invariant 5): a
//! thread that waits in an `Await*` outside the pool runs only the tasks
//! it waits for, with a pool thread's floating-point environment, and the
//! default worker count is the number of threads that run tasks when
//! nobody waits.
//!
//! Each shape runs in a child process (a hang is killed and reported), by
//! default and with each opt-out (`MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=0`,
//! `MLIR_ASYNC_RUNTIME_TASK_STACKS=0`). The opt-in policy that lets a
//! waiter run any task (`MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=any`) fails
//! these shapes by design: its hazards are the README's.
//!
//! The same shapes, written in C against the ABI and loaded with dlopen
//! (`tests/c/drop_in_shapes.c`), run on the C++ runtime itself and on ours
//! in `make check-drop-in-cxx` (`scripts/check/drop_in_cxx.sh`): the C++
//! results that each shape's comment below states are that check's, and it
//! fails when ours differs from them in the default mode or an opt-out.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::{await_token, drop_token, run_child, task, TokenPtr};
use mlir_async_runtime::abi::*;

const SCENARIO_ENV: &str = "MLIR_ASYNC_RUNTIME_TEST_SCENARIO";

/// Queues a task that runs `body` and then completes its token, in the
/// order MLIR's lowering of `async.execute` calls the runtime (the token
/// first, then `Execute`); returns the token (the caller's reference).
fn execute(body: impl FnOnce() + Send + 'static) -> TokenPtr {
    let done = TokenPtr::new(mlirAsyncRuntimeCreateToken());
    let (h, r) = task(move || {
        body();
        // SAFETY: the task's reference, released by the emplace.
        unsafe { mlirAsyncRuntimeEmplaceToken(done.get()) };
    });
    mlirAsyncRuntimeExecute(h, r);
    done
}

/// Starts the runtime, so that its threads exist (and took the process's
/// floating-point environment) before the scenario begins.
fn start_runtime() {
    let token = execute(|| {});
    await_token(token);
    drop_token(token);
}

/// Shape 1: the caller holds a plain (non-recursive) mutex across
/// `AwaitToken(t)`; `t`'s task completes `t` at once, and an unrelated
/// task, queued before or after it, takes the mutex. The C++ runtime runs
/// the unrelated task on its pool, where it waits for the caller's unlock:
/// every round completes. A waiter that ran it on its own thread would
/// deadlock on the mutex it holds.
fn lock_across_await(rounds: usize) {
    static LOCK: Mutex<u64> = Mutex::new(0);
    start_runtime();
    for round in 0..rounds {
        let before = round % 2 == 0;
        let held = LOCK.lock().unwrap();
        let mut unrelated = None;
        if before {
            unrelated = Some(execute(|| *LOCK.lock().unwrap() += 1));
        }
        let producer = execute(|| {});
        if !before {
            unrelated = Some(execute(|| *LOCK.lock().unwrap() += 1));
        }
        await_token(producer);
        drop(held);
        drop_token(producer);
        let unrelated = unrelated.unwrap();
        await_token(unrelated);
        drop_token(unrelated);
    }
    assert_eq!(*LOCK.lock().unwrap(), rounds as u64);
    __mlir_execution_engine_destroy();
    println!("rounds: {rounds}");
}

/// A flag with a condition variable: set by one thread, waited for, with
/// a limit, by another.
#[derive(Default)]
struct Signal {
    set: Mutex<bool>,
    changed: Condvar,
}

impl Signal {
    fn give(&self) {
        *self.set.lock().unwrap() = true;
        self.changed.notify_all();
    }

    /// True when the signal came within `limit`.
    fn wait(&self, limit: Duration) -> bool {
        let set = self.set.lock().unwrap();
        let (set, _) = self.changed.wait_timeout_while(set, limit, |set| !*set).unwrap();
        *set
    }
}

/// Shape 2: a task waits on a condition variable that the caller signals
/// after its await of another task's token returns. The C++ runtime runs
/// the waiting task on its pool: the caller's await returns at once and
/// the signal comes well within the task's limit. A waiter that ran it
/// would sit in it until its limit ran out, and the task would miss the
/// signal.
fn signal_after_await(rounds: usize) {
    start_runtime();
    let missed = Arc::new(AtomicUsize::new(0));
    for round in 0..rounds {
        let signal = Arc::new(Signal::default());
        let waiting = {
            let (signal, missed) = (Arc::clone(&signal), Arc::clone(&missed));
            move || {
                if !signal.wait(Duration::from_secs(3)) {
                    missed.fetch_add(1, Ordering::Relaxed);
                }
            }
        };
        let (producer, waiter) = if round % 2 == 0 {
            let waiter = execute(waiting);
            (execute(|| {}), waiter)
        } else {
            let producer = execute(|| {});
            (producer, execute(waiting))
        };
        await_token(producer);
        signal.give();
        drop_token(producer);
        await_token(waiter);
        drop_token(waiter);
    }
    __mlir_execution_engine_destroy();
    println!("missed signals: {} of {rounds}", missed.load(Ordering::Relaxed));
}

/// Shape 3: the caller queues the producer of `t`, then a long unrelated
/// computation, and awaits `t`. The C++ runtime returns from the await at
/// once (0.0 ms), the computation running on its pool. The computation
/// here runs until the caller says its await returned, for 3 s at most;
/// it reports whether it had to run to its limit (it ran on the waiting
/// thread, which could not return meanwhile).
fn unrelated_long_task(rounds: usize) {
    start_runtime();
    let to_limit = Arc::new(AtomicUsize::new(0));
    for _ in 0..rounds {
        let returned = Arc::new(AtomicBool::new(false));
        let producer = execute(|| {});
        let long = {
            let (returned, to_limit) = (Arc::clone(&returned), Arc::clone(&to_limit));
            execute(move || {
                let start = Instant::now();
                while !returned.load(Ordering::Acquire) {
                    if start.elapsed() > Duration::from_secs(3) {
                        to_limit.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    std::hint::spin_loop();
                }
            })
        };
        await_token(producer);
        returned.store(true, Ordering::Release);
        drop_token(producer);
        await_token(long);
        drop_token(long);
    }
    __mlir_execution_engine_destroy();
    println!("ran to their limit: {} of {rounds}", to_limit.load(Ordering::Relaxed));
}

#[cfg(target_arch = "x86_64")]
mod rounding {
    pub const TONEAREST: i32 = 0;
    pub const UPWARD: i32 = 0x800;
    pub const TOWARDZERO: i32 = 0xc00;
}

#[cfg(target_arch = "aarch64")]
mod rounding {
    pub const TONEAREST: i32 = 0;
    pub const UPWARD: i32 = 0x40_0000;
    pub const TOWARDZERO: i32 = 0xc0_0000;
}

extern "C" {
    fn fegetround() -> i32;
    fn fesetround(mode: i32) -> i32;
}

fn get_rounding() -> i32 {
    // SAFETY: reads this thread's floating-point environment.
    unsafe { fegetround() }
}

fn set_rounding(mode: i32) {
    // SAFETY: sets this thread's rounding mode to a valid one.
    assert_eq!(unsafe { fesetround(mode) }, 0);
}

/// Shape 4: the caller rounds upward and awaits tasks that set their own
/// thread's rounding mode toward zero (and leave it so). On the C++
/// runtime every task runs on a pool thread, which never saw the caller's
/// mode (pool threads start with the environment of the thread that
/// started the runtime, to nearest here), and the caller's await returns
/// with its own mode. A task run on the waiting thread must see the same.
fn floating_point_environment(rounds: usize) {
    start_runtime();
    let saw_callers = Arc::new(AtomicUsize::new(0));
    let mut kept = 0;
    for _ in 0..rounds {
        set_rounding(rounding::UPWARD);
        let saw = Arc::clone(&saw_callers);
        let token = execute(move || {
            let mode = get_rounding();
            if mode != rounding::TONEAREST && mode != rounding::TOWARDZERO {
                saw.fetch_add(1, Ordering::Relaxed);
            }
            set_rounding(rounding::TOWARDZERO);
        });
        await_token(token);
        if get_rounding() == rounding::UPWARD {
            kept += 1;
        }
        drop_token(token);
    }
    set_rounding(rounding::TONEAREST);
    __mlir_execution_engine_destroy();
    println!("tasks that saw the caller's mode: {} of {rounds}", saw_callers.load(Ordering::Relaxed));
    println!("awaits that returned with the caller's mode: {kept} of {rounds}");
}

/// Shape 5: as many tasks as `mlirAsyncRuntimGetNumWorkerThreads()` says
/// meet at a barrier while the caller polls memory, never in an `Await*`.
/// On the C++ runtime (a pool of that many threads) they all meet. Each
/// task waits 10 s at most; the caller reports whether they all met.
fn barrier_of_reported_workers() {
    let n = mlirAsyncRuntimGetNumWorkerThreads() as usize;
    let arrived = Arc::new(AtomicUsize::new(0));
    let met = Arc::new(AtomicUsize::new(0));
    let tokens: Vec<TokenPtr> = (0..n)
        .map(|_| {
            let (arrived, met) = (Arc::clone(&arrived), Arc::clone(&met));
            execute(move || {
                arrived.fetch_add(1, Ordering::AcqRel);
                let start = Instant::now();
                while arrived.load(Ordering::Acquire) < n {
                    if start.elapsed() > Duration::from_secs(10) {
                        return;
                    }
                    std::thread::yield_now();
                }
                met.fetch_add(1, Ordering::AcqRel);
            })
        })
        .collect();
    // Polls, as a program that shares memory with its tasks may.
    let start = Instant::now();
    while met.load(Ordering::Acquire) < n && start.elapsed() < Duration::from_secs(11) {
        std::thread::sleep(Duration::from_millis(1));
    }
    for token in tokens {
        await_token(token);
        drop_token(token);
    }
    __mlir_execution_engine_destroy();
    println!("met at the barrier: {} of {n}", met.load(Ordering::Acquire));
}

/// The child side: runs the scenario named in the environment, if any.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var(SCENARIO_ENV) else {
        return;
    };
    match name.as_str() {
        "lock-across-await" => lock_across_await(10),
        "signal-after-await" => signal_after_await(6),
        "unrelated-long-task" => unrelated_long_task(6),
        "floating-point-environment" => floating_point_environment(50),
        "barrier-of-reported-workers" => barrier_of_reported_workers(),
        other => panic!("unknown scenario {other}"),
    }
    std::process::exit(0);
}

/// The modes every shape must pass in: the default, and each opt-out.
const MODES: [&[(&str, &str)]; 3] =
    [&[], &[("MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS", "0")], &[("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0")]];

/// Runs `name` in each mode with `extra` set; its output in each.
fn run_in_every_mode(name: &str, extra: &[(&str, &str)]) -> Vec<String> {
    MODES
        .iter()
        .map(|mode| {
            let mut env = vec![(SCENARIO_ENV, name)];
            env.extend_from_slice(extra);
            env.extend_from_slice(mode);
            let run = run_child("scenario_child", &env, Duration::from_secs(60));
            assert!(run.succeeded(), "{name} {mode:?}: {}", run.describe());
            run.stdout
        })
        .collect()
}

/// The part of `stdout`'s line from `label` on (the test harness may print
/// its own words first).
fn line<'a>(stdout: &'a str, label: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| l.find(label).map(|at| l[at..].trim_end()))
        .unwrap_or_else(|| panic!("no {label:?} in {stdout}"))
}

#[test]
fn a_lock_held_across_an_await_does_not_deadlock() {
    for out in run_in_every_mode("lock-across-await", &[("MLIR_ASYNC_RUNTIME_WORKERS", "2")]) {
        assert_eq!(line(&out, "rounds:"), "rounds: 10");
    }
}

#[test]
fn a_signal_given_after_an_await_reaches_the_task_waiting_for_it() {
    for out in run_in_every_mode("signal-after-await", &[("MLIR_ASYNC_RUNTIME_WORKERS", "2")]) {
        assert_eq!(line(&out, "missed signals:"), "missed signals: 0 of 6");
    }
}

#[test]
fn an_unrelated_long_task_does_not_hold_an_await_up() {
    for out in run_in_every_mode("unrelated-long-task", &[("MLIR_ASYNC_RUNTIME_WORKERS", "2")]) {
        assert_eq!(line(&out, "ran to their limit:"), "ran to their limit: 0 of 6");
    }
}

#[test]
fn tasks_run_with_a_pool_threads_floating_point_environment() {
    for out in run_in_every_mode("floating-point-environment", &[("MLIR_ASYNC_RUNTIME_WORKERS", "2")]) {
        assert_eq!(line(&out, "tasks that saw the caller's mode:"), "tasks that saw the caller's mode: 0 of 50");
        assert_eq!(
            line(&out, "awaits that returned with the caller's mode:"),
            "awaits that returned with the caller's mode: 50 of 50"
        );
    }
}

#[test]
fn as_many_tasks_as_reported_workers_run_at_once_by_default() {
    // No worker count set: the default is what this checks.
    for out in run_in_every_mode("barrier-of-reported-workers", &[]) {
        let met = line(&out, "met at the barrier:");
        let (n, of) = met["met at the barrier: ".len()..].split_once(" of ").unwrap();
        assert_eq!(n, of, "{met}");
    }
}
