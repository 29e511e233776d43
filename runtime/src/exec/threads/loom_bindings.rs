//! loom model of the pool's bindings (`pool_bindings.rs`): a waiter's look
//! at an entry against a worker's push of another handle into that entry.
//! Run with the crate's other loom models (`make loom`); `make mutations`
//! checks that it finds the torn read without the reader's re-check of the
//! version (mutation 15).

use std::ffi::c_void;

use loom::sync::Arc;
use loom::thread;

use crate::base::task::{Origin, Task};
use crate::exec::threads::pool_bindings::{index_of, PoolBindings};
use crate::sync::side;

unsafe extern "C" fn nothing(_: *mut c_void) {}

fn task(handle: usize) -> Task {
    Task::new(handle as *mut c_void, Some(nothing), Origin::Execute, "loom")
}

/// A worker pushed task A (bound to token `a`) and now pushes task B,
/// whose handle shares A's entry, bound to token `b`, while a second
/// worker pushes a third task (bound too) into the same entry; a waiter
/// looks at whether A produces `b`. A never does: the look must not join A's
/// handle, still in the entry, with B's token, being written. Without the
/// re-check of the version after the fields (mutation 15) loom finds that
/// torn read, which would run on the waiter a task it does not wait for.
#[test]
fn a_look_that_overlaps_a_push_into_the_same_entry_never_joins_two_bindings() {
    loom::model(|| {
        let bindings = Arc::new(PoolBindings::new());
        let handle_a = 0x1000;
        let handle_b = (handle_a + 1..).find(|&h| index_of(h) == index_of(handle_a)).unwrap();
        let handle_c = (handle_b + 1..).find(|&h| index_of(h) == index_of(handle_a)).unwrap();
        // Two tokens' addresses (the bindings never dereference them).
        let (a, b) = (0x10, 0x20);
        bindings.bind(handle_a, a);
        let worker = {
            let bindings = Arc::clone(&bindings);
            thread::spawn(move || bindings.bind(handle_b, b))
        };
        let other = {
            let bindings = Arc::clone(&bindings);
            thread::spawn(move || bindings.bind(handle_c, 0x30))
        };
        let waiter = {
            let bindings = Arc::clone(&bindings);
            side(move || bindings.produces(&task(handle_a), b))
        };
        assert!(!waiter.join().unwrap(), "a waiter took task A for the token of task B: a torn read of their entry");
        worker.join().unwrap();
        other.join().unwrap();
        // After both pushes the entry holds B's or C's binding, whole.
        let b_bound = bindings.produces(&task(handle_b), b);
        assert!(!bindings.produces(&task(handle_a), a) && !bindings.produces(&task(handle_a), b));
        assert!(b_bound || !bindings.produces(&task(handle_c), b));
    });
}
