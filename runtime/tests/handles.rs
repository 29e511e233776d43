//! The Rust handles (`AsyncToken`, `AsyncValue`, `AsyncGroup`) awaited
//! from tokio and from plain threads, against objects completed by other
//! threads and by tasks on the runtime's own pool, as compiled code does.
//!
//! Live-object counts are process-wide, so the tests of this binary run one
//! at a time (`serial`) and each checks that it freed what it created.

use std::ffi::c_void;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use mlir_async_runtime::abi::*;
use mlir_async_runtime::{stats, AsyncGroup, AsyncToken, AsyncValue, Runtime};

mod common;

static SERIAL: Mutex<()> = Mutex::new(());

/// Runs one test at a time, and checks at its end that every object it
/// created was freed.
struct Serial {
    _lock: MutexGuard<'static, ()>,
    live_before: i64,
}

fn serial() -> Serial {
    let lock = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    assert!(Runtime::start().wait_idle(Some(common::TIMEOUT)));
    Serial { _lock: lock, live_before: stats().live_objects() }
}

impl Drop for Serial {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        assert!(Runtime::start().wait_idle(Some(common::TIMEOUT)));
        assert_eq!(stats().live_objects(), self.live_before, "objects leaked or freed twice");
    }
}

/// A raw object pointer that crosses threads (the objects are thread-safe).
#[derive(Clone, Copy)]
struct Raw(usize);

impl Raw {
    fn of<T>(ptr: *mut T) -> Raw {
        Raw(ptr as usize)
    }
    fn ptr<T>(self) -> *mut T {
        self.0 as *mut T
    }
}

/// A token as compiled code returns it: the handle owns the caller's
/// reference; the producer's reference is `Raw`.
fn token() -> (AsyncToken, Raw) {
    let raw = mlirAsyncRuntimeCreateToken();
    // SAFETY: a live token, one of whose two references we hand over.
    (unsafe { AsyncToken::from_raw(raw.cast()) }, Raw::of(raw))
}

fn value(size: i64) -> (AsyncValue, Raw) {
    let raw = mlirAsyncRuntimeCreateValue(size);
    // SAFETY: as `token`.
    (unsafe { AsyncValue::from_raw(raw.cast()) }, Raw::of(raw))
}

/// Completes the token from another thread after `delay`. Join the thread
/// before checking for leaks: the producer drops its reference after the
/// completion has woken the waiters.
fn emplace_token_later(producer: Raw, delay: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        // SAFETY: the producer's reference, dropped by the call.
        unsafe { mlirAsyncRuntimeEmplaceToken(producer.ptr()) };
    })
}

/// A waker that counts its wakes; `Arc::strong_count` tells whether the
/// runtime still holds a clone.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (Arc<CountingWaker>, Waker) {
    let count = Arc::new(CountingWaker::default());
    (Arc::clone(&count), Waker::from(count))
}

fn poll_once<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap()
}

#[test]
fn a_token_completed_by_another_thread_is_awaited_from_tokio() {
    let _serial = serial();
    let (token, producer) = token();
    let producer = emplace_token_later(producer, Duration::from_millis(30));
    let result = tokio_runtime().block_on(async move { tokio::time::timeout(common::TIMEOUT, token).await });
    assert_eq!(result.expect("the token's waker was never woken"), Ok(()));
    producer.join().unwrap();
}

#[test]
fn a_value_and_an_error_are_awaited_from_tokio() {
    let _serial = serial();
    let (good, good_producer) = value(8);
    let (bad, bad_producer) = value(8);
    let producer = std::thread::spawn(move || unsafe {
        std::thread::sleep(Duration::from_millis(20));
        mlirAsyncRuntimeGetValueStorage(good_producer.ptr()).cast::<i64>().write(-7);
        mlirAsyncRuntimeEmplaceValue(good_producer.ptr());
        mlirAsyncRuntimeSetValueError(bad_producer.ptr());
    });
    tokio_runtime().block_on(async move {
        let available = good.await.expect("no error was set");
        assert_eq!(available.read::<i64>(), -7);
        assert_eq!(available.bytes(), (-7i64).to_ne_bytes());
        let error = bad.await.unwrap_err();
        assert_eq!(error.kind(), "value");
        assert_eq!(error.to_string(), "the async value completed in the error state");
    });
    producer.join().unwrap();
}

