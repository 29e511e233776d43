//! A thread outside the pool that waits in a blocking `Await*` runs queued
//! tasks meanwhile (threads/README.md, "A waiting thread runs its
//! producers"): by default the tasks it queued itself that produce what it
//! awaits, oldest first; with `MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=any`,
//! any task, newest first; each on a task stack.
//!
//! Each scenario runs in a child process with two workers, so that a hang
//! is killed and reported instead of stalling the suite.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use common::{await_token, drop_token, run_child, task, TokenPtr};
use mlir_async_runtime::abi::*;

const SCENARIO_ENV: &str = "MLIR_ASYNC_RUNTIME_TEST_SCENARIO";

/// A child's exit code when a wait gave up.
const HUNG: i32 = 3;

/// Queues a task that runs `body` and then completes a token; returns the
/// token (one reference, the caller's).
fn execute(body: impl FnOnce() + Send + 'static) -> TokenPtr {
    let done = TokenPtr::new(mlirAsyncRuntimeCreateToken());
    // SAFETY: a second reference, the task's.
    unsafe { mlirAsyncRuntimeAddRef(done.get().cast(), 1) };
    let (h, r) = task(move || {
        body();
        // SAFETY: the task's reference.
        unsafe {
            mlirAsyncRuntimeEmplaceToken(done.get());
            mlirAsyncRuntimeDropRef(done.get().cast(), 1);
        }
    });
    mlirAsyncRuntimeExecute(h, r);
    done
}

