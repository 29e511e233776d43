//! Teardown and live-object accounting. These tests read process-wide
//! counters, so this binary runs them one at a time.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::task;
use mlir_async_runtime::abi::*;
use mlir_async_runtime::{stats as snapshot, RuntimeStats};

static SERIAL: Mutex<()> = Mutex::new(());

fn stats() -> RuntimeStats {
    let mut out = RuntimeStats::default();
    // SAFETY: a valid output pointer.
    unsafe { rust_mlir_async_runtime_stats(&mut out) };
    out
}

/// Threads of this process named like the pool's workers.
fn worker_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("mlir-async-"))
        .count()
}

#[test]
fn live_counts_follow_creation_and_last_reference() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert!(rust_mlir_async_runtime_wait_idle(10_000));
    let before = stats();
    let token = mlirAsyncRuntimeCreateToken();
    let value = mlirAsyncRuntimeCreateValue(8);
    let group = mlirAsyncRuntimeCreateGroup(1);
    let during = stats();
    assert_eq!(during.live_tokens, before.live_tokens + 1);
    assert_eq!(during.live_values, before.live_values + 1);
    assert_eq!(during.live_groups, before.live_groups + 1);
    // SAFETY: live objects; every reference is dropped exactly once.
    unsafe {
        mlirAsyncRuntimeAddTokenToGroup(token, group);
        mlirAsyncRuntimeEmplaceToken(token);
        mlirAsyncRuntimeDropRef(token.cast(), 1);
        assert_eq!(stats().live_tokens, before.live_tokens, "last token reference frees it");
        mlirAsyncRuntimeEmplaceValue(value);
        assert_eq!(stats().live_values, before.live_values + 1, "consumer still holds one");
        mlirAsyncRuntimeDropRef(value.cast(), 1);
        mlirAsyncRuntimeDropRef(group.cast(), 1);
    }
    assert_eq!(stats(), before);
    assert_eq!(snapshot(), before);
}

#[test]
fn destroy_waits_for_tasks_in_flight_and_a_new_runtime_starts_after() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const TASKS: usize = 16;
    let finished = Arc::new(AtomicUsize::new(0));
    let ran_after_destroy = Arc::new(AtomicBool::new(false));
    let destroyed = Arc::new(AtomicBool::new(false));
    for _ in 0..TASKS {
        let (finished, destroyed, ran_after) =
            (Arc::clone(&finished), Arc::clone(&destroyed), Arc::clone(&ran_after_destroy));
        let (handle, resume) = task(move || {
            thread::sleep(Duration::from_millis(30));
            if destroyed.load(Ordering::SeqCst) {
                ran_after.store(true, Ordering::SeqCst);
            }
            finished.fetch_add(1, Ordering::SeqCst);
        });
        mlirAsyncRuntimeExecute(handle, resume);
    }
    assert!(stats().tasks_in_flight > 0, "tasks are still sleeping");
    __mlir_execution_engine_destroy();
    destroyed.store(true, Ordering::SeqCst);
    assert_eq!(finished.load(Ordering::SeqCst), TASKS, "destroy returned before its tasks finished");
    assert_eq!(stats().tasks_in_flight, 0);
    thread::sleep(Duration::from_millis(50));
    assert!(!ran_after_destroy.load(Ordering::SeqCst), "a task ran after destroy returned");
    assert_eq!(worker_threads(), 0, "destroy returned before its workers exited");

    // A later call starts a fresh runtime that works.
    let (tx, rx) = common::signal();
    let (handle, resume) = task(move || tx.send(()).unwrap());
    mlirAsyncRuntimeExecute(handle, resume);
    common::expect_signals(&rx, 1);
    assert!(mlirAsyncRuntimGetNumWorkerThreads() >= 1);
    assert!(worker_threads() >= 1);
    __mlir_runner_destroy();
    assert_eq!(worker_threads(), 0);
}

#[test]
fn destroy_without_a_runtime_is_a_no_op() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    __mlir_execution_engine_destroy();
    __mlir_execution_engine_destroy();
}

#[test]
fn wait_idle_times_out_while_a_task_runs() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let release = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&release);
    let (handle, resume) = task(move || {
        while !flag.load(Ordering::SeqCst) {
            thread::sleep(Duration::from_millis(1));
        }
    });
    mlirAsyncRuntimeExecute(handle, resume);
    assert!(!rust_mlir_async_runtime_wait_idle(50));
    assert_eq!(stats().tasks_in_flight, 1);
    release.store(true, Ordering::SeqCst);
    assert!(rust_mlir_async_runtime_wait_idle(10_000));
}

#[test]
fn destroy_waits_for_continuations_made_ready_by_tasks_in_flight() {
    // Work that is not queued yet when destroy starts: each task completes
    // a token on which a continuation waits. The continuation only enters
    // the count when the task completes the token, inside the task, so the
    // instance must not look idle in between (runtime/src/exec/threads/README.md).
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const CHAINS: usize = 8;
    let continuations = Arc::new(AtomicUsize::new(0));
    for _ in 0..CHAINS {
        let token = mlirAsyncRuntimeCreateToken();
        let addr = token as usize;
        let done = Arc::clone(&continuations);
        let (handle, resume) = task(move || {
            thread::sleep(Duration::from_millis(20));
            done.fetch_add(1, Ordering::SeqCst);
            // SAFETY: the continuation owns the consumer's reference.
            unsafe { mlirAsyncRuntimeDropRef(addr as *mut _, 1) };
        });
        // SAFETY: live token; the consumer's reference moves to the
        // continuation, the producer's to the task.
        unsafe { mlirAsyncRuntimeAwaitTokenAndExecute(token, handle, resume) };
        let (handle, resume) = task(move || {
            thread::sleep(Duration::from_millis(20));
            // SAFETY: the producer's reference.
            unsafe { mlirAsyncRuntimeEmplaceToken(addr as *mut _) };
        });
        mlirAsyncRuntimeExecute(handle, resume);
    }
    __mlir_execution_engine_destroy();
    assert_eq!(continuations.load(Ordering::SeqCst), CHAINS, "destroy returned before the continuations ran");
    assert_eq!(stats().tasks_in_flight, 0);
    assert_eq!(worker_threads(), 0);
}