/// Tokens completed by tasks running on the runtime's pool, as compiled
/// `async.execute` bodies complete theirs, awaited by many tokio tasks at
/// once; the futures hold no thread while pending.
#[test]
fn many_tokens_completed_on_the_runtime_pool_are_awaited_concurrently() {
    let _serial = serial();
    const N: usize = 2000;
    let rt = tokio_runtime();
    let done = Arc::new(AtomicUsize::new(0));
    let mut joins = Vec::new();
    for i in 0..N {
        let (token, producer) = token();
        let (handle, resume) = common::task(move || unsafe {
            if i % 7 == 0 {
                mlirAsyncRuntimeSetTokenError(producer.ptr());
            } else {
                mlirAsyncRuntimeEmplaceToken(producer.ptr());
            }
        });
        let done = Arc::clone(&done);
        joins.push(rt.spawn(async move {
            let result = token.await;
            assert_eq!(result.is_err(), i % 7 == 0, "token {i}");
            done.fetch_add(1, Ordering::SeqCst);
        }));
        mlirAsyncRuntimeExecute(handle, resume);
    }
    rt.block_on(async move {
        for join in joins {
            tokio::time::timeout(common::TIMEOUT, join).await.expect("a future was never woken").unwrap();
        }
    });
    assert_eq!(done.load(Ordering::SeqCst), N);
}

