//! loom models of idleness (`idle.rs`) on the real [`IdleSignal`] and
//! [`Drainers`]: the wait for it against the last drainer leaving and the
//! last held task let go, and the count of a task that switches out as its
//! drainer leaves. Run with the crate's other loom models (`make loom`);
//! `make mutations` checks that they fail without the waiter's re-check
//! (mutation 4), the release's notification (18) and the hold's count (23).

use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;

use crate::exec::threads::drainers::{AfterLeave, Drainers, Start};
use crate::exec::threads::idle::IdleSignal;
use crate::sync::Ordering;

/// A thread waits for idleness (the harness between two runs, the
/// destroy hook) while the only drainer, out of tasks, goes through its
/// idle wait and leaves: it leaves at once once it sees the waiter,
/// else after one more look, as `run_drainer`. On the real
/// [`IdleSignal`] and [`Drainers`]: the waiter must hear of idleness
/// whichever comes first, its spin's last look, its re-check under the
/// signal's lock or its sleep. Without the re-check (mutation 4) loom
/// finds the notification lost before the sleep: a deadlock.
#[test]
fn the_last_drainer_leaving_wakes_the_thread_waiting_for_idleness() {
    loom::model(|| {
        let drainers = Arc::new(Drainers::new(1, 1, 1));
        let idle = Arc::new(IdleSignal::new());
        let queued = Arc::new(AtomicUsize::new(0));
        assert_eq!(drainers.try_start(), Start::Wake);
        let drainer = {
            let (drainers, idle, queued) = (Arc::clone(&drainers), Arc::clone(&idle), Arc::clone(&queued));
            thread::spawn(move || {
                if !idle.has_waiters() {
                    thread::yield_now();
                }
                let after = drainers.leave(true, false);
                match drainers.after_leave(after, || queued.load(Ordering::SeqCst) == 0) {
                    AfterLeave::Idle => idle.notify(),
                    other => panic!("the only drainer left an empty queue: {other:?}"),
                }
            })
        };
        let is_idle = || drainers.snapshot().drainers() == 0 && queued.load(Ordering::SeqCst) == 0;
        assert!(idle.wait(None, is_idle));
        drainer.join().unwrap();
    });
}

/// A thread waits for idleness while the only task held out of the queue
/// (a waiter's batch without an entry, a task switched out) is let go: the
/// release that brings the count to zero sees the waiter, in the same
/// read-modify-write, and notifies; or the waiter's look sees the count
/// down. Either way the waiter hears of idleness.
#[test]
fn the_last_held_task_let_go_wakes_the_thread_waiting_for_idleness() {
    loom::model(|| {
        let idle = Arc::new(IdleSignal::new());
        idle.hold();
        let holder = {
            let idle = Arc::clone(&idle);
            thread::spawn(move || {
                // (A yield, so that loom also runs the release after the
                // waiter's spin and re-check, as the other model's drainer.)
                if !idle.has_waiters() {
                    thread::yield_now();
                }
                // `WaiterHold`'s drop.
                if idle.release() {
                    idle.notify_if(|| idle.held() == 0);
                }
            })
        };
        assert!(idle.wait(None, || idle.held() == 0));
        holder.join().unwrap();
    });
}

/// A task switches out (`Scheduler::switching_out` counts it held) and its
/// drainer then leaves, while another thread looks for idleness in
/// `Scheduler::is_idle`'s order: the drainers first, the held count after.
/// A look that sees the drainer gone sees the task held (README.md beside
/// this file, row 11), so the scheduler never looks idle with a task
/// switched out. Without the count (mutation 23) loom finds the look that
/// calls it idle. (The model does not catch the two reads the other way
/// round: loom ran no schedule with the whole switch-out between them.)
#[test]
fn a_task_switched_out_as_its_drainer_leaves_keeps_the_scheduler_busy() {
    loom::model(|| {
        let drainers = Arc::new(Drainers::new(1, 1, 1));
        let idle = Arc::new(IdleSignal::new());
        assert_eq!(drainers.try_start(), Start::Wake);
        let drainer = {
            let (drainers, idle) = (Arc::clone(&drainers), Arc::clone(&idle));
            thread::spawn(move || {
                // The task's `switching_out`, then its drainer's leave (it
                // found no other task).
                idle.hold();
                let _ = drainers.leave(true, false);
            })
        };
        // (A yield: without it loom ran the look only before the leave.)
        thread::yield_now();
        let looks_idle = drainers.snapshot().drainers() == 0 && idle.held() == 0;
        drainer.join().unwrap();
        assert!(!looks_idle, "the scheduler looked idle with a task switched out");
    });
}
