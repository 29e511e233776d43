//! Tasks that switch out on one thread and back in on another read the
//! new thread's thread-locals (threads/README.md, "Thread-locals"): the
//! runtime's migration check (`MLIR_ASYNC_RUNTIME_CHECK_MIGRATION=1`,
//! `exec/threads/migration.rs`) compares, in the frame that switched,
//! the five thread-locals read after the switch with a fresh reading.
//! Fails when the accessors are inlined (`mutation-tls-inline`,
//! `make mutations`), and when no task moved to another thread (the check
//! then proved nothing).

mod common;

use std::time::Duration;

use common::{run_child, GatedTasks};
use mlir_async_runtime::abi::*;

const CHILD_ENV: &str = "MLIR_ASYNC_RUNTIME_TEST_MIGRATION_CHILD";

/// Rounds of `TASKS` tasks that each block on the round's gate, which the
/// test thread opens once all of them started; with two workers, about
/// half of them are resumed by the other worker.
fn blocked_tasks_resumed_anywhere() {
    const ROUNDS: usize = 20;
    const TASKS: usize = 200;
    for _ in 0..ROUNDS {
        let tasks = GatedTasks::start(TASKS);
        tasks.wait_all_started(Duration::from_secs(30)).expect("the round's tasks start");
        tasks.open();
        assert!(tasks.wait_all_finished(Duration::from_secs(30)), "the round's tasks finish");
    }
    __mlir_execution_engine_destroy();
    let (migrations, stale) = mlir_async_runtime::migration_check();
    println!("migrations: {migrations} stale: {stale}");
}

#[test]
fn child() {
    if std::env::var(CHILD_ENV).is_ok() {
        blocked_tasks_resumed_anywhere();
        std::process::exit(0);
    }
}

#[test]
fn a_task_resumed_on_another_thread_reads_that_threads_thread_locals() {
    let run = run_child(
        "child",
        &[
            (CHILD_ENV, "1"),
            ("MLIR_ASYNC_RUNTIME_WORKERS", "2"),
            ("MLIR_ASYNC_RUNTIME_CHECK_MIGRATION", "1"),
        ],
        Duration::from_secs(120),
    );
    assert!(run.succeeded(), "{}", run.describe());
    let line = run
        .stdout
        .lines()
        .find_map(|l| l.split_once("migrations:").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("{}", run.describe()));
    let numbers: Vec<u64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let (migrations, stale) = (numbers[0], numbers[1]);
    assert!(migrations > 0, "no task was resumed on another thread: the check proved nothing ({line})");
    assert_eq!(stale, 0, "thread-locals read stale after a switch ({line}): {}", run.describe());
}
