//! Which queued task produces which object: what lets a thread that waits
//! in an `Await*` outside the pool run only the tasks it waits for
//! (README.md beside this file, "A waiting thread runs its producers").
//!
//! The ABI does not name a task's objects, but MLIR's lowering gives them
//! by order: the outlined function of an `async.execute` creates its token
//! (`mlirAsyncRuntimeCreateToken`) and its values, then allocates and
//! begins the coroutine frame and calls `mlirAsyncRuntimeExecute(handle,
//! resume)` with no runtime call between; `AddTokenToGroup(token, group)`
//! follows in the caller (docs/producer-binding.md shows the IR of each
//! MLIR version). So a thread records the tokens and values it creates
//! ([`created`]); its next push of a task into its own entry binds them to
//! that task's handle ([`pushed`]); an `AddTokenToGroup` on the same thread
//! adds the group to the binding of the token ([`added_to_group`]); and a
//! waiter asks whether a task of its entry produces what it awaits
//! ([`produces`]).
//!
//! All of it is per thread, read and written by that thread only, with no
//! atomics: the thread that queues a task into its own entry is the only
//! one that binds it, and the only one that takes it to run while it
//! waits (thieves take tasks without asking). A task made ready in another
//! way (a continuation, a task switched out and resumed) is unbound: the
//! waiter leaves it to the pool.
//!
//! A hand-written caller that creates a token and then queues an unrelated
//! task binds the two: that task may then run on the caller's thread while
//! it awaits the token (the ABI doc says so, beside the rule).

use std::cell::UnsafeCell;

use crate::base::task::{Origin, Task};
use crate::object::completion::Completion;
use crate::sync::tls;

/// Objects one task produces that a binding records: the token and up to
/// three values. A task with more results is bound to the first ones only;
/// a waiter for another of its values leaves it to the pool.
const OBJECTS: usize = 4;

/// Bindings a thread remembers: its newest pushes. A task whose binding
/// was overwritten by newer ones is unbound, and runs on the pool. More
/// than the tasks an entry holds (`outside.rs`, 64 in its deque and one in
/// its slot).
const RING: usize = 128;

/// How many of the newest bindings an `AddTokenToGroup` looks through for
/// its token: the lowering adds a token to its group right after the
/// `Execute` that binds it (`make check-producer-order`: at most one other
/// `Execute` between them in the corpus, in MLIR 14 to 22).
const GROUP_LOOKBACK: usize = 2;

// The ring's index wraps with a mask.
const _: () = assert!(RING.is_power_of_two());

/// The objects one push bound to its task's handle.
#[derive(Clone, Copy)]
struct Binding {
    /// The coroutine handle: it stays the same across the task's
    /// suspensions. Zero in an unused entry.
    handle: usize,
    /// The completions of the task's token and values (zero past the
    /// last).
    objects: [usize; OBJECTS],
    /// The completion of the group the token was added to, or zero.
    group: usize,
}

const UNBOUND: Binding = Binding { handle: 0, objects: [0; OBJECTS], group: 0 };

/// A thread's bindings.
struct Binder {
    /// Tokens and values created on this thread since its last push
    /// (completions' addresses), zero past the last.
    open: [usize; OBJECTS],
    open_len: usize,
    /// The newest pushes, `next` the oldest (overwritten next).
    ring: [Binding; RING],
    next: usize,
}

impl Binder {
    const fn new() -> Binder {
        Binder { open: [0; OBJECTS], open_len: 0, ring: [UNBOUND; RING], next: 0 }
    }

    fn created(&mut self, object: usize, token: bool) {
        if token {
            // A token starts the objects of the next `Execute` (its values
            // follow): older ones are bound to none.
            self.open = [object, 0, 0, 0];
            self.open_len = 1;
        } else if self.open_len < OBJECTS {
            self.open[self.open_len] = object;
            self.open_len += 1;
        }
    }

    fn pushed(&mut self, handle: usize, execute: bool) {
        let binding = &mut self.ring[self.next];
        binding.handle = handle;
        // `open` is zero past its last object.
        binding.objects = if execute { self.open } else { [0; OBJECTS] };
        binding.group = 0;
        self.forget_open();
        self.next = (self.next + 1) & (RING - 1);
    }

    /// The index of the newest of the `n` newest bindings for which `f`
    /// holds. `next` is the oldest: the newest is just before it.
    fn find_newest(&self, n: usize, f: impl Fn(&Binding) -> bool) -> Option<usize> {
        let mut i = self.next;
        for _ in 0..n {
            i = i.wrapping_sub(1) & (RING - 1);
            if f(&self.ring[i]) {
                return Some(i);
            }
        }
        None
    }

    fn added_to_group(&mut self, token: usize, group: usize) {
        // Usually the token of the newest binding.
        let newest = self.next.wrapping_sub(1) & (RING - 1);
        if self.ring[newest].objects[0] == token && token != 0 {
            self.ring[newest].group = group;
            return;
        }
        if let Some(i) = self.find_newest(GROUP_LOOKBACK, |b| b.handle != 0 && b.objects.contains(&token)) {
            self.ring[i].group = group;
        }
    }

    fn produces(&self, handle: usize, awaited: usize) -> bool {
        // The newest binding of the handle is its push's: pushes and
        // bindings happen in the same order on this thread, and a ring
        // overwrites its oldest entries first.
        self.find_newest(RING, |b| b.handle == handle)
            .is_some_and(|i| self.ring[i].group == awaited || self.ring[i].objects.contains(&awaited))
    }

