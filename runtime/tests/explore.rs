//! Deterministic schedules (`MLIR_ASYNC_RUNTIME_SCHEDULE`,
//! `select_schedule`): the existing behaviours (tasks, continuations,
//! blocking awaits inside tasks, groups, errors) run in this mode, one
//! thread at a time; one seed gives one interleaving, run after run and
//! process after process (the order of events, the trace, the printed
//! thread ids); and a deadlock is reported in one line naming the seed.
//!
//! In-process scenarios select a schedule for the next instance, run, and
//! destroy the instance; they hold one lock, as the selection and the
//! current instance are the process's. Scenarios that must read the
//! environment, print, or abort run in a child process.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::{run_child, task, TokenPtr};
use mlir_async_runtime::abi::*;
use mlir_async_runtime::select_schedule;

/// One in-process scenario at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the scenario's tasks record, and a check that no two of them
/// run at once.
#[derive(Default)]
struct Log {
    events: Mutex<Vec<String>>,
    inside: AtomicUsize,
    overlaps: AtomicUsize,
}

impl Log {
    /// Runs `f` as a task body, recording `event` first.
    fn body(&self, event: String, f: impl FnOnce()) {
        if self.inside.fetch_add(1, Ordering::SeqCst) != 0 {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        self.events.lock().unwrap().push(event);
        // A moment in which another thread running would be seen.
        std::thread::sleep(Duration::from_micros(50));
        self.inside.fetch_sub(1, Ordering::SeqCst);
        f();
    }

    fn events(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }
}

/// Every kind of scheduling point: Execute from main and from tasks,
/// continuations (AwaitTokenAndExecute), blocking awaits inside tasks on a
/// gate that main opens, a group awaited by main, and a task that fails.
fn mixed_program(log: &Arc<Log>) {
    const N: usize = 6;
    let group = mlirAsyncRuntimeCreateGroup(N as i64) as usize;
    let gate = TokenPtr::new(mlirAsyncRuntimeCreateToken());
    for i in 0..N {
        let done = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let l = Arc::clone(log);
        let (handle, resume) = task(move || {
            l.body(format!("start {i}"), || {});
            if i % 2 == 0 {
                // A child task, then a continuation after it.
                let child = TokenPtr::new(mlirAsyncRuntimeCreateToken());
                let lc = Arc::clone(&l);
                let (h, r) = task(move || {
                    lc.body(format!("child {i}"), || {});
                    // SAFETY: the producer's reference.
                    unsafe { mlirAsyncRuntimeEmplaceToken(child.get()) };
                });
                mlirAsyncRuntimeExecute(h, r);
                let lk = Arc::clone(&l);
                let (h, r) = task(move || {
                    lk.body(format!("after child {i}"), || {});
                    // SAFETY: the producer's reference; then ours to the child.
                    unsafe {
                        mlirAsyncRuntimeEmplaceToken(done.get());
                        mlirAsyncRuntimeDropRef(child.get().cast(), 1);
                    }
                });
                // SAFETY: live; our reference is dropped by the continuation.
                unsafe { mlirAsyncRuntimeAwaitTokenAndExecute(child.get(), h, r) };
            } else {
                // A blocking await inside a task.
                // SAFETY: main keeps its reference to the gate until the end.
                unsafe { mlirAsyncRuntimeAwaitToken(gate.get()) };
                l.body(format!("unblocked {i}"), || {});
                // SAFETY: the producer's reference.
                unsafe {
                    if i == 3 {
                        mlirAsyncRuntimeSetTokenError(done.get());
                    } else {
                        mlirAsyncRuntimeEmplaceToken(done.get());
                    }
                }
            }
        });
        mlirAsyncRuntimeExecute(handle, resume);
        // SAFETY: live objects; we hold references.
        unsafe {
            mlirAsyncRuntimeAddTokenToGroup(done.get(), group as *mut _);
            mlirAsyncRuntimeDropRef(done.get().cast(), 1);
        }
    }
    log.events.lock().unwrap().push("main opens the gate".into());
    // SAFETY: the producer's reference (main's own stays until below).
    unsafe {
        mlirAsyncRuntimeAddRef(gate.get().cast(), 1);
        mlirAsyncRuntimeEmplaceToken(gate.get());
        mlirAsyncRuntimeAwaitAllInGroup(group as *mut _);
        let error = mlirAsyncRuntimeIsGroupError(group as *mut _);
        log.events.lock().unwrap().push(format!("main: group done, error {error}"));
        mlirAsyncRuntimeDropRef(group as *mut _, 1);
        mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
    }
}

/// Runs the mixed program under `spec` on a fresh instance; its events.
fn run_mixed(spec: &str) -> Vec<String> {
    select_schedule(Some(spec)).expect("a valid spec");
    let log = Arc::new(Log::default());
    mixed_program(&log);
    __mlir_execution_engine_destroy();
    select_schedule(None).unwrap();
    if spec != "off" {
        assert_eq!(log.overlaps.load(Ordering::SeqCst), 0, "{spec}: two task bodies ran at once");
    }
    log.events()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn every_behaviour_runs_under_both_strategies() {
    let _serial = serial();
    let expected = sorted(run_mixed("off"));
    assert_eq!(expected.len(), 6 + 3 * 2 + 3 + 2);
    assert!(expected.contains(&"main: group done, error true".to_string()), "{expected:?}");
    for spec in ["random:1", "random:2", "random:3", "pct:1:3:40", "pct:2:2:40", "pct:3:1:1"] {
        let events = run_mixed(spec);
        assert_eq!(sorted(events.clone()), expected, "{spec}: {events:?}");
        let main_done = events.iter().position(|e| e.starts_with("main: group done")).unwrap();
        assert_eq!(main_done, events.len() - 1, "{spec}: main saw the group complete before a member: {events:?}");
    }
}

#[test]
fn one_seed_gives_one_interleaving() {
    let _serial = serial();
    for spec in ["random:11", "pct:11:3:40"] {
        let first = run_mixed(spec);
        for _ in 0..3 {
            assert_eq!(run_mixed(spec), first, "{spec}");
        }
    }
    // And the seed matters: ten seeds give more than one interleaving.
    for strategy in ["random", "pct"] {
        let orders: std::collections::HashSet<Vec<String>> = (1..=10)
            .map(|seed| run_mixed(&if strategy == "pct" { format!("pct:{seed}:3:40") } else { format!("random:{seed}") }))
            .collect();
        assert!(orders.len() > 1, "{strategy}: every seed gave the same interleaving");
    }
}

#[test]
fn wait_idle_runs_the_tasks_nobody_awaits() {
    let _serial = serial();
    select_schedule(Some("random:5")).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..20 {
        let ran = Arc::clone(&ran);
        let (h, r) = task(move || {
            ran.fetch_add(1, Ordering::SeqCst);
        });
        mlirAsyncRuntimeExecute(h, r);
    }
    assert!(rust_mlir_async_runtime_wait_idle(20_000));
    assert_eq!(ran.load(Ordering::SeqCst), 20);
    assert_eq!(mlir_async_runtime::stats().tasks_in_flight, 0);
    assert!(mlir_async_runtime::schedule_steps() > 0, "choices were made");
    __mlir_execution_engine_destroy();
    select_schedule(None).unwrap();
}

#[test]
fn a_malformed_selection_is_refused_and_changes_nothing() {
    let _serial = serial();
    let err = select_schedule(Some("pct:1:0")).unwrap_err();
    assert!(err.contains("expected `random:SEED`"), "{err}");
    // SAFETY: NUL-terminated strings.
    unsafe {
        assert_eq!(rust_mlir_async_runtime_select_schedule(c"fifo:3".as_ptr()), -1);
        assert_eq!(rust_mlir_async_runtime_select_schedule(c"random:3".as_ptr()), 0);
        assert_eq!(rust_mlir_async_runtime_select_schedule(std::ptr::null()), 0);
    }
}

// ---- child processes ----------------------------------------------------------

const CHILD_ENV: &str = "MLIR_ASYNC_RUNTIME_EXPLORE_TEST";

/// Runs in the child only: the scenario named in `CHILD_ENV`, under the
/// schedule of `MLIR_ASYNC_RUNTIME_SCHEDULE`.
#[test]
fn child_scenario() {
    let Ok(name) = std::env::var(CHILD_ENV) else { return };
    match name.as_str() {
        "mixed" => {
            let log = Arc::new(Log::default());
            mixed_program(&log);
            for e in log.events() {
                println!("{e}");
            }
        }
        "thread-ids" => {
            mlirAsyncRuntimePrintCurrentThreadId();
            let done = TokenPtr::new(mlirAsyncRuntimeCreateToken());
            for _ in 0..3 {
                let (h, r) = task(|| mlirAsyncRuntimePrintCurrentThreadId());
                mlirAsyncRuntimeExecute(h, r);
            }
            let (h, r) = task(move || {
                mlirAsyncRuntimePrintCurrentThreadId();
                // SAFETY: the producer's reference.
                unsafe { mlirAsyncRuntimeEmplaceToken(done.get()) };
            });
            mlirAsyncRuntimeExecute(h, r);
            // SAFETY: live; ours.
            unsafe {
                mlirAsyncRuntimeAwaitToken(done.get());
                mlirAsyncRuntimeDropRef(done.get().cast(), 1);
            }
            mlirAsyncRuntimePrintCurrentThreadId();
        }
        "deadlock" => {
            // A task blocks on a token nobody completes; main awaits it.
            let never = TokenPtr::new(mlirAsyncRuntimeCreateToken());
            let task_done = TokenPtr::new(mlirAsyncRuntimeCreateToken());
            let (h, r) = task(move || {
                // SAFETY: never completed: that is the point.
                unsafe { mlirAsyncRuntimeAwaitToken(never.get()) };
                // SAFETY: the producer's reference.
                unsafe { mlirAsyncRuntimeEmplaceToken(task_done.get()) };
            });
            mlirAsyncRuntimeExecute(h, r);
            // SAFETY: live.
            unsafe { mlirAsyncRuntimeAwaitToken(task_done.get()) };
            println!("not reached");
        }
        other => panic!("unknown scenario {other}"),
    }
    __mlir_execution_engine_destroy();
}

fn child(name: &str, env: &[(&str, &str)]) -> common::ChildRun {
    let mut all = vec![(CHILD_ENV, name)];
    all.extend_from_slice(env);
    run_child("child_scenario", &all, Duration::from_secs(60))
}

/// The lines of the child's own output (the test harness adds its own).
fn program_lines(run: &common::ChildRun) -> Vec<String> {
    run.stdout
        .lines()
        // libtest prints "test NAME ... " before the test's first line.
        .map(|l| l.strip_prefix("test child_scenario ... ").unwrap_or(l))
        .filter(|l| !l.starts_with("running ") && !l.trim().is_empty() && *l != "ok" && !l.starts_with("test result"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_replay_in_another_process_has_the_same_events_and_the_same_trace() {
    let dir = std::env::temp_dir().join(format!("explore-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut outputs = Vec::new();
    let mut traces = Vec::new();
    for i in 0..3 {
        let trace = dir.join(format!("t{i}.json"));
        let run = child("mixed", &[("MLIR_ASYNC_RUNTIME_SCHEDULE", "pct:4:3:40"), ("MLIR_ASYNC_RUNTIME_TRACE", trace.to_str().unwrap())]);
        assert!(run.succeeded(), "{}", run.describe());
        outputs.push(program_lines(&run));
        traces.push(std::fs::read(&trace).unwrap());
    }
    assert!(outputs[0].len() >= 17, "{:?}", outputs[0]);
    assert!(outputs.iter().all(|o| *o == outputs[0]), "{outputs:?}");
    assert!(traces.iter().all(|t| *t == traces[0]), "the trace differs between replays");
    let json: serde_json::Value = serde_json::from_slice(&traces[0]).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    assert!(events.iter().all(|e| e["pid"] == 1), "no process id under a deterministic schedule");
    let tasks = events.iter().filter(|e| e["name"] == "task").count();
    assert_eq!(tasks, 6 + 3 * 2, "every task and continuation is in the trace");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn printed_thread_ids_are_logical_and_stable() {
    let ids = |seed: &str| {
        let run = child("thread-ids", &[("MLIR_ASYNC_RUNTIME_SCHEDULE", seed)]);
        assert!(run.succeeded(), "{}", run.describe());
        program_lines(&run)
    };
    let first = ids("random:9");
    assert_eq!(first.len(), 6, "{first:?}");
    assert_eq!(first[0], "Current thread id: 0", "main joined first");
    assert_eq!(first[5], "Current thread id: 0", "main again");
    let workers: Vec<u64> =
        first[1..5].iter().map(|l| l.rsplit(' ').next().unwrap().parse().unwrap()).collect();
    assert!(workers.iter().all(|&id| (1..=4).contains(&id)), "{first:?}");
    assert_eq!(ids("random:9"), first, "the same ids in a replay");
}

#[test]
fn a_deadlock_is_one_line_naming_the_schedule_not_a_hang() {
    let start = Instant::now();
    let run = child("deadlock", &[("MLIR_ASYNC_RUNTIME_SCHEDULE", "random:21")]);
    assert!(run.status.is_some(), "hung: {}", run.describe());
    assert!(!run.succeeded(), "{}", run.describe());
    let lines: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("mlir_async_runtime:")).collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    for part in ["deadlock", "random:21", "MLIR_ASYNC_RUNTIME_SCHEDULE=random:21", "1 program thread(s) and 1 task(s) blocked"] {
        assert!(lines[0].contains(part), "{part:?} missing from {}", lines[0]);
    }
    assert!(!run.stdout.contains("not reached"));
    assert!(start.elapsed() < Duration::from_secs(30));
}
