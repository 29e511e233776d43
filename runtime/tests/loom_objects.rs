//! loom models of every object transition that can race, run through the
//! real C ABI: under `cfg(loom)` the runtime's atomics and thread parking
//! come from loom (`src/sync/mod.rs`), a task handed to the scheduler runs at
//! once on the calling thread, and a freed object's memory is poisoned so
//! that any later touch panics (`object::release_memory`).
//!
//! Each model explores every interleaving of its threads (within the
//! preemption bound: `LOOM_MAX_PREEMPTIONS`, 2 in `make test`, 3 in
//! `make loom`). In every model, loom also fails on a deadlock (a waiter
//! never woken) and on a use after free (the poisoned memory), and each
//! model checks the live-object counters at its end, so an object freed
//! twice or never is caught too.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test --release -p mlir_async_runtime
//!       --test loom_objects` (see `make loom`).
#![cfg(loom)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use loom::thread;
use mlir_async_runtime::abi::*;
use mlir_async_runtime::Group;
use mlir_async_runtime::{stats as snapshot, RuntimeStats};
use mlir_async_runtime::Token;
use mlir_async_runtime::Value;

/// The live counters are process-wide: one model at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs `f` as a loom model and checks that every object it created was
/// freed exactly once by the end of each iteration.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    loom::model(move || {
        let before = live();
        f();
        assert_eq!(live(), before, "an object leaked or was freed twice");
    });
}

/// Runs one side of a model's race on a thread of its own, as every racing
/// side here: a side left on the model's main thread after it spawned the
/// others ran, in loom's executions, only before their writes (see the
/// crate's `sync::side`).
fn side<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> thread::JoinHandle<T> {
    thread::spawn(f)
}

fn live() -> (i64, i64, i64) {
    let RuntimeStats { live_tokens, live_values, live_groups, .. } = snapshot();
    (live_tokens, live_values, live_groups)
}

/// Pointers cross loom threads as integers (the ABI's objects are `Sync`).
#[derive(Clone, Copy)]
struct P(usize);

impl P {
    fn token(self) -> *mut Token {
        self.0 as *mut Token
    }
    fn value(self) -> *mut Value {
        self.0 as *mut Value
    }
    fn group(self) -> *mut Group {
        self.0 as *mut Group
    }
    fn obj(self) -> *mut c_void {
        self.0 as *mut c_void
    }
}

unsafe extern "C" fn count_resume(handle: *mut c_void) {
    // SAFETY: `handle` is the `Arc` leaked by `counting_task`.
    let runs = unsafe { Arc::from_raw(handle.cast::<AtomicUsize>()) };
    runs.fetch_add(1, Ordering::SeqCst);
}

/// A coroutine stand-in that counts how often it was resumed.
fn counting_task() -> (Arc<AtomicUsize>, *mut c_void) {
    let runs = Arc::new(AtomicUsize::new(0));
    (Arc::clone(&runs), Arc::into_raw(runs) as *mut c_void)
}

/// Completing a token races with a blocking await: the awaiter always
/// wakes (no lost wake-up between its push and its park) and sees the
/// final state; the token is freed exactly once.
#[test]
fn completion_against_blocking_await() {
    model(|| {
        let token = P(mlirAsyncRuntimeCreateToken() as usize);
        let producer = thread::spawn(move || unsafe { mlirAsyncRuntimeSetTokenError(token.token()) });
        // SAFETY: the consumer's reference.
        let consumer = side(move || unsafe {
            mlirAsyncRuntimeAwaitToken(token.token());
            assert!(mlirAsyncRuntimeIsTokenError(token.token()));
            mlirAsyncRuntimeDropRef(token.obj(), 1);
        });
        consumer.join().unwrap();
        producer.join().unwrap();
    });
}

