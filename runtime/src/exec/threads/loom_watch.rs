//! loom model of the watch (`watch.rs`, README.md beside this file, "The
//! watch"): a task that an outside thread puts into its empty entry while
//! the watch holds, starting no drainer for it, is taken care of when the
//! watcher lets go of the watch at that moment, on the real [`Drainers`],
//! and [`Watch`]. The glue is the scheduler's, step for step:
//! `Scheduler::push_from_outside` (the put, `Drainers::should_start`'s fence
//! and look, then `Watch::covers`) and `Scheduler::let_go_watch`.
//!
//! The entry's deque is a counter, pushed with a release and looked at
//! with an acquire, as crossbeam's `back` index is (see `loom_entries.rs`).
//! `scripts/check/mutations.sh` checks that the model fails without the
//! let-go's look at the entries (mutation 17).

use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;

use crate::exec::threads::drainers::{Drainers, Start};
use crate::exec::threads::watch::Watch;
use crate::sync::mutation;
use crate::sync::{side, Ordering};

struct Model {
    drainers: Drainers,
    watch: Watch,
    /// Tasks in the outside thread's entry (entry 0).
    entry: AtomicUsize,
}

impl Model {
    /// One pool thread, asleep and holding the watch: its permit is free.
    fn new() -> Arc<Model> {
        let m = Arc::new(Model {
            drainers: Drainers::new(1, 1, 1),
            watch: Watch::new(),
            entry: AtomicUsize::new(0),
        });
        assert!(m.watch.try_hold(&m.drainers));
        m
    }

    /// `Scheduler::push_from_outside`, onto the empty entry.
    fn push_from_outside(&self) -> Start {
        // Release, as crossbeam's store of `back` (only the owner pushes).
        let n = self.entry.load(Ordering::Relaxed);
        self.entry.store(n + 1, Ordering::Release);
        if self.drainers.should_start() && !self.watch.covers(&self.drainers, 0) {
            self.drainers.try_start()
        } else {
            Start::NotNeeded
        }
    }

    /// `Scheduler::let_go_watch`.
    fn let_go(&self) -> Start {
        self.watch.let_go(&self.drainers);
        // Acquire, as crossbeam's `Stealer::is_empty` reads `back`.
        if !mutation::WATCH_NO_RECHECK && self.entry.load(Ordering::Acquire) > 0 {
            self.drainers.start_if_permit_free()
        } else {
            Start::NotNeeded
        }
    }
}

/// The outside thread puts a task into its empty entry as the watcher lets
/// go of the watch (a start woke it, or no push came for a while): the
/// push sees the watch let go and starts a drainer, or the let-go's look
/// sees the task and starts one. Without that look (mutation 17), loom
/// finds the task with no drainer.
#[test]
fn a_task_queued_as_the_watcher_lets_go_gets_a_drainer() {
    loom::model(|| {
        let m = Model::new();
        let producer = {
            let m = Arc::clone(&m);
            thread::spawn(move || m.push_from_outside())
        };
        let watcher = {
            let m = Arc::clone(&m);
            side(move || m.let_go())
        };
        let from_watcher = watcher.join().unwrap();
        let from_producer = producer.join().unwrap();
        let started = [from_watcher, from_producer].iter().filter(|s| **s != Start::NotNeeded).count();
        assert_eq!(started, 1, "the task queued on the outside entry was stranded, or got two drainers");
    });
}
