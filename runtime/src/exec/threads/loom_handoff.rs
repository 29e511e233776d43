//! loom models of the hand-off between a task switching out and the
//! completion that ends its wait (`handoff.rs`), on the real [`Handoff`]:
//! whichever side comes second resumes the task, exactly once, and the
//! fiber stored by the drainer is visible to the thread that resumes it
//! (loom's cell checks that the slot's write happens before its read).
//! Without the state check (mutation 9) a completion that comes while the
//! task is switching out is lost: the model finds the task never resumed.

use std::sync::Arc;

use loom::thread;

use super::handoff::Handoff;
use crate::sync::{AtomicUsize, Ordering};

/// The drainer parks the fiber (here a number) while another thread
/// completes the object; counts the resumptions.
#[test]
fn a_task_switching_out_against_its_completion_is_resumed_once() {
    loom::model(|| {
        let handoff = Arc::new(Handoff::new());
        let resumed = Arc::new(AtomicUsize::new(0));
        let completer = {
            let (handoff, resumed) = (Arc::clone(&handoff), Arc::clone(&resumed));
            thread::spawn(move || {
                if handoff.fire() {
                    // The resumption task, run at once here.
                    // SAFETY: fire returned true; taken once.
                    assert_eq!(unsafe { handoff.take() }, 42, "the parked fiber");
                    resumed.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        // SAFETY: the one parking side.
        if let Err(fiber) = unsafe { handoff.park(42) } {
            assert_eq!(fiber, 42);
            resumed.fetch_add(1, Ordering::SeqCst);
        }
        completer.join().unwrap();
        assert_eq!(resumed.load(Ordering::SeqCst), 1, "the task must be resumed exactly once (0: lost)");
    });
}

/// The resumption runs on a third thread (the queue carries it there): the
/// fiber the drainer stored is visible there too.
#[test]
fn the_parked_fiber_is_visible_to_the_thread_that_resumes_it() {
    loom::model(|| {
        let handoff = Arc::new(Handoff::new());
        let (tx, rx) = loom::sync::mpsc::channel();
        let completer = {
            let handoff = Arc::clone(&handoff);
            thread::spawn(move || tx.send(handoff.fire()).unwrap())
        };
        let resumer = {
            let handoff = Arc::clone(&handoff);
            thread::spawn(move || {
                if rx.recv().unwrap() {
                    // SAFETY: fire returned true; taken once.
                    assert_eq!(unsafe { handoff.take() }, 42);
                    1
                } else {
                    0
                }
            })
        };
        // SAFETY: the one parking side.
        let here = usize::from(unsafe { handoff.park(42) }.is_err());
        completer.join().unwrap();
        assert_eq!(resumer.join().unwrap() + here, 1, "the task must be resumed exactly once");
    });
}