/// Rounds of four tasks queued and then awaited one by one (the shape of
/// bench/blocking-awaits.mlir); prints how many ran on this thread.
fn queue_then_await(rounds: usize) {
    let me = std::thread::current().id();
    let here = Arc::new(AtomicUsize::new(0));
    for _ in 0..rounds {
        let tokens: Vec<TokenPtr> = (0..4)
            .map(|_| {
                let here = Arc::clone(&here);
                execute(move || {
                    if std::thread::current().id() == me {
                        here.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for token in tokens {
            await_token(token);
            drop_token(token);
        }
    }
    __mlir_execution_engine_destroy();
    println!("ran here: {} of {}", here.load(Ordering::Relaxed), rounds * 4);
}

/// This thread queues a task and waits for it by spinning on memory, not in
/// an `Await*`: a worker must take it from this thread's entry.
fn queue_then_spin(rounds: usize) {
    for round in 0..rounds {
        let flag = Arc::new(AtomicBool::new(false));
        let set = Arc::clone(&flag);
        let token = execute(move || set.store(true, Ordering::Release));
        let start = Instant::now();
        while !flag.load(Ordering::Acquire) {
            if start.elapsed() > Duration::from_secs(10) {
                eprintln!("round {round}: the task this thread queued never ran");
                std::process::exit(HUNG);
            }
            std::hint::spin_loop();
        }
        await_token(token);
        drop_token(token);
    }
    __mlir_execution_engine_destroy();
}

/// A task that this thread runs while it waits blocks in an `Await*` on an
/// object that another thread completes later: it switches out, this
/// thread's wait goes on and ends, and the task finishes once resumed.
fn waiter_task_blocks(rounds: usize) {
    let me = std::thread::current().id();
    let mut started_here = 0;
    for _ in 0..rounds {
        let gate = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let other = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let threads: Arc<Mutex<(Option<ThreadId>, Option<ThreadId>)>> = Arc::default();
        let seen = Arc::clone(&threads);
        // SAFETY: the task's reference to the gate.
        unsafe { mlirAsyncRuntimeAddRef(gate.get().cast(), 1) };
        let blocked = execute(move || {
            seen.lock().unwrap().0 = Some(std::thread::current().id());
            await_token(gate);
            drop_token(gate);
            seen.lock().unwrap().1 = Some(std::thread::current().id());
        });
        // Another thread completes `other` a moment later, and `gate` only
        // once this thread's wait for `other` returned: had `blocked` held
        // this thread (no switch out), that never happens.
        let returned = Arc::new(AtomicBool::new(false));
        let seen_return = Arc::clone(&returned);
        let completer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1));
            // SAFETY: the producer's reference.
            unsafe { mlirAsyncRuntimeEmplaceToken(other.get()) };
            let start = Instant::now();
            while !seen_return.load(Ordering::Acquire) {
                if start.elapsed() > Duration::from_secs(10) {
                    eprintln!("the wait for `other` did not return: the blocked task held its thread");
                    std::process::exit(HUNG);
                }
                std::thread::yield_now();
            }
            // SAFETY: the producer's reference.
            unsafe {
                mlirAsyncRuntimeEmplaceToken(gate.get());
                mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
            }
        });
        // This thread waits for `other`, running `blocked` meanwhile.
        await_token(other);
        drop_token(other);
        returned.store(true, Ordering::Release);
        await_token(blocked);
        drop_token(blocked);
        completer.join().unwrap();
        let (start, end) = *threads.lock().unwrap();
        assert!(start.is_some() && end.is_some(), "the task ran to its end");
        // It goes on wherever its resumption is taken: on a worker, or on
        // this thread if it took it while waiting for `blocked`.
        if start == Some(me) {
            started_here += 1;
        }
    }
    __mlir_execution_engine_destroy();
    println!("started here: {started_here} of {rounds}");
}

/// What the waiting thread of [`slot_task_while_owner_busy`] awaits.
#[derive(Clone, Copy, PartialEq)]
enum Awaits {
    /// The child's token, created before the parent: the child is bound
    /// to nothing, so only a waiter that runs any task takes it.
    Token,
    /// A group that the parent adds the child's token to, created right
    /// before the child, as `async-parallel-for`'s dispatch does: the child
    /// produces the group, and a waiter that runs its producers takes it.
    Group,
}

/// A task on the one worker makes a child ready (it goes to the worker's
/// next-task slot) and then spins until the child ran, as a parallel
/// loop's worker runs its big block after splitting off the last one. No
/// other drainer can start (one worker, its permit held): this thread,
/// waiting for the child, must take it from the slot. Prints how many
/// children ran on this thread.
fn slot_task_while_owner_busy(rounds: usize, awaits: Awaits) {
    let me = std::thread::current().id();
    let mut here = 0;
    for round in 0..rounds {
        let started = Arc::new(AtomicBool::new(false));
        let child_ran = Arc::new(AtomicBool::new(false));
        let child_thread: Arc<Mutex<Option<ThreadId>>> = Arc::default();
        let early_token = (awaits == Awaits::Token).then(|| TokenPtr::new(mlirAsyncRuntimeCreateToken()));
        let group = (awaits == Awaits::Group).then(|| mlirAsyncRuntimeCreateGroup(1) as usize);
        let (set_started, ran, seen) = (Arc::clone(&started), Arc::clone(&child_ran), Arc::clone(&child_thread));
        let parent = execute(move || {
            let child_done = early_token.unwrap_or_else(|| TokenPtr::new(mlirAsyncRuntimeCreateToken()));
            // SAFETY: a second reference, the child's.
            unsafe { mlirAsyncRuntimeAddRef(child_done.get().cast(), 1) };
            let set_ran = Arc::clone(&ran);
            let (h, r) = task(move || {
                *seen.lock().unwrap() = Some(std::thread::current().id());
                set_ran.store(true, Ordering::Release);
                // SAFETY: the child's reference.
                unsafe {
                    mlirAsyncRuntimeEmplaceToken(child_done.get());
                    mlirAsyncRuntimeDropRef(child_done.get().cast(), 1);
                }
            });
            mlirAsyncRuntimeExecute(h, r);
            if let Some(group) = group {
                // SAFETY: the waiting thread's reference keeps the group
                // alive; then the parent drops its own token reference.
                unsafe {
                    mlirAsyncRuntimeAddTokenToGroup(child_done.get(), group as *mut _);
                    mlirAsyncRuntimeDropRef(child_done.get().cast(), 1);
                }
            }
            set_started.store(true, Ordering::Release);
            let start = Instant::now();
            while !ran.load(Ordering::Acquire) {
                if start.elapsed() > Duration::from_secs(2) {
                    eprintln!("round {round}: the child waited in the busy worker's slot for 2 s");
                    std::process::exit(HUNG);
                }
                std::hint::spin_loop();
            }
        });
        // Spin, not await, until a worker took the parent (and queued the
        // child): this thread would otherwise run it itself.
        let start = Instant::now();
        while !started.load(Ordering::Acquire) {
            if start.elapsed() > Duration::from_secs(10) {
                eprintln!("round {round}: no worker took the parent");
                std::process::exit(HUNG);
            }
            std::hint::spin_loop();
        }
        if let Some(token) = early_token {
            await_token(token);
            drop_token(token);
        }
        if let Some(group) = group {
            // SAFETY: this thread's reference to the group.
            unsafe {
                mlirAsyncRuntimeAwaitAllInGroup(group as *mut _);
                mlirAsyncRuntimeDropRef(group as *mut _, 1);
            }
        }
        await_token(parent);
        drop_token(parent);
        if *child_thread.lock().unwrap() == Some(me) {
            here += 1;
        }
    }
    __mlir_execution_engine_destroy();
    println!("children ran here: {here} of {rounds}");
}

/// This thread queues tasks and never waits for them: the destroy hook
/// waits until every one ran.
fn queue_then_destroy(n: usize) {
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..n {
        let ran = Arc::clone(&ran);
        let token = execute(move || {
            ran.fetch_add(1, Ordering::Relaxed);
        });
        drop_token(token);
    }
    __mlir_execution_engine_destroy();
    let ran = ran.load(Ordering::Relaxed);
    assert_eq!(ran, n, "tasks queued by a thread that never waited were lost at destroy");
}

/// More threads than there are entries for them queue tasks and wait.
fn many_threads(threads: usize, rounds: usize) {
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    let token = execute(|| {});
                    await_token(token);
                    drop_token(token);
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    __mlir_execution_engine_destroy();
}

/// Two workers run long tasks that another thread queued; this thread
/// queues a short task and awaits it. The waiter runs it at once, busy
/// workers or not (on the C++ runtime it would wait for a free thread):
/// the waiter is blocked otherwise, and takes part, as OpenMP's caller
/// does. Prints where it ran.
fn producer_while_workers_busy(rounds: usize) {
    let me = std::thread::current().id();
    let mut here = 0;
    for _ in 0..rounds {
        let started = Arc::new(AtomicUsize::new(0));
        let longs = {
            let started = Arc::clone(&started);
            std::thread::spawn(move || {
                (0..2)
                    .map(|_| {
                        let started = Arc::clone(&started);
                        execute(move || {
                            started.fetch_add(1, Ordering::AcqRel);
                            let start = Instant::now();
                            while start.elapsed() < Duration::from_millis(20) {
                                std::hint::spin_loop();
                            }
                        })
                    })
                    .collect::<Vec<_>>()
            })
            .join()
            .unwrap()
        };
        let start = Instant::now();
        while started.load(Ordering::Acquire) < 2 {
            if start.elapsed() > Duration::from_secs(10) {
                eprintln!("the workers never took the long tasks");
                std::process::exit(HUNG);
            }
            std::thread::yield_now();
        }
        let ran_on: Arc<Mutex<Option<ThreadId>>> = Arc::default();
        let seen = Arc::clone(&ran_on);
        let token = execute(move || *seen.lock().unwrap() = Some(std::thread::current().id()));
        await_token(token);
        drop_token(token);
        if *ran_on.lock().unwrap() == Some(me) {
            here += 1;
        }
        for token in longs {
            await_token(token);
            drop_token(token);
        }
    }
    __mlir_execution_engine_destroy();
    println!("ran here while the workers were busy: {here} of {rounds}");
}

/// The child side: runs the scenario named in the environment, if any.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var(SCENARIO_ENV) else {
        return;
    };
    match name.as_str() {
        "queue-then-await" => queue_then_await(2000),
        "queue-then-spin" => queue_then_spin(200),
        "waiter-task-blocks" => waiter_task_blocks(100),
        "queue-then-destroy" => queue_then_destroy(10_000),
        "many-threads" => many_threads(100, 200),
        "slot-task-while-owner-busy" => slot_task_while_owner_busy(200, Awaits::Token),
        "slot-producer-while-owner-busy" => slot_task_while_owner_busy(200, Awaits::Group),
        "producer-while-workers-busy" => producer_while_workers_busy(20),
        other => panic!("unknown scenario {other}"),
    }
    std::process::exit(0);
}

