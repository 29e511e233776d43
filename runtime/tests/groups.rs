//! Groups: ranks, counting, errors, blocking and non-blocking awaits, and
//! the group's lifetime while tokens are still pending.

mod common;

use std::thread;
use std::time::Duration;

use common::{expect_signals, signal, task};
use mlir_async_runtime::abi::*;
use mlir_async_runtime::Group;
use mlir_async_runtime::Token;
use mlir_async_runtime::Outcome;

fn group_state(group: *mut Group) -> Option<Outcome> {
    // SAFETY: the test holds a reference.
    unsafe { Group::from_abi(group, "test") }.completion().state()
}

#[test]
fn empty_group_is_complete_at_once() {
    let group = mlirAsyncRuntimeCreateGroup(0);
    // SAFETY: live group.
    unsafe {
        assert_eq!(Group::from_abi(group, "test").ref_count(), 1);
        mlirAsyncRuntimeAwaitAllInGroup(group);
        assert!(!mlirAsyncRuntimeIsGroupError(group));
        mlirAsyncRuntimeDropRef(group.cast(), 1);
    }
}

#[test]
fn ranks_follow_call_order_and_group_completes_after_last_token() {
    let group = mlirAsyncRuntimeCreateGroup(3);
    let tokens: Vec<*mut Token> = (0..3).map(|_| mlirAsyncRuntimeCreateToken()).collect();
    // SAFETY: live objects; each token's two references are dropped below.
    unsafe {
        // One token completes before it is added, two after.
        mlirAsyncRuntimeEmplaceToken(tokens[0]);
        for (i, &t) in tokens.iter().enumerate() {
            assert_eq!(mlirAsyncRuntimeAddTokenToGroup(t, group), i as i64);
        }
        mlirAsyncRuntimeEmplaceToken(tokens[1]);
        assert_eq!(group_state(group), None, "one token still pending");
        mlirAsyncRuntimeEmplaceToken(tokens[2]);
        assert_eq!(group_state(group), Some(Outcome::Available));
        assert!(!mlirAsyncRuntimeIsGroupError(group));
        for &t in &tokens {
            mlirAsyncRuntimeDropRef(t.cast(), 1);
        }
        mlirAsyncRuntimeDropRef(group.cast(), 1);
    }
}

#[test]
fn one_token_in_error_puts_the_group_in_error() {
    let group = mlirAsyncRuntimeCreateGroup(2);
    let ok = mlirAsyncRuntimeCreateToken();
    let bad = mlirAsyncRuntimeCreateToken();
    // SAFETY: live objects.
    unsafe {
        mlirAsyncRuntimeAddTokenToGroup(ok, group);
        mlirAsyncRuntimeAddTokenToGroup(bad, group);
        mlirAsyncRuntimeSetTokenError(bad);
        mlirAsyncRuntimeEmplaceToken(ok);
        mlirAsyncRuntimeAwaitAllInGroup(group);
        assert!(mlirAsyncRuntimeIsGroupError(group));
        assert_eq!(group_state(group), Some(Outcome::Error));
        mlirAsyncRuntimeDropRef(ok.cast(), 1);
        mlirAsyncRuntimeDropRef(bad.cast(), 1);
        mlirAsyncRuntimeDropRef(group.cast(), 1);
    }
}

#[test]
fn group_outlives_its_callers_reference_until_tokens_complete() {
    let group = mlirAsyncRuntimeCreateGroup(1);
    let token = mlirAsyncRuntimeCreateToken();
    let (tx, rx) = signal();
    let addr = group as usize;
    let (handle, resume) = task(move || {
        assert_eq!(group_state(addr as *mut Group), Some(Outcome::Available));
        // SAFETY: the continuation's reference, added below.
        unsafe { mlirAsyncRuntimeDropRef(addr as *mut _, 1) };
        tx.send(()).unwrap();
    });
    // SAFETY: live objects.
    unsafe {
        mlirAsyncRuntimeAddTokenToGroup(token, group);
        assert_eq!(Group::from_abi(group, "test").ref_count(), 2, "pending token holds the group");
        // The continuation keeps its own reference, as compiled code does.
        mlirAsyncRuntimeAddRef(group.cast(), 1);
        mlirAsyncRuntimeAwaitAllInGroupAndExecute(group, handle, resume);
        mlirAsyncRuntimeDropRef(group.cast(), 1); // the caller's
        mlirAsyncRuntimeEmplaceToken(token);
        mlirAsyncRuntimeDropRef(token.cast(), 1);
    }
    expect_signals(&rx, 1);
}

#[test]
fn concurrent_add_complete_and_await_count_every_token_once() {
    // AddTokenToGroup, the tokens' completion and the await race on three
    // threads; the group must complete exactly when all N are in.
    const N: usize = 2_000;
    for round in 0..20 {
        let group = mlirAsyncRuntimeCreateGroup(N as i64);
        let tokens: Vec<usize> = (0..N).map(|_| mlirAsyncRuntimeCreateToken() as usize).collect();
        let group_addr = group as usize;
        let to_add = tokens.clone();
        let adder = thread::spawn(move || {
            for (i, &t) in to_add.iter().enumerate() {
                // SAFETY: the test's references, kept until the end.
                let rank = unsafe {
                    mlirAsyncRuntimeAddTokenToGroup(t as *mut Token, group_addr as *mut Group)
                };
                assert_eq!(rank, i as i64);
            }
        });
        let to_complete = tokens.clone();
        let completer = thread::spawn(move || {
            for (i, &t) in to_complete.iter().enumerate().rev() {
                // SAFETY: the producer's reference.
                unsafe {
                    if (i + round) % 97 == 0 {
                        mlirAsyncRuntimeSetTokenError(t as *mut Token)
                    } else {
                        mlirAsyncRuntimeEmplaceToken(t as *mut Token)
                    }
                }
            }
        });
        // SAFETY: the test's reference.
        unsafe { mlirAsyncRuntimeAwaitAllInGroup(group) };
        adder.join().unwrap();
        completer.join().unwrap();
        // SAFETY: the test's references.
        unsafe {
            assert!(mlirAsyncRuntimeIsGroupError(group));
            for &t in &tokens {
                assert!(matches!(
                    Token::from_abi(t as *mut Token, "test").completion().state(),
                    Some(_)
                ));
                mlirAsyncRuntimeDropRef(t as *mut _, 1);
            }
            assert_eq!(Group::from_abi(group, "test").ref_count(), 1);
            mlirAsyncRuntimeDropRef(group.cast(), 1);
        }
    }
}

#[test]
fn tasks_added_to_group_complete_and_blocking_await_returns() {
    const N: usize = 10_000;
    let group = mlirAsyncRuntimeCreateGroup(N as i64);
    for _ in 0..N {
        let token = mlirAsyncRuntimeCreateToken();
        let addr = token as usize;
        let (handle, resume) = task(move || {
            thread::yield_now();
            // SAFETY: the producer's reference.
            unsafe { mlirAsyncRuntimeEmplaceToken(addr as *mut Token) };
        });
        mlirAsyncRuntimeExecute(handle, resume);
        // SAFETY: the caller's reference, dropped once the token is in.
        unsafe {
            mlirAsyncRuntimeAddTokenToGroup(token, group);
            mlirAsyncRuntimeDropRef(token.cast(), 1);
        }
    }
    // SAFETY: live group.
    unsafe {
        mlirAsyncRuntimeAwaitAllInGroup(group);
        assert!(!mlirAsyncRuntimeIsGroupError(group));
        thread::sleep(Duration::from_millis(1));
        mlirAsyncRuntimeDropRef(group.cast(), 1);
    }
}
