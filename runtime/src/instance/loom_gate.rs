//! loom model of the instance's gate ([`Gate`], `gate.rs`): destroy's
//! close against a thread that queues from outside. Run with the crate's
//! other loom models (`make loom`).

use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;

use crate::instance::gate::{Gate, Presence};
use crate::sync::{side, Ordering};

/// Destroy racing a spawner: the spawner's task is either queued while
/// the closer waits for it (so the drain sees it), or refused (so it
/// goes to a fresh instance); never queued after the closer's wait.
#[test]
fn close_against_enter() {
    loom::model(|| {
        let gate = Arc::new(Gate::new());
        let queued = Arc::new(AtomicBool::new(false));
        let (g, q) = (Arc::clone(&gate), Arc::clone(&queued));
        let spawner = loom::thread::spawn(move || match g.enter() {
            Some(_inside) => {
                q.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        });
        let closer = side(move || {
            gate.close_and_wait();
            // What the drain would see: the queue after the wait.
            queued.load(Ordering::Relaxed)
        });
        let seen = closer.join().unwrap();
        let entered = spawner.join().unwrap();
        assert_eq!(seen, entered, "a task queued behind the closer's back, or refused and queued");
    });
}

/// The same race through a thread's presence (`Gate::enter_as`, what
/// `cached.rs` uses): the entrant's store, `SeqCst` fence and look at the
/// closed bit, against the closer's bit, fence and look at the presence.
/// Mutation 16 takes the entrant's fence out: loom finds the task queued
/// behind the closer's back.
#[test]
fn close_against_enter_as() {
    loom::model(|| {
        let gate = Arc::new(Gate::new());
        let presence = Arc::new(Presence::new());
        let queued = Arc::new(AtomicBool::new(false));
        let (g, p, q) = (Arc::clone(&gate), Arc::clone(&presence), Arc::clone(&queued));
        let spawner = loom::thread::spawn(move || match g.enter_as(&p) {
            Some(_inside) => {
                q.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        });
        let closer = side(move || {
            gate.close_and_wait_among(|address| presence.names(address));
            queued.load(Ordering::Relaxed)
        });
        let seen = closer.join().unwrap();
        let entered = spawner.join().unwrap();
        assert_eq!(seen, entered, "a task queued behind the closer's back, or refused and queued");
    });
}
