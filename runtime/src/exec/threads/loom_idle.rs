//! loom models of idleness (`idle.rs`) on the real [`IdleSignal`] and
//! [`Drainers`]: the wait for it against the last drainer leaving and the
//! last held task let go, the count of a task that switches out as its
//! drainer leaves, and a waiter's take of a task (on the real [`Fills`] and
//! [`Slot`]). Run with the crate's other loom models (`make loom`); `make
//! mutations` checks that they fail without the waiter's re-check
//! (mutation 4), the release's notification (18), the hold's count (23),
//! the running flag's fence (24) and the hold's fence (25).

use loom::sync::atomic::{AtomicBool, AtomicUsize};
use loom::sync::Arc;
use loom::thread;

use crate::base::task::Origin;
use crate::exec::threads::deques::Fills;
use crate::exec::threads::drainers::{AfterLeave, Drainers, Start};
use crate::exec::threads::idle::IdleSignal;
use crate::exec::threads::loom_slot::task;
use crate::exec::threads::slot::Slot;
use crate::sync::{side, Ordering};

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
        let waiter = side(move || {
            let is_idle = || drainers.snapshot().drainers() == 0 && queued.load(Ordering::SeqCst) == 0;
            idle.wait(None, is_idle)
        });
        assert!(waiter.join().unwrap());
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
        let waiter = side(move || idle.wait(None, || idle.held() == 0));
        assert!(waiter.join().unwrap());
        holder.join().unwrap();
    });
}

/// A task switches out (`Scheduler::switching_out` counts it held) and its
/// drainer then leaves, while another thread looks for idleness in
/// `Scheduler::is_idle`'s order: the drainers first, the held count after.
/// A look that sees the drainer gone sees the task held (README.md beside
/// this file, row 11), so the scheduler never looks idle with a task
/// switched out. Without the count (mutation 23) loom finds the look that
/// calls it idle; it also finds it with the look's two reads the other
/// way round.
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
        let looker = side(move || drainers.snapshot().drainers() == 0 && idle.held() == 0);
        drainer.join().unwrap();
        assert!(!looker.join().unwrap(), "the scheduler looked idle with a task switched out");
    });
}

/// A waiter with an entry takes its slot's task for its batch after it
/// raised the entry's running flag (`Fills::begin_running`), while another
/// thread looks for idleness in `is_idle`'s order: the entries' tasks
/// (`Slot::is_full`, a `Relaxed` load of what the take, a `Relaxed`
/// compare-and-swap, wrote), then the flags (`Fills::count_running`). A
/// look that sees the task taken sees the flag up, or the batch over
/// (README.md beside this file, row 10). Without the flag's Release fence
/// (mutation 24) loom finds the look that calls the scheduler idle while
/// the waiter holds the task.
#[test]
fn a_task_a_waiter_takes_for_its_batch_keeps_the_scheduler_busy() {
    loom::model(|| {
        let slot = Arc::new(Slot::new());
        let fills = Arc::new([Fills::new()]);
        let ran = Arc::new(AtomicBool::new(false));
        assert!(slot.put(task(Origin::Execute)).is_none());
        let waiter = {
            let (slot, fills, ran) = (Arc::clone(&slot), Arc::clone(&fills), Arc::clone(&ran));
            thread::spawn(move || {
                fills[0].begin_running();
                std::mem::forget(slot.take_own().expect("only the owner takes"));
                ran.store(true, Ordering::Relaxed);
                fills[0].end_running();
            })
        };
        let looker = side(move || {
            // A look that read the flag down from the batch's end
            // (Release, read with Acquire) sees the task run.
            !slot.is_full() && Fills::count_running(&fills[..]) == 0 && !ran.load(Ordering::Relaxed)
        });
        waiter.join().unwrap();
        assert!(!looker.join().unwrap(), "the scheduler looked idle while a waiter ran a task");
    });
}

/// A waiter without an entry (or a thread that exits with tasks in its
/// entry) counts the task it takes as held (`IdleSignal::hold`), then
/// takes it (a `Relaxed` compare-and-swap, as the owner's take of a slot),
/// while another thread looks for idleness in `is_idle`'s order: the
/// slot, an Acquire fence (`Fills::count_running`'s), then `held`. A look
/// that sees the task taken sees the count raised, or let go after the
/// task ran (README.md beside this file, row 10).
#[test]
fn a_task_a_waiter_holds_before_it_takes_keeps_the_scheduler_busy() {
    loom::model(|| {
        let slot = Arc::new(Slot::new());
        let idle = Arc::new(IdleSignal::new());
        let ran = Arc::new(AtomicBool::new(false));
        assert!(slot.put(task(Origin::Execute)).is_none());
        let waiter = {
            let (slot, idle, ran) = (Arc::clone(&slot), Arc::clone(&idle), Arc::clone(&ran));
            thread::spawn(move || {
                idle.hold();
                std::mem::forget(slot.take_own().expect("only the owner takes"));
                ran.store(true, Ordering::Relaxed);
                let _ = idle.release();
            })
        };
        let looker = side(move || {
            !slot.is_full() && Fills::count_running(&[]) == 0 && idle.held() == 0 && !ran.load(Ordering::Relaxed)
        });
        waiter.join().unwrap();
        assert!(!looker.join().unwrap(), "the scheduler looked idle while a waiter held a task");
    });
}
