//! State transitions of tokens, values and groups through the C ABI, as
//! compiled code drives them.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{expect_signals, signal, task};
use mlir_async_runtime::abi::*;
use mlir_async_runtime::Token;
use mlir_async_runtime::Value;
use mlir_async_runtime::Outcome;

fn token_state(token: *mut Token) -> Option<Outcome> {
    // SAFETY: the test holds a reference.
    unsafe { Token::from_abi(token, "test") }.completion().state()
}

#[test]
fn token_starts_pending_with_two_references() {
    let token = mlirAsyncRuntimeCreateToken();
    // SAFETY: live token, references held by the test.
    unsafe {
        assert_eq!(Token::from_abi(token, "test").ref_count(), 2);
        assert_eq!(token_state(token), None);
        assert!(!mlirAsyncRuntimeIsTokenError(token));
        mlirAsyncRuntimeEmplaceToken(token);
        assert_eq!(Token::from_abi(token, "test").ref_count(), 1, "emplace drops the producer's reference");
        assert_eq!(token_state(token), Some(Outcome::Available));
        assert!(!mlirAsyncRuntimeIsTokenError(token));
        mlirAsyncRuntimeDropRef(token.cast(), 1);
    }
}

#[test]
fn token_error_is_final_and_visible() {
    let token = mlirAsyncRuntimeCreateToken();
    // SAFETY: live token.
    unsafe {
        mlirAsyncRuntimeSetTokenError(token);
        assert_eq!(token_state(token), Some(Outcome::Error));
        assert!(mlirAsyncRuntimeIsTokenError(token));
        mlirAsyncRuntimeAwaitToken(token); // returns at once
        mlirAsyncRuntimeDropRef(token.cast(), 1);
    }
}

/// A producer that is the sole holder of what it completes frees it at
/// once, without completing it (nobody could see the outcome), unless a
/// waiter was linked before the other holders dropped their references: a
/// group's counter here, which must still fire. Run under the sanitizers
/// too (`make sanitize`): the freed objects must be neither leaked nor
/// touched again.
#[test]
fn the_sole_holders_completion_frees_at_once_and_fires_a_waiter_linked_before() {
    use common::TokenPtr;
    for round in 0..1000 {
        let value = mlirAsyncRuntimeCreateValue(8);
        let token = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let grouped = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let group = mlirAsyncRuntimeCreateGroup(1);
        // SAFETY: live objects; each creator's reference is dropped here,
        // each producer's by its completion, the group's after its await.
        unsafe {
            mlirAsyncRuntimeDropRef(value.cast(), 1);
            mlirAsyncRuntimeDropRef(token.get().cast(), 1);
            assert_eq!(mlirAsyncRuntimeAddTokenToGroup(grouped.get(), group), 0);
            mlirAsyncRuntimeDropRef(grouped.get().cast(), 1);
            *mlirAsyncRuntimeGetValueStorage(value).cast::<u64>() = round;
            let value_addr = value as usize;
            thread::spawn(move || {
                mlirAsyncRuntimeEmplaceValue(value_addr as *mut Value);
                mlirAsyncRuntimeEmplaceToken(token.get());
                mlirAsyncRuntimeEmplaceToken(grouped.get());
            })
            .join()
            .unwrap();
            mlirAsyncRuntimeAwaitAllInGroup(group);
            assert!(!mlirAsyncRuntimeIsGroupError(group));
            mlirAsyncRuntimeDropRef(group.cast(), 1);
        }
    }
}

#[test]
fn add_ref_and_drop_ref_balance() {
    let token = mlirAsyncRuntimeCreateToken();
    // SAFETY: live token; counts balanced below.
    unsafe {
        mlirAsyncRuntimeAddRef(token.cast(), 3);
        assert_eq!(Token::from_abi(token, "test").ref_count(), 5);
        mlirAsyncRuntimeDropRef(token.cast(), 2);
        assert_eq!(Token::from_abi(token, "test").ref_count(), 3);
        mlirAsyncRuntimeEmplaceToken(token);
        mlirAsyncRuntimeDropRef(token.cast(), 2);
    }
}

