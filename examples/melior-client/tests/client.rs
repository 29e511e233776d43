//! The melior client end to end: a module built and lowered with melior,
//! JIT-compiled by MLIR 19's ExecutionEngine with the runtime registered
//! through `symbols()`, its value and its failing token awaited from tokio
//! and from a blocking caller; then 1,000 runs across 20 engines in one
//! process with nothing leaked.
//!
//! The runtime instance and its leak count are process-wide: the tests run
//! one at a time.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use melior_client::{context, expected_sum, lowered_module, Program};
use mlir_async_runtime::{stats, Runtime};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_and_a_failing_token_are_awaited_from_tokio() {
    let _serial = serial();
    let runtime = Runtime::start().guard();
    let context = context();
    let module = lowered_module(&context).unwrap();
    let program = Program::new(&module);
    // The task may still be running when the future is first polled.
    let n = 20_000_000;
    let value = program.sum(n);
    let token = program.failing();
    let (value, token) = tokio::time::timeout(TIMEOUT, async { tokio::join!(value, token) })
        .await
        .expect("a future was never woken");
    assert_eq!(value.expect("sum sets no error").read::<i64>(), expected_sum(n));
    let error = token.expect_err("failing's cf.assert puts its token in the error state");
    assert_eq!(error.kind(), "token");
    // Many at once, from tokio tasks on other threads.
    let mut joins = Vec::new();
    for n in 0..200 {
        let value = program.sum(n);
        joins.push(tokio::spawn(async move { (n, value.await) }));
    }
    for join in joins {
        let (n, value) = tokio::time::timeout(TIMEOUT, join).await.unwrap().unwrap();
        assert_eq!(value.unwrap().read::<i64>(), expected_sum(n));
    }
    drop(program);
    assert_eq!(runtime.shutdown(), Ok(()), "a token or value leaked");
}

#[test]
fn a_value_and_a_failing_token_are_waited_for_by_a_blocking_caller() {
    let _serial = serial();
    let runtime = Runtime::start().guard();
    let context = context();
    let module = lowered_module(&context).unwrap();
    let program = Program::new(&module);
    let value = program.sum(1_000_000);
    let token = program.failing();
    assert!(token.wait().is_err());
    assert!(token.is_error());
    assert_eq!(value.wait().unwrap().read::<i64>(), expected_sum(1_000_000));
    drop(token);
    drop(program);
    assert_eq!(runtime.shutdown(), Ok(()), "a token or value leaked");
}

/// The same module 1,000 times across 20 engines, one after another, in
/// one process: every result right, every error reported, nothing leaked,
/// and the runtime shut down and restarted between engines.
#[test]
fn a_thousand_runs_across_twenty_engines_leak_nothing() {
    let _serial = serial();
    let context = context();
    let module = lowered_module(&context).unwrap();
    for engine in 0..20 {
        let runtime = Runtime::start().guard();
        let program = Program::new(&module);
        for run in 0..50 {
            let n = (engine * 50 + run) as i64;
            let value = program.sum(n);
            let token = program.failing();
            assert_eq!(value.wait().unwrap().read::<i64>(), expected_sum(n), "engine {engine} run {run}");
            assert!(token.wait().is_err(), "engine {engine} run {run}");
        }
        drop(program);
        assert_eq!(runtime.shutdown(), Ok(()), "engine {engine} leaked");
        assert!(!Runtime::is_running());
    }
    assert_eq!(stats().live_objects(), 0);
}

#[test]
fn the_pipeline_is_mlir_19s_from_pipelines_txt() {
    let pipeline = melior_client::lowering_pipeline();
    assert!(pipeline.starts_with("builtin.module(async-func-to-async-runtime,async-to-async-runtime,"), "{pipeline}");
    assert!(pipeline.ends_with(",reconcile-unrealized-casts)"), "{pipeline}");
}