/// A thousand pending futures cost no thread: the process's thread count
/// does not grow with them.
#[test]
fn pending_futures_hold_no_thread() {
    let _serial = serial();
    fn threads() -> usize {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("Threads:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
    let (_count, waker) = counting_waker();
    let before = threads();
    let mut pending = Vec::new();
    for _ in 0..1000 {
        let (mut token, producer) = token();
        assert!(poll_once(&mut token, &waker).is_pending());
        pending.push((token, producer));
    }
    // (Other tests of this binary may start or end a thread meanwhile.)
    assert!(threads() < before + 10, "threads grew from {before} to {}", threads());
    for (token, producer) in pending {
        // SAFETY: the producer's reference.
        unsafe { mlirAsyncRuntimeEmplaceToken(producer.ptr()) };
        assert!(token.is_ready());
    }
}

/// Polled again with another waker, the future moves its registration to
/// it: the completion wakes the latest waker, not the first.
#[test]
fn a_repoll_with_another_waker_moves_the_registration() {
    let _serial = serial();
    let (mut token, producer) = token();
    let (first, first_waker) = counting_waker();
    let (second, second_waker) = counting_waker();
    assert!(poll_once(&mut token, &first_waker).is_pending());
    assert!(poll_once(&mut token, &second_waker).is_pending());
    // The first waker's clone was given back at the second poll.
    assert_eq!(Arc::strong_count(&first), 2, "only the test's two references to the first waker");
    // The same waker again: nothing changes.
    assert!(poll_once(&mut token, &second_waker).is_pending());
    // SAFETY: the producer's reference.
    unsafe { mlirAsyncRuntimeEmplaceToken(producer.ptr()) };
    assert_eq!(first.0.load(Ordering::SeqCst), 0);
    assert_eq!(second.0.load(Ordering::SeqCst), 1);
    assert_eq!(poll_once(&mut token, &second_waker), Poll::Ready(Ok(())));
    assert_eq!(Arc::strong_count(&second), 2, "the runtime keeps no clone of a fired waker");
}

/// A future dropped while pending gives its waker back at once; its node
/// stays linked until the completion fires it, which then frees it.
#[test]
fn a_pending_future_dropped_gives_its_waker_back_and_the_completion_frees_the_node() {
    let _serial = serial();
    let (waker_count, waker) = counting_waker();
    for _ in 0..100 {
        let (mut token, producer) = token();
        let (mut value, value_producer) = value(16);
        assert!(poll_once(&mut token, &waker).is_pending());
        assert!(poll_once(&mut value, &waker).is_pending());
        drop(token);
        drop(value);
        assert_eq!(Arc::strong_count(&waker_count), 2, "a dropped future's waker is still held");
        // SAFETY: the producers' references; the consumers' are gone, so
        // these free the objects (and the nodes in them).
        unsafe {
            mlirAsyncRuntimeEmplaceToken(producer.ptr());
            mlirAsyncRuntimeSetValueError(value_producer.ptr());
        }
    }
    assert_eq!(waker_count.0.load(Ordering::SeqCst), 0, "no waker of a dropped future is woken");
}

/// A future dropped while another thread completes its object, many times
/// over: the node is freed once, by whichever side comes last.
#[test]
fn futures_dropped_while_their_objects_complete() {
    let _serial = serial();
    let (_count, waker) = counting_waker();
    for _ in 0..2000 {
        let (mut token, producer) = token();
        assert!(poll_once(&mut token, &waker).is_pending());
        let completer = std::thread::spawn(move || unsafe { mlirAsyncRuntimeEmplaceToken(producer.ptr()) });
        drop(token);
        completer.join().unwrap();
    }
}

#[test]
fn blocking_waits_on_tokens_values_and_groups() {
    let _serial = serial();
    let (ok, ok_producer) = token();
    let (failed, failed_producer) = token();
    let group_raw = mlirAsyncRuntimeCreateGroup(2);
    // SAFETY: the group's one reference is ours; the tokens are live.
    let group = unsafe {
        mlirAsyncRuntimeAddTokenToGroup(ok.as_raw().cast(), group_raw);
        mlirAsyncRuntimeAddTokenToGroup(failed.as_raw().cast(), group_raw);
        AsyncGroup::from_raw(group_raw.cast())
    };
    assert!(!group.is_ready() && !group.is_error());
    let ok_producer = emplace_token_later(ok_producer, Duration::from_millis(10));
    let failed_producer = std::thread::spawn(move || unsafe {
        std::thread::sleep(Duration::from_millis(20));
        mlirAsyncRuntimeSetTokenError(failed_producer.ptr());
    });
    assert_eq!(group.wait().unwrap_err().kind(), "group");
    assert_eq!(failed.wait(), Err(failed.wait().unwrap_err()));
    assert_eq!(failed.wait().unwrap_err().kind(), "token");
    assert!(group.is_error() && group.is_ready());
    assert_eq!(ok.wait(), Ok(()));
    assert!(failed.is_error() && !ok.is_error());

    let (value, producer) = value(4);
    let value_producer = std::thread::spawn(move || unsafe {
        mlirAsyncRuntimeGetValueStorage(producer.ptr()).cast::<u32>().write(0xfeed);
        mlirAsyncRuntimeEmplaceValue(producer.ptr());
    });
    let available = value.wait().unwrap();
    assert_eq!(available.read::<u32>(), 0xfeed);
    assert_eq!(available.read::<[u8; 4]>(), 0xfeedu32.to_ne_bytes());
    for producer in [ok_producer, failed_producer, value_producer] {
        producer.join().unwrap();
    }
}

#[test]
fn a_group_is_awaited_from_tokio() {
    let _serial = serial();
    let group_raw = mlirAsyncRuntimeCreateGroup(3);
    // SAFETY: our reference.
    let group = unsafe { AsyncGroup::from_raw(group_raw.cast()) };
    let mut producers = Vec::new();
    for i in 0..3 {
        let (token, producer) = token();
        // SAFETY: both live.
        unsafe { mlirAsyncRuntimeAddTokenToGroup(token.as_raw().cast(), group_raw) };
        producers.push(emplace_token_later(producer, Duration::from_millis(5 * i)));
    }
    let result = tokio_runtime().block_on(async move { tokio::time::timeout(common::TIMEOUT, group).await });
    assert_eq!(result.unwrap(), Ok(()));
    for producer in producers {
        producer.join().unwrap();
    }
}

/// The non-blocking views, reference counting through `Clone`, and
/// `into_raw`/`from_raw`.
#[test]
fn references_are_counted_and_handed_back() {
    let _serial = serial();
    let (value, producer) = value(2);
    assert_eq!(value.size(), 2);
    assert_eq!(value.try_bytes(), None);
    let copy = value.clone();
    let raw = copy.into_raw();
    // SAFETY: `raw` is live (three references: the two handles' and the
    // producer's).
    let refs = unsafe { mlir_async_runtime::Value::from_abi(raw.cast(), "test") }.ref_count();
    assert_eq!(refs, 3);
    // SAFETY: the producer's side.
    unsafe {
        mlirAsyncRuntimeGetValueStorage(producer.ptr()).cast::<u16>().write(513);
        mlirAsyncRuntimeEmplaceValue(producer.ptr());
    }
    assert_eq!(value.try_bytes(), Some(Ok(&513u16.to_ne_bytes()[..])));
    // SAFETY: the reference `into_raw` gave back.
    let again = unsafe { AsyncValue::from_raw(raw) };
    assert_eq!(again.wait().unwrap().read::<u16>(), 513);
    let (token, producer) = token();
    let raw: *mut c_void = token.clone().into_raw();
    // SAFETY: that reference, dropped by hand.
    unsafe {
        mlirAsyncRuntimeDropRef(raw, 1);
        mlirAsyncRuntimeEmplaceToken(producer.ptr());
    }
    assert_eq!(format!("{token:?}").contains("Available"), true);
}

#[test]
#[should_panic(expected = "the value holds 8 bytes")]
fn reading_a_value_as_a_type_of_another_size_panics() {
    let _serial = serial();
    let (value, producer) = value(8);
    // SAFETY: the producer's side.
    unsafe { mlirAsyncRuntimeEmplaceValue(producer.ptr()) };
    let _: u32 = value.wait().unwrap().read();
}
