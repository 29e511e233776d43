//! loom model of teardown's drain protocol: destroy against tasks in flight.
//!
//! The real protocol lives in `src/scheduler.rs` (`spawn`,
//! `spawn_continuation`, `task_finished`, `wait_idle`, `destroy`) around
//! process-wide statics and a rayon pool, which loom cannot drive. This is
//! the same algorithm, line for line, on loom's atomics, mutex and condvar:
//! - a task is counted in `in_flight` before it is handed to a worker, and
//!   uncounted after its `resume` returns;
//! - a task that makes a continuation ready counts the continuation before
//!   it uncounts itself, so the count cannot touch zero in between;
//! - `wait_idle` registers in `idle_waiters`, then re-checks the count under
//!   the lock; `task_finished` notifies under the lock only when it took the
//!   count to zero and saw a waiter (all `SeqCst`: either the waiter sees
//!   zero, or the finisher sees the waiter; no lost wake-up).
//!
//! One deliberate difference: loom treats `SeqCst` loads and stores as
//! `AcqRel` (loom's README, "Unsupported features"), which allows the
//! store-buffering outcome that `SeqCst` forbids (each side misses the
//! other's write), so the plain model reports a false deadlock. loom does
//! implement `fence(SeqCst)`, so the model puts one between each side's
//! write and its read of the other counter. That is exactly the guarantee
//! the real code gets from making all four accesses `SeqCst` (they lie in
//! one total order, so at least one side sees the other's write).
//!
//! What the models prove, over every interleaving: destroy never returns
//! while a task or a continuation is queued or running (no task body runs
//! after it), and it always returns (loom fails on a deadlock). If
//! `scheduler.rs` changes the protocol, change this model with it.
#![cfg(loom)]

use loom::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

#[derive(Default)]
struct Drain {
    in_flight: AtomicUsize,
    idle_waiters: AtomicUsize,
    idle_lock: Mutex<()>,
    idle_cv: Condvar,
}

impl Drain {
    /// `scheduler::spawn`'s accounting, before the task is queued.
    fn task_queued(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// `scheduler::task_finished`.
    fn task_finished(&self) {
        if self.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 && {
            fence(Ordering::SeqCst); // see the module comment
            self.idle_waiters.load(Ordering::SeqCst) > 0
        } {
            let _guard = self.idle_lock.lock().unwrap();
            self.idle_cv.notify_all();
        }
    }

    /// `scheduler::wait_idle(None)` (loom's condvar has no timeout; the
    /// real loop re-checks on every timeout, which only adds wake-ups).
    fn wait_idle(&self) {
        self.idle_waiters.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst); // see the module comment
        let mut guard = self.idle_lock.lock().unwrap();
        while self.in_flight.load(Ordering::SeqCst) != 0 {
            guard = self.idle_cv.wait(guard).unwrap();
        }
        drop(guard);
        self.idle_waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A task body: marks that it ran, and fails if teardown already returned.
fn body(ran: &AtomicBool, destroyed: &AtomicBool) {
    assert!(!destroyed.load(Ordering::SeqCst), "a task ran after destroy returned");
    ran.store(true, Ordering::SeqCst);
}

/// One task in flight on a worker while another thread calls destroy.
#[test]
fn destroy_against_a_task_in_flight() {
    loom::model(|| {
        let drain = Arc::new(Drain::default());
        let ran = Arc::new(AtomicBool::new(false));
        let destroyed = Arc::new(AtomicBool::new(false));
        drain.task_queued(); // mlirAsyncRuntimeExecute on the main thread
        let worker = {
            let (drain, ran, destroyed) = (drain.clone(), ran.clone(), destroyed.clone());
            thread::spawn(move || {
                body(&ran, &destroyed);
                drain.task_finished();
            })
        };
        drain.wait_idle(); // __mlir_execution_engine_destroy
        assert!(ran.load(Ordering::SeqCst), "destroy returned before its task ran");
        destroyed.store(true, Ordering::SeqCst);
        worker.join().unwrap();
    });
}

/// A task that makes a continuation ready (which another worker runs)
/// while destroy waits: the count must not reach zero between the parent
/// finishing and the continuation running.
#[test]
fn destroy_against_a_task_spawning_a_continuation() {
    loom::model(|| {
        let drain = Arc::new(Drain::default());
        let ran = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let destroyed = Arc::new(AtomicBool::new(false));
        drain.task_queued();
        let parent = {
            let (drain, ran, destroyed) = (drain.clone(), ran.clone(), destroyed.clone());
            thread::spawn(move || {
                body(&ran[0], &destroyed);
                // A completion inside the task fires a continuation: counted
                // before the parent is uncounted, run by another worker.
                drain.task_queued();
                let child = {
                    let (drain, ran, destroyed) = (drain.clone(), ran.clone(), destroyed.clone());
                    thread::spawn(move || {
                        body(&ran[1], &destroyed);
                        drain.task_finished();
                    })
                };
                drain.task_finished();
                child
            })
        };
        drain.wait_idle();
        assert!(ran[0].load(Ordering::SeqCst) && ran[1].load(Ordering::SeqCst));
        destroyed.store(true, Ordering::SeqCst);
        parent.join().unwrap().join().unwrap();
    });
}

/// Two tasks finishing on two workers while destroy waits: the wake-up is
/// not lost whichever finishes last.
#[test]
fn destroy_against_two_tasks_finishing() {
    loom::model(|| {
        let drain = Arc::new(Drain::default());
        let ran = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let destroyed = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..2)
            .map(|i| {
                drain.task_queued();
                let (drain, ran, destroyed) = (drain.clone(), ran.clone(), destroyed.clone());
                thread::spawn(move || {
                    body(&ran[i], &destroyed);
                    drain.task_finished();
                })
            })
            .collect();
        drain.wait_idle();
        assert!(ran.iter().all(|r| r.load(Ordering::SeqCst)));
        destroyed.store(true, Ordering::SeqCst);
        for w in workers {
            w.join().unwrap();
        }
    });
}
