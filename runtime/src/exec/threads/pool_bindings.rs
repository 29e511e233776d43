//! The bindings of the tasks that the pool's threads queue: which token a
//! task queued inside a task produces, and the group that token was added
//! to, readable by a thread outside the pool that waits for that group
//! (`waiter.rs`). A parallel loop's caller queues a few blocks; the workers
//! that run them split the rest off into their own deques
//! (`async-parallel-for`'s dispatch: `CreateToken`, `Execute`,
//! `AddTokenToGroup` inside a task). Without these bindings the caller
//! could run only the few it queued, and waited idle while the workers
//! split and ran the rest (elementwise on 2 cores: 1.3x slower than
//! OpenMP, which lets its caller take part).
//!
//! The thread's own binder (`binding.rs`) records the token it creates;
//! its push into its slot binds that token to the task's handle here
//! ([`PoolBindings::bind`]); its `AddTokenToGroup` adds the group
//! ([`PoolBindings::add_group`]). A waiter that took a task from a
//! runtime thread's deque asks [`PoolBindings::produces`].
//!
//! One table for the whole pool, indexed by a hash of the handle: an entry
//! holds the newest push of its handle, by whichever thread (a task stolen
//! in a batch into another deque keeps its binding), or of another handle
//! that overwrote it, which unbinds the first. Every entry is a seqlock:
//! its version is odd while a thread writes it; a writer takes it with a
//! compare-exchange, and one that finds it taken leaves the entry to the
//! other writer (whose handle then holds it: the first task is unbound). A
//! reader that sees the version odd or changed across its reads takes the
//! task as unbound. An unbound task runs on the pool, as every task does
//! on the C++ runtime: a miss costs speed, never the rule.
//!
//! Why a binding read is the task's own: the task is in a deque, not run,
//! so its frame (its handle) is not freed and reused; every push of a task
//! by a runtime thread writes (or, when taken, leaves to a writer of
//! another handle) the entry of its handle, before the deque publishes the
//! task, and the thief's steal acquires what the push released. So the
//! entry holds either this push's binding, a later `add_group` of it, or
//! another handle.

use crate::base::task::Task;
use crate::sync::mutation;
use crate::sync::{fence, AtomicUsize, Ordering};

/// Entries in the table: four times a worker's tasks in a parallel loop's
/// split (its deque and slot), so that a collision is rare.
#[cfg(not(loom))]
const ENTRIES: usize = 256;
/// Two under loom: its models make two handles share an entry.
#[cfg(loom)]
const ENTRIES: usize = 2;
const _: () = assert!(ENTRIES.is_power_of_two());
const ENTRY_BITS: u32 = ENTRIES.trailing_zeros();

/// One binding, on a cache line of its own: the workers that write
/// neighbouring entries do not share lines.
#[repr(align(64))]
struct Entry {
    /// Even while the entry is stable, odd while a thread writes it.
    version: AtomicUsize,
    /// The coroutine handle; zero in an unused entry.
    handle: AtomicUsize,
    /// The completion of the task's token, or zero (a continuation).
    token: AtomicUsize,
    /// The completion of the group the token was added to, or zero.
    group: AtomicUsize,
}

pub(super) struct PoolBindings {
    entries: Box<[Entry]>,
    /// The group of the newest `AddTokenToGroup` on a runtime thread: a
    /// waiter looks into the pool's deques only while it awaits that group
    /// (a hint, see [`PoolBindings::may_hold`]).
    newest_group: AtomicUsize,
}