/// Completing a value races with a blocking await on it, the consumer
/// dropping its reference right after: the payload written before the
/// emplace is seen after the await.
#[test]
fn value_completion_against_blocking_await_and_drop() {
    model(|| {
        let value = P(mlirAsyncRuntimeCreateValue(8) as usize);
        let producer = thread::spawn(move || unsafe {
            mlirAsyncRuntimeGetValueStorage(value.value()).cast::<u64>().write(42);
            mlirAsyncRuntimeEmplaceValue(value.value());
        });
        // SAFETY: the consumer's reference.
        let consumer = side(move || unsafe {
            mlirAsyncRuntimeAwaitValue(value.value());
            assert_eq!(mlirAsyncRuntimeGetValueStorage(value.value()).cast::<u64>().read(), 42);
            mlirAsyncRuntimeDropRef(value.obj(), 1);
        });
        consumer.join().unwrap();
        producer.join().unwrap();
    });
}

/// Completing a token races with registering a continuation on it: the
/// continuation runs exactly once, whichever side wins, and only after the
/// completion.
#[test]
fn completion_against_registering_a_continuation() {
    model(|| {
        let token = P(mlirAsyncRuntimeCreateToken() as usize);
        let (runs, handle) = counting_task();
        let handle = P(handle as usize);
        let producer = thread::spawn(move || unsafe { mlirAsyncRuntimeEmplaceToken(token.token()) });
        // SAFETY: the consumer's reference, held until the continuation ran.
        let consumer =
            side(move || unsafe { mlirAsyncRuntimeAwaitTokenAndExecute(token.token(), handle.obj(), Some(count_resume)) });
        consumer.join().unwrap();
        producer.join().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1, "the continuation must run exactly once");
        // SAFETY: the consumer's reference.
        unsafe { mlirAsyncRuntimeDropRef(token.obj(), 1) };
    });
}

/// A continuation registered by a holder that drops its reference right
/// after, against the producer's completion: when the producer finds
/// itself the sole holder it frees the token without the state's swap
/// (`complete_and_release`), which it may do only if it sees the
/// continuation linked; the continuation runs exactly once either way.
/// Mutation 11 (the sole holder's count read `Relaxed`) lets the producer
/// see the drop without the link: loom finds the continuation never run.
#[test]
fn continuation_by_a_holder_that_drops_against_the_sole_holders_completion() {
    model(|| {
        let token = P(mlirAsyncRuntimeCreateToken() as usize);
        let (runs, handle) = counting_task();
        let handle = P(handle as usize);
        let consumer = thread::spawn(move || unsafe {
            mlirAsyncRuntimeAwaitTokenAndExecute(token.token(), handle.obj(), Some(count_resume));
            mlirAsyncRuntimeDropRef(token.obj(), 1);
        });
        // SAFETY: the producer's reference, released by the emplace.
        let producer = side(move || unsafe { mlirAsyncRuntimeEmplaceToken(token.token()) });
        producer.join().unwrap();
        consumer.join().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1, "the continuation must run exactly once");
    });
}

/// Two continuations registered from two threads while the token
/// completes on a third: both run exactly once (no node lost between two
/// pushes or between a push and the completion's swap).
#[test]
fn two_registrations_against_completion() {
    model(|| {
        let token = P(mlirAsyncRuntimeCreateToken() as usize);
        let (runs_a, handle_a) = counting_task();
        let handle_a = P(handle_a as usize);
        let other = thread::spawn(move || unsafe {
            mlirAsyncRuntimeAwaitTokenAndExecute(token.token(), handle_a.obj(), Some(count_resume))
        });
        let producer = thread::spawn(move || unsafe { mlirAsyncRuntimeEmplaceToken(token.token()) });
        let (runs_b, handle_b) = counting_task();
        let handle_b = P(handle_b as usize);
        // SAFETY: the consumer's reference, held until both ran.
        let consumer =
            side(move || unsafe { mlirAsyncRuntimeAwaitTokenAndExecute(token.token(), handle_b.obj(), Some(count_resume)) });
        consumer.join().unwrap();
        other.join().unwrap();
        producer.join().unwrap();
        assert_eq!(runs_a.load(Ordering::SeqCst), 1);
        assert_eq!(runs_b.load(Ordering::SeqCst), 1);
        // SAFETY: the consumer's reference.
        unsafe { mlirAsyncRuntimeDropRef(token.obj(), 1) };
    });
}