    fn forget_open(&mut self) {
        if self.open_len != 0 {
            self.open = [0; OBJECTS];
            self.open_len = 0;
        }
    }
}

/// Owns a thread's binder; the `binder` slot of `tls` points to it while
/// it lives.
struct Owned(UnsafeCell<Binder>);

impl Drop for Owned {
    fn drop(&mut self) {
        tls::with(|slots| slots.binder.set(std::ptr::null()));
    }
}

thread_local! {
    static BINDER: Box<Owned> = Box::new(Owned(UnsafeCell::new(Binder::new())));
}

/// Calls `f` with this thread's binder; does nothing while the thread's
/// thread-locals are torn down. Never inlined: a task on a task stack may
/// move to another thread between two calls, and each call must find the
/// thread it runs on (fibers.rs, "Thread-locals").
#[inline(never)]
fn with_binder(f: impl FnOnce(&mut Binder)) {
    let mut ptr = tls::with(|slots| slots.binder.get()).cast::<Owned>();
    if ptr.is_null() {
        ptr = match BINDER.try_with(|owned| {
            let ptr: *const Owned = &**owned;
            tls::with(|slots| slots.binder.set(ptr.cast()));
            ptr
        }) {
            Ok(ptr) => ptr,
            Err(_) => return,
        };
    }
    // SAFETY: the slot points to this thread's binder while it lives (its
    // drop clears the slot); only this thread reaches it, and no reference
    // to it outlives this call, which calls nothing that could reach it
    // again.
    f(unsafe { &mut *(*ptr).0.get() })
}

/// A token (`token`) or a value was created on this thread, outside the
/// pool.
pub(crate) fn created(object: &Completion, token: bool) {
    let object = object as *const Completion as usize;
    with_binder(|binder| binder.created(object, token));
}

/// This thread pushed `task` into its own entry: an `Execute` binds the
/// objects created since the last push; any other task (a continuation)
/// is unbound.
pub(crate) fn pushed(task: &Task) {
    let handle = task.handle() as usize;
    let execute = task.origin() == Origin::Execute;
    with_binder(|binder| binder.pushed(handle, execute));
}

/// `AddTokenToGroup(token, group)` on this thread: a task bound to the
/// token produces a token of the group.
pub(crate) fn added_to_group(token: &Completion, group: &Completion) {
    let (token, group) = (token as *const Completion as usize, group as *const Completion as usize);
    with_binder(|binder| binder.added_to_group(token, group));
}

/// True when `task`, which this thread pushed into its own entry, produces
/// `awaited`: its token or one of its values, or a token of the group.
pub(crate) fn produces(task: &Task, awaited: &Completion) -> bool {
    let (handle, awaited) = (task.handle() as usize, awaited as *const Completion as usize);
    let mut found = false;
    with_binder(|binder| found = binder.produces(handle, awaited));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binder() -> Box<Binder> {
        Box::new(Binder::new())
    }

    #[test]
    fn an_execute_binds_the_objects_created_before_it() {
        let mut b = binder();
        b.created(10, true);
        b.created(11, false);
        b.pushed(1, true);
        assert!(b.produces(1, 10) && b.produces(1, 11));
        assert!(!b.produces(1, 12) && !b.produces(2, 10));
    }

    #[test]
    fn a_continuation_is_unbound_and_hides_an_older_binding_of_its_handle() {
        let mut b = binder();
        b.created(10, true);
        b.pushed(1, true);
        b.created(20, true);
        b.pushed(1, false);
        assert!(!b.produces(1, 10) && !b.produces(1, 20));
    }

    #[test]
    fn a_token_starts_the_objects_of_the_next_execute() {
        let mut b = binder();
        b.created(10, true);
        b.created(11, true);
        b.created(12, false);
        b.pushed(1, true);
        assert!(!b.produces(1, 10) && b.produces(1, 11) && b.produces(1, 12));
    }

    #[test]
    fn a_push_closes_the_open_objects() {
        let mut b = binder();
        b.created(10, true);
        b.pushed(1, true);
        b.pushed(2, true);
        assert!(!b.produces(2, 10));
    }

    #[test]
    fn a_group_binds_the_producer_of_its_token() {
        let mut b = binder();
        b.created(10, true);
        b.pushed(1, true);
        b.created(11, true);
        b.pushed(2, true);
        b.added_to_group(10, 99);
        assert!(b.produces(1, 99) && !b.produces(2, 99));
    }

    #[test]
    fn extra_objects_and_overwritten_bindings_are_unbound() {
        let mut b = binder();
        for object in 0..OBJECTS + 2 {
            b.created(100 + object, object == 0);
        }
        b.pushed(1, true);
        assert!(b.produces(1, 100) && !b.produces(1, 100 + OBJECTS));
        for handle in 2..2 + RING {
            b.pushed(handle, true);
        }
        assert!(!b.produces(1, 100));
    }

    #[test]
    fn the_newest_binding_of_a_handle_counts_after_the_ring_wrapped() {
        let mut b = binder();
        for round in 0..3 * RING {
            // Handles come back (a freed frame's address reused).
            let handle = 1 + round % 7;
            b.created(1000 + round, true);
            b.pushed(handle, true);
            assert!(b.produces(handle, 1000 + round), "round {round}");
            // Its older push's objects are not its now.
            if round >= 7 {
                assert!(!b.produces(handle, 1000 + round - 7), "round {round}");
            }
        }
    }
}
