//! The races behind the C++ runtime's historic bugs, run many times on real
//! threads. They pass quietly in a normal build; their point is the
//! sanitizer runs (`make sanitize`), where AddressSanitizer turns a use
//! after free and ThreadSanitizer a data race into a failure, and runs with
//! schedule fuzzing (MLIR_ASYNC_RUNTIME_FUZZ) that widen the windows.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use common::{expect_signals, signal, task};
use mlir_async_runtime::abi::*;
use mlir_async_runtime::Group;
use mlir_async_runtime::Token;
use mlir_async_runtime::Value;

const ROUNDS: usize = 2_000;

/// The producer's completion drops the last reference when the consumer
/// dropped its own first (a fire-and-forget `async.execute`): emplace must
/// not touch the object after that drop (upstream's use after free).
#[test]
fn completion_drops_the_last_reference() {
    for _ in 0..100 {
        let token = mlirAsyncRuntimeCreateToken();
        let value = mlirAsyncRuntimeCreateValue(16);
        // SAFETY: each reference is dropped exactly once; the producer's go
        // last, inside the completions.
        unsafe {
            mlirAsyncRuntimeDropRef(token.cast(), 1);
            mlirAsyncRuntimeDropRef(value.cast(), 1);
            mlirAsyncRuntimeEmplaceToken(token);
            mlirAsyncRuntimeSetValueError(value);
        }
    }
}

/// The consumer's last DropRef against the producer's completion on two
/// threads, started together.
#[test]
fn last_drop_ref_races_with_completion() {
    let barrier = Arc::new(Barrier::new(2));
    let (tx, rx) = std::sync::mpsc::channel::<usize>();
    let b = Arc::clone(&barrier);
    let producer = thread::spawn(move || {
        for addr in rx {
            b.wait();
            // SAFETY: the producer's reference.
            unsafe { mlirAsyncRuntimeEmplaceToken(addr as *mut Token) };
        }
    });
    for _ in 0..ROUNDS {
        let token = mlirAsyncRuntimeCreateToken();
        tx.send(token as usize).unwrap();
        barrier.wait();
        // SAFETY: the consumer's reference, its last use.
        unsafe { mlirAsyncRuntimeDropRef(token.cast(), 1) };
    }
    drop(tx);
    producer.join().unwrap();
}

/// A continuation that drops the last reference to the value it awaited,
/// racing with the emplace that fired it.
#[test]
fn continuation_drops_the_last_reference_during_completion() {
    let (tx, rx) = signal();
    for _ in 0..ROUNDS {
        let value = mlirAsyncRuntimeCreateValue(8);
        let addr = value as usize;
        let tx = tx.clone();
        let (handle, resume) = task(move || {
            // SAFETY: the continuation owns the consumer's reference.
            unsafe { mlirAsyncRuntimeDropRef(addr as *mut _, 1) };
            tx.send(()).unwrap();
        });
        // SAFETY: live value; the consumer's reference moves to the task.
        unsafe { mlirAsyncRuntimeAwaitValueAndExecute(value, handle, resume) };
        // SAFETY: the producer's reference.
        let (h, r) = task(move || unsafe { mlirAsyncRuntimeEmplaceValue(addr as *mut Value) });
        mlirAsyncRuntimeExecute(h, r);
    }
    expect_signals(&rx, ROUNDS);
}

/// AddTokenToGroup, the token's completion and the group's await, on three
/// threads, where the adder's and the awaiter's group references are gone
/// as soon as they are done.
#[test]
fn add_to_group_races_with_completion_and_await() {
    let done = Arc::new(AtomicUsize::new(0));
    for _ in 0..ROUNDS / 4 {
        let group = mlirAsyncRuntimeCreateGroup(2) as usize;
        let tokens = [mlirAsyncRuntimeCreateToken() as usize, mlirAsyncRuntimeCreateToken() as usize];
        // SAFETY: one group reference per thread below.
        unsafe { mlirAsyncRuntimeAddRef(group as *mut _, 1) };
        let adder = thread::spawn(move || unsafe {
            for t in tokens {
                mlirAsyncRuntimeAddTokenToGroup(t as *mut Token, group as *mut Group);
                mlirAsyncRuntimeDropRef(t as *mut _, 1);
            }
            mlirAsyncRuntimeDropRef(group as *mut _, 1);
        });
        let completer = thread::spawn(move || unsafe {
            mlirAsyncRuntimeEmplaceToken(tokens[1] as *mut Token);
            mlirAsyncRuntimeSetTokenError(tokens[0] as *mut Token);
        });
        let d = Arc::clone(&done);
        // SAFETY: the awaiter's group reference.
        unsafe {
            mlirAsyncRuntimeAwaitAllInGroup(group as *mut Group);
            assert!(mlirAsyncRuntimeIsGroupError(group as *mut Group));
            mlirAsyncRuntimeDropRef(group as *mut _, 1);
        }
        d.fetch_add(1, Ordering::Relaxed);
        adder.join().unwrap();
        completer.join().unwrap();
    }
    assert_eq!(done.load(Ordering::Relaxed), ROUNDS / 4);
}
