//! loom models of the hand-off between a task that switched out and the
//! completion that ends its wait (`handoff.rs`), on the real [`Handoff`]
//! and a real [`Completion`]: the thread the task switched out to parks the
//! fiber and links the node while another thread completes the object; the
//! task is resumed exactly once, and the fiber stored is visible to the
//! thread that resumes it (loom's cell checks that the slot's write happens
//! before its read). Taking a refused link for a link (mutation 9), the
//! model finds the task never resumed; linking before storing (mutation
//! 10), it finds the slot's accesses unordered.

use std::sync::Arc;

use loom::thread;

use super::handoff::Handoff;
use crate::object::completion::{Completion, Outcome, Waiter, WaiterNode};
use crate::sync::{side, AtomicUsize, Ordering};

/// A switched-out task's node, as `fibers.rs`'s `SwitchedOut`: the fiber is
/// a number; its fire function resumes it at once, or sends it to a third
/// thread (the queue that carries the resumption).
#[repr(C)]
struct Node {
    waiter: Waiter,
    handoff: Handoff<usize>,
    resumed: Arc<AtomicUsize>,
    to: Option<loom::sync::mpsc::Sender<bool>>,
}

// SAFETY: `#[repr(C)]`, the `Waiter` first.
unsafe impl WaiterNode for Node {}

// SAFETY: the node is reached through the completion's word (linked by
// its Release compare-and-swap, fired after its AcqRel swap), as in the
// runtime; the models only share it that way.
unsafe impl Send for Node {}
// SAFETY: as above.
unsafe impl Sync for Node {}

/// The node's fire function: the resumption.
///
/// # Safety
/// `node` is a linked `Node`, fired once.
unsafe fn fire(node: *mut Waiter, _outcome: Outcome) {
    // SAFETY: the node outlives the model's threads.
    let node = unsafe { &*node.cast::<Node>() };
    match &node.to {
        // SAFETY: linked and fired; taken once, here or where it is sent.
        None => resume(unsafe { node.handoff.take() }, &node.resumed),
        Some(to) => to.send(true).unwrap(),
    }
}

fn resume(fiber: usize, resumed: &AtomicUsize) {
    assert_eq!(fiber, 42, "the parked fiber");
    resumed.fetch_add(1, Ordering::SeqCst);
}

/// The parking side: stores the fiber and links the node; resumes it at
/// once when the object completed first (true).
fn park(node: &Arc<Node>, completion: &Completion) -> bool {
    let ptr = Arc::as_ptr(node).cast_mut().cast::<Waiter>();
    // SAFETY: the one parking side; the node outlives its time in the list
    // (the model joins every thread before dropping it).
    match unsafe { node.handoff.park(42, || completion.add_waiter(ptr).is_ok()) } {
        Ok(()) => false,
        Err(fiber) => {
            resume(fiber, &node.resumed);
            true
        }
    }
}

/// The resumption runs on the completing thread.
#[test]
fn a_task_switching_out_against_its_completion_is_resumed_once() {
    loom::model(|| {
        let completion = Arc::new(Completion::pending());
        let resumed = Arc::new(AtomicUsize::new(0));
        let node = Arc::new(Node { waiter: Waiter::new(fire), handoff: Handoff::new(), resumed, to: None });
        let completer = {
            let completion = Arc::clone(&completion);
            thread::spawn(move || completion.complete(Outcome::Available).unwrap())
        };
        let parker = {
            let node = Arc::clone(&node);
            side(move || park(&node, &completion))
        };
        let _ = parker.join().unwrap();
        completer.join().unwrap();
        assert_eq!(node.resumed.load(Ordering::SeqCst), 1, "the task must be resumed exactly once (0: lost)");
    });
}

/// The resumption runs on a third thread (the queue carries it there): the
/// fiber stored is visible there too.
#[test]
fn the_parked_fiber_is_visible_to_the_thread_that_resumes_it() {
    loom::model(|| {
        let completion = Arc::new(Completion::pending());
        let resumed = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = loom::sync::mpsc::channel();
        let node = Arc::new(Node {
            waiter: Waiter::new(fire),
            handoff: Handoff::new(),
            resumed: Arc::clone(&resumed),
            to: Some(tx.clone()),
        });
        let completer = {
            let completion = Arc::clone(&completion);
            thread::spawn(move || completion.complete(Outcome::Available).unwrap())
        };
        let resumer = {
            let node = Arc::clone(&node);
            // One message: the fired node's (resume it), or the parking
            // side's when it resumed the task at once.
            thread::spawn(move || {
                if rx.recv().unwrap() {
                    // SAFETY: fired; taken once.
                    resume(unsafe { node.handoff.take() }, &node.resumed);
                }
            })
        };
        let parker = {
            let node = Arc::clone(&node);
            side(move || {
                if park(&node, &completion) {
                    tx.send(false).unwrap();
                }
            })
        };
        parker.join().unwrap();
        completer.join().unwrap();
        resumer.join().unwrap();
        assert_eq!(resumed.load(Ordering::SeqCst), 1, "the task must be resumed exactly once (0: lost)");
    });
}
