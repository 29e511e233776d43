//! The runtime's environment variables at their edges and with bad values:
//! every setting must run a program to its end, saying at most one line
//! per bad value on stderr, never a panic trace or an abort. Each setting
//! runs in a child process (this test binary again), since a runtime reads
//! its configuration once.
//!
//! The child's program, twice, each on an instance of its own: tasks that
//! block in an `Await*` on a gate (with task stacks off they block their
//! threads: as many as the thread cap lets a first-in-first-out pool
//! complete), the gate opened by another task, and `Execute`s awaited from
//! outside; then the destroy hook. A bad value is said once per instance.

mod common;

use std::time::Duration;

use common::{execute_and_await, run_child, task, GatedTasks};
use mlir_async_runtime::abi::*;

const CHILD_ENV: &str = "MLIR_ASYNC_RUNTIME_TEST_FLAGS_CHILD";

/// The tasks the program blocks on its gate, unless a setting says.
const BLOCKED_ENV: &str = "MLIR_ASYNC_RUNTIME_TEST_FLAGS_BLOCKED";

/// The settings: each a list of variables set together, and how many
/// distinct lines the runtime may say about them.
const SETTINGS: &[(&[(&str, &str)], usize)] = &[
    (&[("MLIR_ASYNC_RUNTIME_MAX_THREADS", "1")], 0),
    // Two threads without task stacks: one task blocked, one thread left
    // for the opener (a first-in-first-out pool of two completes no more;
    // with six, ours says once that every thread is blocked, and hangs).
    (&[("MLIR_ASYNC_RUNTIME_MAX_THREADS", "2"), ("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0"), (BLOCKED_ENV, "1")], 0),
    // The largest cap, and past it (aae4f11 aborted on the first, when it
    // was 32767; the drainers word's fields hold 16383 since).
    (&[("MLIR_ASYNC_RUNTIME_MAX_THREADS", "16383"), ("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0")], 0),
    (&[("MLIR_ASYNC_RUNTIME_MAX_THREADS", "16384")], 1),
    (&[("MLIR_ASYNC_RUNTIME_MAX_THREADS", "32767"), ("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0")], 1),
    // (The most workers, 4095, and past it: `config.rs`'s unit tests. A
    // pool of 4095 workers on 2 cores runs this program for minutes.)
    (&[("MLIR_ASYNC_RUNTIME_MAX_THREADS", "18446744073709551616")], 1),
    (&[("MLIR_ASYNC_RUNTIME_MAX_THREADS", "0")], 1),
    (&[("MLIR_ASYNC_RUNTIME_MAX_THREADS", "-3")], 1),
    (&[("MLIR_ASYNC_RUNTIME_MAX_THREADS", "many")], 1),
    (&[("MLIR_ASYNC_RUNTIME_WORKERS", "0")], 1),
    (&[("MLIR_ASYNC_RUNTIME_WORKERS", "1"), ("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0")], 0),
    (&[("MLIR_ASYNC_RUNTIME_WORKERS", "700"), ("MLIR_ASYNC_RUNTIME_MAX_THREADS", "8")], 1),
    (&[("MLIR_ASYNC_RUNTIME_WORKERS", "")], 1),
    (&[("MLIR_ASYNC_RUNTIME_TASK_STACKS", "maybe")], 1),
    (&[("MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS", "any")], 0),
    (&[("MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS", "some")], 1),
    (&[("MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE", "1")], 1),
    (&[("MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE", "big")], 1),
    // A tebibyte a stack: reserved, never touched (MAP_NORESERVE), or
    // refused by the kernel, and then said once and run on the threads.
    (&[("MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE", "1099511627776")], 1),
    // A knob that is gone (issue 41): ignored.
    (&[("MLIR_ASYNC_RUNTIME_SPARE_KEEP_ALIVE_MS", "1")], 0),
];

/// The child's program (see the module's header).
fn program() {
    let n = std::env::var(BLOCKED_ENV).map_or(6, |n| n.parse().unwrap());
    for _ in 0..2 {
        let blocked = GatedTasks::start(n);
        let gate = blocked.gate();
        // SAFETY: the opener owns the producer's reference (the creator's
        // stays with `blocked`, dropped by `open`'s second half below).
        unsafe { mlirAsyncRuntimeAddRef(gate.get().cast(), 1) };
        let (h, r) = task(move || unsafe {
            mlirAsyncRuntimeEmplaceToken(gate.get());
            mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
        });
        mlirAsyncRuntimeExecute(h, r);
        for _ in 0..50 {
            execute_and_await();
        }
        assert!(blocked.wait_all_finished(Duration::from_secs(20)), "{} of {n} blocked tasks finished", blocked.finished());
        // SAFETY: the creator's reference, ours.
        unsafe { mlirAsyncRuntimeDropRef(gate.get().cast(), 1) };
        __mlir_execution_engine_destroy();
    }
    println!("flags child: done");
}

#[test]
fn flags_child() {
    if std::env::var(CHILD_ENV).is_ok() {
        program();
    }
}

#[test]
fn every_setting_runs_the_program_and_says_at_most_one_line_per_bad_value() {
    let mut failed = Vec::new();
    for (vars, lines) in SETTINGS {
        let mut env: Vec<(&str, &str)> = vars.to_vec();
        env.push((CHILD_ENV, "1"));
        let run = run_child("flags_child", &env, Duration::from_secs(60));
        let mut said: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("mlir_async_runtime:")).collect();
        said.sort_unstable();
        said.dedup();
        let panicked = run.stderr.contains("panicked");
        if !run.succeeded() || !run.stdout.contains("flags child: done") || panicked || said.len() > *lines {
            failed.push(format!("{vars:?}: {} distinct line(s) said, at most {lines}: {}", said.len(), run.describe()));
        }
    }
    assert!(failed.is_empty(), "{} of {} settings failed:\n{}", failed.len(), SETTINGS.len(), failed.join("\n"));
}