/// AddTokenToGroup, the token's completion and a blocking await of the
/// group on three threads (upstream's group race): the group completes
/// exactly once, after the token, and the await always returns. The adder
/// drops its group reference at once, so the group lives on the waiter's
/// reference alone.
#[test]
fn add_token_against_completion_against_group_await() {
    model(|| {
        let group = P(mlirAsyncRuntimeCreateGroup(1) as usize);
        let token = P(mlirAsyncRuntimeCreateToken() as usize);
        // SAFETY: one extra group reference for the adder.
        unsafe { mlirAsyncRuntimeAddRef(group.obj(), 1) };
        let adder = thread::spawn(move || unsafe {
            assert_eq!(mlirAsyncRuntimeAddTokenToGroup(token.token(), group.group()), 0);
            mlirAsyncRuntimeDropRef(group.obj(), 1);
            mlirAsyncRuntimeDropRef(token.obj(), 1);
        });
        let producer = thread::spawn(move || unsafe { mlirAsyncRuntimeSetTokenError(token.token()) });
        // SAFETY: the awaiter's group reference.
        let awaiter = side(move || unsafe {
            mlirAsyncRuntimeAwaitAllInGroup(group.group());
            assert!(mlirAsyncRuntimeIsGroupError(group.group()));
        });
        awaiter.join().unwrap();
        adder.join().unwrap();
        producer.join().unwrap();
        // SAFETY: the awaiter's group reference.
        unsafe { mlirAsyncRuntimeDropRef(group.obj(), 1) };
    });
}

/// Two tokens of one group complete on two threads while the group is
/// awaited with a continuation: the pending count is decremented exactly
/// twice and the continuation runs once, after both.
#[test]
fn two_token_completions_against_group_continuation() {
    model(|| {
        let group = P(mlirAsyncRuntimeCreateGroup(2) as usize);
        let a = P(mlirAsyncRuntimeCreateToken() as usize);
        let b = P(mlirAsyncRuntimeCreateToken() as usize);
        // SAFETY: live objects; the test's references are dropped below.
        unsafe {
            mlirAsyncRuntimeAddTokenToGroup(a.token(), group.group());
            mlirAsyncRuntimeAddTokenToGroup(b.token(), group.group());
        }
        let ta = thread::spawn(move || unsafe { mlirAsyncRuntimeEmplaceToken(a.token()) });
        let tb = thread::spawn(move || unsafe { mlirAsyncRuntimeEmplaceToken(b.token()) });
        let (runs, handle) = counting_task();
        let handle = P(handle as usize);
        // SAFETY: the test's group reference, held until the end.
        let awaiter = side(move || unsafe {
            mlirAsyncRuntimeAwaitAllInGroupAndExecute(group.group(), handle.obj(), Some(count_resume))
        });
        awaiter.join().unwrap();
        ta.join().unwrap();
        tb.join().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // SAFETY: the test's references.
        unsafe {
            assert!(!mlirAsyncRuntimeIsGroupError(group.group()));
            mlirAsyncRuntimeDropRef(a.obj(), 1);
            mlirAsyncRuntimeDropRef(b.obj(), 1);
            mlirAsyncRuntimeDropRef(group.obj(), 1);
        }
    });
}