fn run_scenario(name: &str, env: &[(&str, &str)]) -> String {
    let mut all = vec![(SCENARIO_ENV, name), ("MLIR_ASYNC_RUNTIME_WORKERS", "2")];
    all.extend_from_slice(env);
    let run = run_child("scenario_child", &all, Duration::from_secs(120));
    assert!(run.succeeded(), "{name} {env:?}: {}", run.describe());
    run.stdout
}

/// The number after `label` in a child's output.
fn count_after(stdout: &str, label: &str) -> (usize, usize) {
    let line = stdout
        .lines()
        .find_map(|l| l.split_once(label).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no {label:?} in {stdout}"));
    let (n, of) = line.trim().split_once(" of ").expect("N of M");
    (n.parse().unwrap(), of.parse().unwrap())
}

#[test]
fn a_waiting_thread_runs_the_tasks_it_queued() {
    let (here, all) = count_after(&run_scenario("queue-then-await", &[]), "ran here:");
    // Idle workers take a task from a waiter's entry only once it has
    // waited there for a while, or on their last look before leaving.
    assert!(here * 10 >= all * 9, "only {here} of {all} tasks ran on the thread that waited for them");
}

#[test]
fn with_the_opt_out_a_waiting_thread_runs_no_task() {
    let env = [("MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS", "0")];
    let (here, all) = count_after(&run_scenario("queue-then-await", &env), "ran here:");
    assert_eq!((here, all), (0, 8000));
}

#[test]
fn a_task_queued_by_a_thread_that_spins_instead_of_awaiting_runs() {
    run_scenario("queue-then-spin", &[]);
}

/// The waiter waits for `other`, which the blocking task does not produce:
/// only a waiter that runs any task runs it.
#[test]
fn a_task_that_blocks_on_a_waiter_switches_out_and_finishes() {
    let env = [("MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS", "any")];
    let (started_here, rounds) = count_after(&run_scenario("waiter-task-blocks", &env), "started here:");
    // A worker takes the task instead when it has waited 5 µs in the
    // waiter's entry (a loaded machine preempts the waiter that long): the
    // rounds the waiter ran are the ones that test its switch out.
    assert!(started_here * 10 >= rounds, "the waiter ran only {started_here} of {rounds} blocking tasks");
}

#[test]
fn tasks_queued_by_a_thread_that_never_waits_run_before_destroy_returns() {
    run_scenario("queue-then-destroy", &[]);
}

#[test]
fn more_waiting_threads_than_entries_all_finish() {
    run_scenario("many-threads", &[]);
}

/// Only a waiter that runs any task takes an unbound task from a worker's
/// slot.
#[test]
fn a_waiting_thread_takes_a_task_from_a_busy_workers_slot() {
    let env = [("MLIR_ASYNC_RUNTIME_WORKERS", "1"), ("MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS", "any")];
    let (here, all) = count_after(&run_scenario("slot-task-while-owner-busy", &env), "children ran here:");
    assert_eq!((here, all), (200, 200), "a child ran elsewhere than on the thread that waited for it");
}

/// By default, a waiter takes a producer of the group it awaits from a
/// busy worker's slot: a triangular parallel loop's last block, which the
/// worker split off before its own big block.
#[test]
fn a_waiting_thread_takes_its_producer_from_a_busy_workers_slot() {
    let env = [("MLIR_ASYNC_RUNTIME_WORKERS", "1")];
    let (here, all) = count_after(&run_scenario("slot-producer-while-owner-busy", &env), "children ran here:");
    assert_eq!((here, all), (200, 200), "a child ran elsewhere than on the thread that waited for it");
}

#[test]
fn a_waiter_runs_its_producer_while_all_the_workers_run_long_tasks() {
    let out = run_scenario("producer-while-workers-busy", &[]);
    let (here, all) = count_after(&out, "ran here while the workers were busy:");
    // Both workers spin for 20 ms each round: neither can take the task
    // before the waiter does, but on a loaded machine, rarely.
    assert!(here * 10 >= all * 9, "the waiter ran {here} of {all} producers beside two busy workers");
}
