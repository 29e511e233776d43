//! loom models of a future's waker registration (`future_waiter.rs`)
//! against the completion, and against the future's drop: every
//! interleaving of the node's protocol. Run with the crate's other loom
//! models (`make loom`).

use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, RawWaker, RawWakerVTable, Waker};

use loom::thread;

use crate::api::future_waiter::{poll_completion, LIVE_NODES};
use crate::object::completion::{Completion, Outcome};
use crate::sync::side;

/// One model at a time: `LIVE_NODES` is process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// A waker that counts its wakes.
fn counting_waker() -> (Waker, Arc<StdAtomicUsize>) {
    fn clone(data: *const ()) -> RawWaker {
        // SAFETY: `data` is an `Arc<StdAtomicUsize>` from `into_raw`.
        unsafe { Arc::increment_strong_count(data.cast::<StdAtomicUsize>()) };
        RawWaker::new(data, &VTABLE)
    }
    fn wake(data: *const ()) {
        wake_by_ref(data);
        drop_waker(data);
    }
    fn wake_by_ref(data: *const ()) {
        // SAFETY: as above.
        unsafe { &*data.cast::<StdAtomicUsize>() }.fetch_add(1, StdOrdering::SeqCst);
    }
    fn drop_waker(data: *const ()) {
        // SAFETY: as above; one strong count per waker.
        drop(unsafe { Arc::from_raw(data.cast::<StdAtomicUsize>()) });
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);
    let count = Arc::new(StdAtomicUsize::new(0));
    let data = Arc::into_raw(Arc::clone(&count)).cast::<()>();
    // SAFETY: the vtable's functions follow `RawWaker`'s contract.
    (unsafe { Waker::from_raw(RawWaker::new(data, &VTABLE)) }, count)
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    loom::model(move || {
        f();
        assert_eq!(LIVE_NODES.load(StdOrdering::SeqCst), 0, "a node leaked or was freed twice");
    });
}

/// The completion races the first poll: the future is ready at once,
/// or pending and then woken exactly once.
#[test]
fn completion_against_first_registration() {
    model(|| {
        let completion = Arc::new(Completion::pending());
        let (waker, wakes) = counting_waker();
        let completer = {
            let completion = Arc::clone(&completion);
            thread::spawn(move || completion.complete(Outcome::Available).unwrap())
        };
        let poller = {
            let (completion, waker) = (Arc::clone(&completion), waker.clone());
            side(move || {
                let mut registration = None;
                let first = poll_completion(&completion, &mut registration, &waker);
                (first, registration)
            })
        };
        let (first, mut registration) = poller.join().unwrap();
        completer.join().unwrap();
        match first {
            Poll::Ready(outcome) => {
                assert_eq!(outcome, Outcome::Available);
                assert!(registration.is_none());
            }
            Poll::Pending => assert_eq!(wakes.load(StdOrdering::SeqCst), 1, "a pending future is woken once"),
        }
        assert_eq!(poll_completion(&completion, &mut registration, &waker), Poll::Ready(Outcome::Available));
        if let Some(linked) = registration {
            // SAFETY: the completion is alive.
            unsafe { linked.release() };
        }
    });
}

/// A second poll with another waker races the completion: if that poll
/// returns pending, its waker (not only the first one) is woken.
#[test]
fn repoll_with_another_waker_against_completion() {
    model(|| {
        let completion = Arc::new(Completion::pending());
        let (first_waker, _) = counting_waker();
        let (second_waker, second_wakes) = counting_waker();
        let mut registration = None;
        assert_eq!(poll_completion(&completion, &mut registration, &first_waker), Poll::Pending);
        let completer = {
            let completion = Arc::clone(&completion);
            thread::spawn(move || completion.complete(Outcome::Error).unwrap())
        };
        let poller = {
            let completion = Arc::clone(&completion);
            side(move || {
                let second = poll_completion(&completion, &mut registration, &second_waker);
                (second, registration)
            })
        };
        let (second, mut registration) = poller.join().unwrap();
        completer.join().unwrap();
        match second {
            Poll::Ready(outcome) => assert_eq!(outcome, Outcome::Error),
            Poll::Pending => {
                assert!(second_wakes.load(StdOrdering::SeqCst) >= 1, "the latest waker must be woken")
            }
        }
        // SAFETY: the completion is alive.
        unsafe { registration.take().unwrap().release() };
    });
}

/// A pending future is dropped while the completion fires its node: the
/// node is freed exactly once, by whichever side comes last, and the
/// waker is never used after the drop took it.
#[test]
fn drop_of_a_pending_future_against_completion() {
    model(|| {
        let completion = Arc::new(Completion::pending());
        let (waker, _) = counting_waker();
        // Two futures: the first node sits in the inline room, the
        // second in a heap block.
        let mut inline = None;
        let mut heap = None;
        assert_eq!(poll_completion(&completion, &mut inline, &waker), Poll::Pending);
        assert_eq!(poll_completion(&completion, &mut heap, &waker), Poll::Pending);
        let completer = {
            let completion = Arc::clone(&completion);
            thread::spawn(move || completion.complete(Outcome::Available).unwrap())
        };
        let (heap, inline) = (heap.take().unwrap(), inline.take().unwrap());
        let dropper = {
            let completion = Arc::clone(&completion);
            side(move || {
                // SAFETY: the completion is alive (the `Arc`).
                unsafe {
                    heap.release();
                    inline.release();
                }
                drop(completion);
            })
        };
        dropper.join().unwrap();
        completer.join().unwrap();
    });
}