/// A token in two groups and awaited by a continuation, each registered on
/// its own thread while the token completes on a fourth: the first group
/// to come links its shared counter (only onto an empty list), the other
/// waiters link nodes on top of it or before it, and every one fires
/// exactly once (the list's walk stops at the shared counter, which it
/// neither unlinks nor frees).
#[test]
fn groups_and_a_continuation_against_completion_of_one_token() {
    model(|| {
        let token = P(mlirAsyncRuntimeCreateToken() as usize);
        let first = P(mlirAsyncRuntimeCreateGroup(1) as usize);
        let second = P(mlirAsyncRuntimeCreateGroup(1) as usize);
        let other = thread::spawn(move || unsafe {
            mlirAsyncRuntimeAddTokenToGroup(token.token(), second.group());
        });
        let producer = thread::spawn(move || unsafe { mlirAsyncRuntimeEmplaceToken(token.token()) });
        let (runs, handle) = counting_task();
        let handle = P(handle as usize);
        // SAFETY: the test's references, held until the end.
        let adder = side(move || unsafe {
            mlirAsyncRuntimeAddTokenToGroup(token.token(), first.group());
            mlirAsyncRuntimeAwaitTokenAndExecute(token.token(), handle.obj(), Some(count_resume));
        });
        adder.join().unwrap();
        other.join().unwrap();
        producer.join().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1, "the continuation must run exactly once");
        // SAFETY: the test's references.
        unsafe {
            mlirAsyncRuntimeAwaitAllInGroup(first.group());
            mlirAsyncRuntimeAwaitAllInGroup(second.group());
            mlirAsyncRuntimeDropRef(first.obj(), 1);
            mlirAsyncRuntimeDropRef(second.obj(), 1);
            mlirAsyncRuntimeDropRef(token.obj(), 1);
        }
    });
}

/// The consumer's last DropRef races with the producer's completion (which
/// drops the producer's reference): whichever drops last frees the token,
/// exactly once, and the completer never touches it afterwards (upstream's
/// use after free: a freed object's memory is poisoned under loom).
#[test]
fn last_drop_ref_against_completion_in_flight() {
    model(|| {
        let token = P(mlirAsyncRuntimeCreateToken() as usize);
        let producer = thread::spawn(move || unsafe { mlirAsyncRuntimeEmplaceToken(token.token()) });
        // SAFETY: the consumer's reference, its last use.
        let consumer = side(move || unsafe { mlirAsyncRuntimeDropRef(token.obj(), 1) });
        consumer.join().unwrap();
        producer.join().unwrap();
    });
}

/// As above, for a value, with a continuation holding the last reference:
/// the continuation drops it when it runs, racing with the completion.
#[test]
fn continuation_drops_last_reference_during_completion() {
    model(|| {
        let value = P(mlirAsyncRuntimeCreateValue(4) as usize);
        unsafe extern "C" fn drop_value(handle: *mut c_void) {
            // SAFETY: the continuation owns the consumer's reference.
            unsafe { mlirAsyncRuntimeDropRef(handle, 1) };
        }
        let producer = thread::spawn(move || unsafe { mlirAsyncRuntimeEmplaceValue(value.value()) });
        // SAFETY: the reference passes to the continuation.
        let consumer =
            side(move || unsafe { mlirAsyncRuntimeAwaitValueAndExecute(value.value(), value.obj(), Some(drop_value)) });
        consumer.join().unwrap();
        producer.join().unwrap();
    });
}

/// Two pending tokens keep a group alive by its one reference to itself
/// after every caller dropped theirs: the two completions race, the
/// non-last counter never touches the group after its count (the freed
/// group is poisoned), and the last one frees it exactly once.
#[test]
fn group_kept_alive_only_by_pending_tokens() {
    model(|| {
        let group = P(mlirAsyncRuntimeCreateGroup(2) as usize);
        let a = P(mlirAsyncRuntimeCreateToken() as usize);
        let b = P(mlirAsyncRuntimeCreateToken() as usize);
        // SAFETY: live objects; after this block the group lives on its
        // reference to itself only.
        unsafe {
            mlirAsyncRuntimeAddTokenToGroup(a.token(), group.group());
            mlirAsyncRuntimeAddTokenToGroup(b.token(), group.group());
            mlirAsyncRuntimeDropRef(group.obj(), 1);
            mlirAsyncRuntimeDropRef(a.obj(), 1);
            mlirAsyncRuntimeDropRef(b.obj(), 1);
        }
        let ta = thread::spawn(move || unsafe { mlirAsyncRuntimeEmplaceToken(a.token()) });
        // SAFETY: the producer's reference.
        let tb = side(move || unsafe { mlirAsyncRuntimeSetTokenError(b.token()) });
        tb.join().unwrap();
        ta.join().unwrap();
    });
}