#[test]
fn blocking_await_wakes_on_emplace_from_another_thread() {
    let token = mlirAsyncRuntimeCreateToken();
    let addr = token as usize;
    let producer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        // SAFETY: the producer's reference.
        unsafe { mlirAsyncRuntimeEmplaceToken(addr as *mut Token) };
    });
    // SAFETY: the test's reference.
    unsafe {
        mlirAsyncRuntimeAwaitToken(token);
        assert_eq!(token_state(token), Some(Outcome::Available));
        mlirAsyncRuntimeDropRef(token.cast(), 1);
    }
    producer.join().unwrap();
}

#[test]
fn many_blocking_waiters_all_wake() {
    let token = mlirAsyncRuntimeCreateToken();
    let addr = token as usize;
    // SAFETY: one reference per waiter thread.
    unsafe { mlirAsyncRuntimeAddRef(token.cast(), 8) };
    let waiters: Vec<_> = (0..8)
        .map(|_| {
            thread::spawn(move || {
                let token = addr as *mut Token;
                // SAFETY: this thread's reference.
                unsafe {
                    mlirAsyncRuntimeAwaitToken(token);
                    let error = mlirAsyncRuntimeIsTokenError(token);
                    mlirAsyncRuntimeDropRef(token.cast(), 1);
                    error
                }
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(20));
    // SAFETY: the producer's and the test's references.
    unsafe {
        mlirAsyncRuntimeSetTokenError(token);
        mlirAsyncRuntimeDropRef(token.cast(), 1);
    }
    for w in waiters {
        assert!(w.join().unwrap(), "every waiter sees the error");
    }
}

#[test]
fn continuation_registered_before_completion_runs_after_it() {
    let token = mlirAsyncRuntimeCreateToken();
    let addr = token as usize;
    let (tx, rx) = signal();
    let (handle, resume) = task(move || {
        assert_eq!(token_state(addr as *mut Token), Some(Outcome::Available));
        // SAFETY: the reference the test handed to this continuation.
        unsafe { mlirAsyncRuntimeDropRef(addr as *mut _, 1) };
        tx.send(()).unwrap();
    });
    // SAFETY: live token; the test's reference moves to the continuation.
    unsafe {
        mlirAsyncRuntimeAwaitTokenAndExecute(token, handle, resume);
        thread::sleep(Duration::from_millis(20));
        assert!(rx.try_recv().is_err(), "continuation ran before completion");
        mlirAsyncRuntimeEmplaceToken(token);
    }
    expect_signals(&rx, 1);
}

#[test]
fn continuation_on_completed_token_runs_at_once_on_a_worker() {
    let token = mlirAsyncRuntimeCreateToken();
    let (tx, rx) = signal();
    let (handle, resume) = task(move || {
        assert!(on_worker(), "continuations run on the pool");
        tx.send(()).unwrap();
    });
    // SAFETY: live token.
    unsafe {
        mlirAsyncRuntimeEmplaceToken(token);
        mlirAsyncRuntimeAwaitTokenAndExecute(token, handle, resume);
    }
    expect_signals(&rx, 1);
    // SAFETY: the test's reference.
    unsafe { mlirAsyncRuntimeDropRef(token.cast(), 1) };
}

fn on_worker() -> bool {
    mlir_async_runtime::on_runtime_thread()
}

#[test]
fn every_continuation_fires_once_either_side_of_completion() {
    // Every continuation fires exactly once, whichever side of the
    // completion it was registered on.
    let token = mlirAsyncRuntimeCreateToken();
    let fired = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = signal();
    for i in 0..200 {
        let (fired, tx) = (Arc::clone(&fired), tx.clone());
        let (handle, resume) = task(move || {
            fired.fetch_add(1, Ordering::SeqCst);
            tx.send(()).unwrap();
        });
        // SAFETY: live token.
        unsafe {
            if i == 100 {
                mlirAsyncRuntimeEmplaceToken(token);
            }
            mlirAsyncRuntimeAwaitTokenAndExecute(token, handle, resume);
        }
    }
    expect_signals(&rx, 200);
    assert_eq!(fired.load(Ordering::SeqCst), 200);
    // SAFETY: the test's reference.
    unsafe { mlirAsyncRuntimeDropRef(token.cast(), 1) };
}

#[test]
fn value_payload_written_before_emplace_is_read_after_await() {
    let value = mlirAsyncRuntimeCreateValue(24);
    let addr = value as usize;
    let producer = thread::spawn(move || {
        let value = addr as *mut Value;
        // SAFETY: the producer's reference; 24 bytes of storage.
        unsafe {
            let storage = mlirAsyncRuntimeGetValueStorage(value);
            assert_eq!(storage as usize % 16, 0, "payload is 16-byte aligned");
            storage.cast::<[u64; 3]>().write([7, 8, 9]);
            mlirAsyncRuntimeEmplaceValue(value);
        }
    });
    // SAFETY: the test's reference.
    unsafe {
        mlirAsyncRuntimeAwaitValue(value);
        assert!(!mlirAsyncRuntimeIsValueError(value));
        let payload = mlirAsyncRuntimeGetValueStorage(value).cast::<[u64; 3]>().read();
        assert_eq!(payload, [7, 8, 9]);
    }
    // The awaiter may wake before the producer's emplace has dropped its
    // reference (it wakes waiters first): count only after it returned.
    producer.join().unwrap();
    // SAFETY: the test's reference.
    unsafe {
        assert_eq!(Value::from_abi(value, "test").ref_count(), 1);
        mlirAsyncRuntimeDropRef(value.cast(), 1);
    }
}

#[test]
fn value_error_and_zero_sized_storage() {
    let value = mlirAsyncRuntimeCreateValue(0);
    // SAFETY: live value.
    unsafe {
        assert!(!mlirAsyncRuntimeGetValueStorage(value).is_null());
        mlirAsyncRuntimeSetValueError(value);
        mlirAsyncRuntimeAwaitValue(value);
        assert!(mlirAsyncRuntimeIsValueError(value));
        mlirAsyncRuntimeDropRef(value.cast(), 1);
    }
}

#[test]
fn value_storage_starts_zeroed_even_in_a_reused_block() {
    // Values freed on this thread come back from its free lists with the
    // old payload in them; every size class a payload can fall in, around
    // the 16 bytes that one store zeroes.
    for size in [1usize, 7, 8, 13, 16, 17, 24, 40, 100] {
        for round in 0..3 {
            let value = mlirAsyncRuntimeCreateValue(size as i64);
            // SAFETY: live value with `size` bytes of storage.
            unsafe {
                let storage = mlirAsyncRuntimeGetValueStorage(value);
                let bytes = std::slice::from_raw_parts(storage, size);
                assert!(bytes.iter().all(|&b| b == 0), "a {size}-byte payload not zeroed (round {round}): {bytes:?}");
                storage.write_bytes(0xff, size);
                mlirAsyncRuntimeDropRef(value.cast(), 2);
            }
        }
    }
}

#[test]
fn value_continuation_sees_payload() {
    let value = mlirAsyncRuntimeCreateValue(8);
    let addr = value as usize;
    let (tx, rx) = std::sync::mpsc::channel();
    let (handle, resume) = task(move || {
        let value = addr as *mut Value;
        // SAFETY: the test's reference, handed to this continuation.
        unsafe {
            tx.send(mlirAsyncRuntimeGetValueStorage(value).cast::<f64>().read()).unwrap();
            mlirAsyncRuntimeDropRef(value.cast(), 1);
        }
    });
    // SAFETY: live value.
    unsafe {
        mlirAsyncRuntimeAwaitValueAndExecute(value, handle, resume);
        mlirAsyncRuntimeGetValueStorage(value).cast::<f64>().write(2.5);
        mlirAsyncRuntimeEmplaceValue(value);
    }
    assert_eq!(rx.recv_timeout(common::TIMEOUT).unwrap(), 2.5);
}

#[test]
fn execute_runs_on_a_worker() {
    let (tx, rx) = signal();
    let (handle, resume) = task(move || {
        assert!(on_worker());
        tx.send(()).unwrap();
    });
    mlirAsyncRuntimeExecute(handle, resume);
    expect_signals(&rx, 1);
    assert!(mlirAsyncRuntimGetNumWorkerThreads() >= 1);
}

/// A chain where each continuation completes the next token: 200,000 links
/// would overflow any stack if continuations ran inline.
#[test]
fn long_continuation_chain_does_not_grow_the_stack() {
    const LINKS: usize = 200_000;
    let tokens: Arc<Vec<usize>> =
        Arc::new((0..=LINKS).map(|_| mlirAsyncRuntimeCreateToken() as usize).collect());
    let (tx, rx) = signal();
    for i in 0..LINKS {
        let (links, tx) = (Arc::clone(&tokens), tx.clone());
        let (handle, resume) = task(move || {
            // SAFETY: completes the next link with its producer reference,
            // and drops this link's waiter reference.
            unsafe {
                mlirAsyncRuntimeEmplaceToken(links[i + 1] as *mut Token);
                mlirAsyncRuntimeDropRef(links[i] as *mut _, 1);
            }
            if i + 1 == LINKS {
                tx.send(()).unwrap();
            }
        });
        // SAFETY: live token; its caller reference moves to the continuation.
        unsafe { mlirAsyncRuntimeAwaitTokenAndExecute(tokens[i] as *mut Token, handle, resume) };
    }
    // SAFETY: producer reference of the first link.
    unsafe { mlirAsyncRuntimeEmplaceToken(tokens[0] as *mut Token) };
    expect_signals(&rx, 1);
    let last = tokens[LINKS] as *mut Token;
    assert_eq!(token_state(last), Some(Outcome::Available));
    // SAFETY: caller reference of the last link.
    unsafe { mlirAsyncRuntimeDropRef(last.cast(), 1) };
}

#[test]
fn blocking_await_on_a_worker_keeps_the_pool_running() {
    // More tasks than workers, each blocking on a token that a task queued
    // behind them completes: a worker that slept while waiting would
    // deadlock the pool.
    let workers = mlirAsyncRuntimGetNumWorkerThreads() as usize;
    let blockers = workers * 2;
    let token = mlirAsyncRuntimeCreateToken();
    let addr = token as usize;
    // SAFETY: one reference per blocker.
    unsafe { mlirAsyncRuntimeAddRef(token.cast(), blockers as i64) };
    let (tx, rx) = signal();
    for _ in 0..blockers {
        let tx = tx.clone();
        let (handle, resume) = task(move || {
            // SAFETY: this blocker's reference.
            unsafe {
                mlirAsyncRuntimeAwaitToken(addr as *mut Token);
                mlirAsyncRuntimeDropRef(addr as *mut _, 1);
            }
            tx.send(()).unwrap();
        });
        mlirAsyncRuntimeExecute(handle, resume);
    }
    let (handle, resume) = task(move || {
        // SAFETY: the producer's reference.
        unsafe { mlirAsyncRuntimeEmplaceToken(addr as *mut Token) }
    });
    mlirAsyncRuntimeExecute(handle, resume);
    expect_signals(&rx, blockers);
    // SAFETY: the test's reference.
    unsafe { mlirAsyncRuntimeDropRef(token.cast(), 1) };
}