pub(super) fn index_of(handle: usize) -> usize {
    // Fibonacci hashing: a frame's address has zeros in its low bits.
    ((handle as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (u64::BITS - ENTRY_BITS)) as usize
}

impl Entry {
    /// Takes the entry for writing: its stable version, or `None` when
    /// another thread writes it now.
    fn lock(&self) -> Option<usize> {
        // Relaxed load: only a guess for the exchange, which decides.
        let version = self.version.load(Ordering::Relaxed);
        if version % 2 == 1 {
            return None;
        }
        // Acquire on success: this writer sees the stores of the one that
        // unlocked the version it took.
        self.version.compare_exchange(version, version + 1, Ordering::Acquire, Ordering::Relaxed).ok()?;
        // Release fence: a reader whose acquire fence follows its load of a
        // store below sees the odd version too, so its re-check fails (the
        // seqlock's writer side; mutation 15 takes the re-check out).
        fence(Ordering::Release);
        Some(version)
    }

    fn unlock(&self, version: usize) {
        // Release: a reader that sees this version sees the writes before.
        self.version.store(version + 2, Ordering::Release);
    }
}

impl PoolBindings {
    pub(super) fn new() -> PoolBindings {
        let entries = (0..ENTRIES)
            .map(|_| Entry {
                version: AtomicUsize::new(0),
                handle: AtomicUsize::new(0),
                token: AtomicUsize::new(0),
                group: AtomicUsize::new(0),
            })
            .collect();
        PoolBindings { entries, newest_group: AtomicUsize::new(0) }
    }

    /// A runtime thread pushes the task of `handle`, before the push
    /// publishes it: binds `token` to the handle, or unbinds the handle
    /// when `token` is zero. The pusher decides which: an `Execute` binds
    /// the token the thread created since its last push, any other task
    /// (a continuation) none.
    pub(super) fn bind(&self, handle: usize, token: usize) {
        let entry = &self.entries[index_of(handle)];
        // Relaxed: only this push writes this handle now (its task is not
        // run yet, so no other live task has it); an entry that holds
        // another handle leaves this one unbound as it is. A continuation
        // (or an `Execute` with no token) then costs one load, no lock (a
        // dependency chain of continuations pushes one per link).
        if token == 0 && entry.handle.load(Ordering::Relaxed) != handle {
            return;
        }
        let Some(version) = entry.lock() else {
            // Another thread writes the entry for another handle, which
            // then holds it: this task is unbound (see the module's
            // comment).
            return;
        };
        // Relaxed: inside the seqlock (its exchange and release).
        entry.handle.store(handle, Ordering::Relaxed);
        entry.token.store(token, Ordering::Relaxed);
        entry.group.store(0, Ordering::Relaxed);
        entry.unlock(version);
    }

    /// `AddTokenToGroup(token, group)` (completions' addresses) on a
    /// runtime thread, whose newest pushes were of `handles`: the one bound
    /// to `token` produces a token of `group`.
    pub(super) fn add_group(&self, handles: [usize; 2], token: usize, group: usize) {
        // Relaxed: a hint that publishes nothing. Stored only when it
        // changes: a loop's workers add to one group, and would otherwise
        // pass its line back and forth at every block.
        if self.newest_group.load(Ordering::Relaxed) != group {
            self.newest_group.store(group, Ordering::Relaxed);
        }
        for handle in handles {
            if handle == 0 {
                continue;
            }
            let entry = &self.entries[index_of(handle)];
            let Some(version) = entry.lock() else {
                continue;
            };
            // Relaxed: inside the seqlock.
            let bound = entry.handle.load(Ordering::Relaxed) == handle && entry.token.load(Ordering::Relaxed) == token;
            if bound {
                entry.group.store(group, Ordering::Relaxed);
            }
            entry.unlock(version);
            if bound {
                return;
            }
        }
    }

    /// Whether the pool's deques may hold producers of `awaited`: it is
    /// the group a runtime thread added a token to last. A waiter for
    /// anything else leaves the pool's deques alone: taking their tasks to
    /// ask would move the ones it does not wait for to the shared queue (a
    /// recursive fan-out's, whose root the program awaits). A hint: a
    /// producer missed here runs on the pool.
    pub(super) fn may_hold(&self, awaited: usize) -> bool {
        // Relaxed: a hint (see above).
        self.newest_group.load(Ordering::Relaxed) == awaited
    }

    /// True when `task`, taken from a runtime thread's deque, produces
    /// `awaited` (a completion's address): its token, or a token of the
    /// group.
    pub(super) fn produces(&self, task: &Task, awaited: usize) -> bool {
        let handle = task.handle() as usize;
        let entry = &self.entries[index_of(handle)];
        // Acquire: the reads below see the writes of the writer that
        // released this version.
        let before = entry.version.load(Ordering::Acquire);
        if before % 2 == 1 {
            return false;
        }
        // Relaxed, then the acquire fence: if a writer's store is seen
        // here, the fence makes its odd version visible to the load below
        // (the seqlock's reader side).
        let bound = entry.handle.load(Ordering::Relaxed) == handle
            && (entry.token.load(Ordering::Relaxed) == awaited || entry.group.load(Ordering::Relaxed) == awaited);
        fence(Ordering::Acquire);
        if mutation::BINDING_NO_RECHECK {
            return bound;
        }
        bound && entry.version.load(Ordering::Relaxed) == before
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::base::task::Origin;
    use std::ffi::c_void;

    unsafe extern "C" fn nothing(_: *mut c_void) {}

    fn task(handle: usize, origin: Origin) -> Task {
        Task::new(handle as *mut c_void, Some(nothing), origin, "test")
    }

    #[test]
    fn an_execute_binds_its_token_and_its_group() {
        let (token, group, other) = (0x10, 0x20, 0x30);
        let bindings = PoolBindings::new();
        let t = task(0x1000, Origin::Execute);
        bindings.bind(0x1000, token);
        assert!(bindings.produces(&t, token) && !bindings.produces(&t, group));
        bindings.add_group([0x2000, 0x1000], token, group);
        assert!(bindings.produces(&t, group) && !bindings.produces(&t, other));
    }

    #[test]
    fn a_continuation_and_a_bound_push_of_another_handle_unbind() {
        let token = 0x10;
        let bindings = PoolBindings::new();
        let t = task(0x1000, Origin::Execute);
        bindings.bind(0x1000, token);
        bindings.bind(0x1000, 0);
        assert!(!bindings.produces(&t, token));
        bindings.bind(0x1000, token);
        let other = (0x1001..).find(|&h| index_of(h) == index_of(0x1000)).unwrap();
        // An unbound push of another handle leaves the entry alone.
        bindings.bind(other, 0);
        assert!(bindings.produces(&t, token) && !bindings.produces(&task(other, Origin::Execute), token));
        // A bound one takes it.
        bindings.bind(other, 0x20);
        assert!(!bindings.produces(&t, token) && bindings.produces(&task(other, Origin::Execute), 0x20));
    }

    #[test]
    fn a_group_binds_only_the_task_of_its_token() {
        let (a, b, group) = (0x10, 0x20, 0x30);
        let bindings = PoolBindings::new();
        let (ta, tb) = (task(0x1000, Origin::Execute), task(0x2000, Origin::Execute));
        bindings.bind(0x1000, a);
        bindings.bind(0x2000, b);
        bindings.add_group([0x2000, 0x1000], a, group);
        assert!(bindings.produces(&ta, group) && !bindings.produces(&tb, group));
    }

    #[test]
    fn an_entry_being_written_reads_as_unbound_and_is_not_taken_twice() {
        let token = 0x10;
        let bindings = PoolBindings::new();
        let t = task(0x1000, Origin::Execute);
        bindings.bind(0x1000, token);
        let entry = &bindings.entries[index_of(0x1000)];
        let version = entry.lock().expect("stable");
        assert!(!bindings.produces(&t, token), "read while written");
        assert!(entry.lock().is_none(), "taken twice");
        entry.unlock(version);
        assert!(bindings.produces(&t, token));
    }
}
