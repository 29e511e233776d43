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
//! A runtime thread records the token it creates here too, and the
//! handles of its two newest pushes; its push binds that token in the
//! pool's table instead (`pool_bindings.rs`), which a waiter for a group
//! reads for the tasks it steals from the workers' deques.
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

/// Bindings a thread remembers, in a table indexed by a hash of the handle
/// (one slot a handle: a push overwrites the slot's binding). A task whose
/// binding a push of another handle overwrote is unbound, and runs on the
/// pool. Four times the tasks an entry holds (`outside.rs`, 64 in its deque
/// and one in its slot), so that such a collision is rare.
const TABLE: usize = 256;

// The table's index is a hash's top bits.
const _: () = assert!(TABLE.is_power_of_two());
const TABLE_BITS: u32 = TABLE.trailing_zeros();

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
    /// (completions' addresses): the first `open_len`.
    open: [usize; OBJECTS],
    open_len: usize,
    /// The bindings, by [`slot_of`] their handle.
    table: [Binding; TABLE],
    /// The slots of the two newest pushes, the newest first: an
    /// `AddTokenToGroup` looks for its token there (the lowering adds a
    /// token to its group right after the `Execute` that binds it; `make
    /// check-producer-order`: at most one other `Execute` between them in
    /// the corpus, in MLIR 14 to 22).
    newest: [usize; 2],
    /// On a runtime thread, the handles of its two newest pushes, the
    /// newest first: its `AddTokenToGroup` looks for its token in their
    /// pool bindings (`pool_bindings.rs`), as `newest` here.
    newest_pool: [usize; 2],
}

/// The table slot of `handle`: Fibonacci hashing (a frame's address has
/// zeros in its low bits).
fn slot_of(handle: usize) -> usize {
    ((handle as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (u64::BITS - TABLE_BITS)) as usize
}

impl Binder {
    const fn new() -> Binder {
        Binder { open: [0; OBJECTS], open_len: 0, table: [UNBOUND; TABLE], newest: [0; 2], newest_pool: [0; 2] }
    }

    fn created(&mut self, object: usize, token: bool) {
        if token {
            // A token starts the objects of the next `Execute` (its values
            // follow): older ones are bound to none.
            self.open[0] = object;
            self.open_len = 1;
        } else if self.open_len < OBJECTS {
            self.open[self.open_len] = object;
            self.open_len += 1;
        }
    }

    fn pushed(&mut self, handle: usize, execute: bool) {
        let slot = slot_of(handle);
        let binding = &mut self.table[slot];
        binding.handle = handle;
        let len = if execute { self.open_len } else { 0 };
        binding.objects = std::array::from_fn(|i| if i < len { self.open[i] } else { 0 });
        binding.group = 0;
        self.open_len = 0;
        self.newest = [slot, self.newest[0]];
    }

    /// A runtime thread pushes a task with `handle`: the token created
    /// since its last push, if any (zero otherwise), for its pool binding.
    fn pushed_to_pool(&mut self, handle: usize) -> usize {
        let token = if self.open_len > 0 { self.open[0] } else { 0 };
        self.open_len = 0;
        self.newest_pool = [handle, self.newest_pool[0]];
        token
    }

    fn added_to_group(&mut self, token: usize, group: usize) {
        if token == 0 {
            return;
        }
        // A token is its binding's first object (`created`).
        for slot in self.newest {
            let binding = &mut self.table[slot];
            if binding.handle != 0 && binding.objects[0] == token {
                binding.group = group;
                return;
            }
        }
    }

    fn produces(&self, handle: usize, awaited: usize) -> bool {
        // The slot's binding is the newest push of its handle, or of
        // another handle that overwrote it since.
        let binding = &self.table[slot_of(handle)];
        binding.handle == handle && (binding.group == awaited || binding.objects.contains(&awaited))
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
/// thread-locals are torn down. Inlined into its callers, which are fresh
/// activations (the ABI's functions, and a waiter's take of its next task,
/// `Batch::next`): a task on a task stack may move to another thread
/// between two of them, and each must find the thread it runs on
/// (fibers.rs, "Thread-locals").
#[inline(always)]
fn with_binder<R: Default>(f: impl FnOnce(&mut Binder) -> R) -> R {
    let mut ptr = tls::with(|slots| slots.binder.get()).cast::<Owned>();
    if ptr.is_null() {
        ptr = first_binder();
        if ptr.is_null() {
            return R::default();
        }
    }
    // SAFETY: the slot points to this thread's binder while it lives (its
    // drop clears the slot); only this thread reaches it, and no reference
    // to it outlives this call, which calls nothing that could reach it
    // again.
    f(unsafe { &mut *(*ptr).0.get() })
}

/// This thread's binder, made and put in its slot; null while the
/// thread's thread-locals are torn down.
#[cold]
#[inline(never)]
fn first_binder() -> *const Owned {
    BINDER
        .try_with(|owned| {
            let ptr: *const Owned = &**owned;
            tls::with(|slots| slots.binder.set(ptr.cast()));
            ptr
        })
        .unwrap_or(std::ptr::null())
}

/// A token (`token`) or a value was created on this thread (outside the
/// pool, or in a task on a runtime thread: `pool_bindings.rs`).
#[inline]
pub(crate) fn created(object: &Completion, token: bool) {
    let object = address(object);
    with_binder(|binder| binder.created(object, token));
}

/// This thread pushed `task` into its own entry: an `Execute` binds the
/// objects created since the last push; any other task (a continuation)
/// is unbound.
#[inline]
pub(crate) fn pushed(task: &Task) {
    let handle = task.handle() as usize;
    let execute = task.origin() == Origin::Execute;
    with_binder(|binder| binder.pushed(handle, execute));
}

/// `AddTokenToGroup(token, group)` on this thread: a task bound to the
/// token produces a token of the group.
#[inline]
pub(crate) fn added_to_group(token: &Completion, group: &Completion) {
    let (token, group) = (address(token), address(group));
    with_binder(|binder| binder.added_to_group(token, group));
}

/// This runtime thread pushes a task with `handle` into its slot: the
/// token it created since its last push, or zero, which the caller binds
/// to the task in the pool's bindings (`pool_bindings.rs`).
#[inline]
pub(super) fn pushed_to_pool(handle: usize) -> usize {
    with_binder(|binder| binder.pushed_to_pool(handle))
}

/// The handles of this runtime thread's two newest pushes, the newest
/// first (zero where none).
#[inline]
pub(super) fn newest_pool_pushes() -> [usize; 2] {
    with_binder(|binder| binder.newest_pool)
}

/// A completion's address, the key of every binding.
#[inline(always)]
pub(crate) fn address(object: &Completion) -> usize {
    object as *const Completion as usize
}

/// True when `task`, which this thread pushed into its own entry, produces
/// `awaited`: its token or one of its values, or a token of the group.
#[inline]
pub(crate) fn produces(task: &Task, awaited: &Completion) -> bool {
    let (handle, awaited) = (task.handle() as usize, address(awaited));
    with_binder(|binder| binder.produces(handle, awaited))
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
        // Another handle in its slot unbinds it.
        let other = (2..).find(|&h| slot_of(h) == slot_of(1)).unwrap();
        b.pushed(other, true);
        assert!(!b.produces(1, 100));
    }

    #[test]
    fn the_newest_binding_of_a_handle_counts() {
        let mut b = binder();
        for round in 0..3 * TABLE {
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
