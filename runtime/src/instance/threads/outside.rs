//! A thread outside the pool that queues tasks (the program's main thread,
//! an embedder's thread): its entry in the scheduler's registry, a deque
//!
//! Its tasks go to its deque, and the thread runs them itself, newest
//! first, when it waits in
//! an `Await*` (`waiter.rs`): in the usual shape (queue tasks, then await
//! them) none crosses to another core and no worker is woken for it. An
//! idle drainer takes them as it takes a task waiting in a runtime
//! thread's slot: once the owner has left its entry alone for a while
//! (`SlotPatience`), or on its last look; and a put starts a drainer when
//! none looks for work (`lookout.rs`), so a thread that queues a task and
//! then does not wait for it (a spin on memory, a condvar, its own work)
//! does not hold it.
//!
//! The entry is held from the thread's first task until the thread exits,
//! or until it queues on another scheduler (a later instance). At most
//! [`OUTSIDE_ENTRIES`] threads hold one; the others use the shared queue.

use std::cell::RefCell;
use std::sync::Arc;

use crossbeam_deque::Worker;

use crate::base::task::Task;
use crate::instance::threads::deques::OUTSIDE_ENTRIES;
use crate::instance::threads::Scheduler;
use crate::probe::observe;

/// The entry of this thread in one scheduler's registry.
struct OutsideEntry {
    /// Keeps the registry alive for the thread's exit, after which the
    /// entry is let go.
    scheduler: Arc<Scheduler>,
    entry: usize,
    worker: Worker<Task>,
}

thread_local! {
    static ENTRY: RefCell<Option<OutsideEntry>> = const { RefCell::new(None) };
}

impl Drop for OutsideEntry {
    /// The thread exits (or moves to another scheduler): tasks it left go
    /// to the shared queue, and the entry is free for another thread.
    fn drop(&mut self) {
        // The tasks are counted as held by a waiter while they move from
        // the entry to the queue: between the two, the idle check (which
        // looks at both) would otherwise see neither, and the destroy hook
        // could join the threads before they reach the queue. (A destroy
        // that found the scheduler idle before this count went up found
        // the entry empty, and nothing fills it since: this thread queues
        // through the instance's gate, closed by then.)
        let moving = self.scheduler.hold_for_waiter();
        let mut left = Vec::new();
        while let Some(task) = self.worker.pop() {
            left.push(task);
        }
        self.scheduler.deques.let_go_outside(self.entry);
        if !left.is_empty() && !self.scheduler.takes_tasks() {
            // Cannot be (see above); rather than push onto a joined pool,
            // the tasks are dropped unrun, and the destroy hook's report of
            // abandoned tasks is what a bug here would look like.
            std::mem::forget(left);
        } else {
            // Oldest first, as thieves would have taken them.
            for task in left.into_iter().rev() {
                self.scheduler.push(task);
            }
        }
        drop(moving);
    }
}

/// Forgets this thread's entry without touching its scheduler (a forked
/// child, where that scheduler's threads do not exist).
pub(super) fn forget() {
    let _ = ENTRY.try_with(|entry| {
        if let Ok(mut entry) = entry.try_borrow_mut() {
            std::mem::forget(entry.take());
        }
    });
}

impl Scheduler {
    /// Queues a task made ready on a thread outside the pool: in that
    /// thread's entry when waiters run tasks, else in the shared queue.
    pub(crate) fn push_from_outside(&self, task: Task) {
        if !self.config.waiters_run_tasks {
            return self.push(task);
        }
        let mut task = Some(task);
        let queued = ENTRY
            .try_with(|entry| {
                let Ok(mut entry) = entry.try_borrow_mut() else {
                    return false;
                };
                if !entry.as_ref().is_some_and(|e| std::ptr::eq(Arc::as_ptr(&e.scheduler), self)) {
                    // The first task of this thread here: hold an entry
                    // (and let go of one on an earlier scheduler).
                    drop(entry.take());
                    let Some(me) = self.me.upgrade() else {
                        return false;
                    };
                    let Some((index, worker)) = self.deques.hold_outside() else {
                        return false;
                    };
                    *entry = Some(OutsideEntry { scheduler: me, entry: index, worker });
                }
                let entry = entry.as_ref().expect("held above");
                self.deques.push_outside(entry.entry, &entry.worker, task.take().expect("queued once"));
                observe::task_queued(|| self.queue.len() + entry.worker.len());
                true
            })
            // The thread is exiting, its thread-locals are gone: the
            // shared queue.
            .unwrap_or(false);
        match task {
            Some(task) => self.push(task),
            // A drainer must be looking, or be started (`lookout.rs`): at
            // every push, even onto a deque that held a task. Skipping the
            // fence there ("the drainer found for the older task looks
            // again") lost tasks: this thread's "not empty" may be stale
            // against a thief that just emptied the deque, and that thief's
            // last look may miss this push, which no fence orders before it
            // (`runtime/tests/lifecycle.rs`,
            // `the_destroy_hook_returns_against_an_endless_producer`, hung
            // in 1 run of 2).
            None if queued => self.after_local_push(),
            None => {}
        }
    }

    /// The newest task this thread queued in its entry here, if any.
    pub(super) fn take_own_outside(&self) -> Option<Task> {
        ENTRY
            .try_with(|entry| {
                let entry = entry.try_borrow().ok()?;
                let entry = entry.as_ref().filter(|e| std::ptr::eq(Arc::as_ptr(&e.scheduler), self))?;
                entry.worker.pop()
            })
            .ok()
            .flatten()
    }
}

const _: () = assert!(OUTSIDE_ENTRIES > 0);
