//! loom models of the next-task slot (`slot.rs`) and of the wake-up of a
//! task put in it (`lookout.rs`), on the real [`Slot`] and
//! [`Drainers`]. The glue is the scheduler's own, step for step:
//! `Scheduler::push_local` (put, then start a drainer if
//! [`Drainers::should_start`]), and an idle drainer's last look and leave in
//! `Scheduler::run_drainer` (steal from the slot, else stop looking, leave,
//! [`Drainers::after_looking`]).
//!
//! `make loom` runs them; `scripts/check/mutations.sh` checks that the
//! first one fails without the drainer's look at the slots after it stops
//! looking (mutation 7), and the second with the owner's take a load and a
//! store (mutation 27).

use std::ffi::c_void;

use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;

use crate::base::task::{Origin, Task};
use crate::exec::threads::drainers::{Drainers, Start};
use crate::exec::threads::slot::Slot;
use crate::sync::{side, Ordering};

unsafe extern "C" fn never_resumed(_: *mut c_void) {
    unreachable!("the models never run a task");
}

/// A task told apart from the others by its origin (never run; the idle
/// models' waiter takes one too).
pub(super) fn task(origin: Origin) -> Task {
    Task::new(std::ptr::null_mut(), Some(never_resumed), origin, "loom model")
}

struct Model {
    drainers: Drainers,
    slot: Slot,
    /// Tasks taken out of the slot by anybody.
    taken: AtomicUsize,
}

impl Model {
    /// Two workers: the slot's owner holds a permit and runs a task; the
    /// other drainer holds one and looks for work.
    fn new() -> Arc<Model> {
        let m = Arc::new(Model {
            drainers: Drainers::new(2, 2, 1),
            slot: Slot::new(),
            taken: AtomicUsize::new(0),
        });
        assert_eq!(m.drainers.try_start(), Start::Wake);
        assert_eq!(m.drainers.try_start(), Start::Wake);
        assert!(m.drainers.start_looking());
        m
    }

    /// A look that takes the slot's task whatever its age (a drainer's
    /// last look, or a fresh drainer's).
    fn look(&self) -> bool {
        let taken = self.slot.peek().and_then(|stamp| self.slot.steal(stamp)).is_some();
        if taken {
            self.taken.fetch_add(1, Ordering::SeqCst);
        }
        taken
    }
}

/// The owner puts a task in its slot and then spins on it (never takes
/// it back), while the only other drainer, looking for work, has its last
/// look and leaves. Whichever comes first, the task is taken: by the
/// looking drainer, or by a drainer started by the owner (it saw nobody
/// looking) or by the leaving one (it saw the task after it stopped
/// looking). Without that last look at the slots (mutation 7) loom finds
/// the order in which the owner saw the other drainer still looking and
/// that drainer's look came before the put: the task is stranded, as in
/// the hang of `mlir-tests/spin-on-child.mlir`.
#[test]
fn a_task_put_in_a_slot_as_the_last_looking_drainer_leaves_is_taken() {
    loom::model(|| {
        let m = Model::new();
        let owner = {
            let m = Arc::clone(&m);
            thread::spawn(move || {
                // `Scheduler::push_local`.
                assert!(m.slot.put(task(Origin::Execute)).is_none());
                if m.drainers.should_start() {
                    m.drainers.try_start()
                } else {
                    Start::NotNeeded
                }
            })
        };
        // The looking drainer's last look, then its leave
        // (`Scheduler::run_drainer`, `Scheduler::after_leave`).
        let looker = {
            let m = Arc::clone(&m);
            side(move || {
                if m.look() {
                    return Start::NotNeeded;
                }
                let _ = m.drainers.leave(true, true);
                m.drainers.after_looking(|| m.slot.is_full())
            })
        };
        let starts = [looker.join().unwrap(), owner.join().unwrap()];
        // Every drainer started looks once.
        let started = starts.iter().filter(|s| **s != Start::NotNeeded).count();
        assert!(started <= 1, "two drainers for one free permit: {starts:?}");
        for _ in 0..started {
            m.look();
        }
        assert_eq!(m.taken.load(Ordering::SeqCst), 1, "the task put in the slot was stranded");
    });
}

/// The owner takes its slot's task back, or puts a second one in, while a
/// thief takes the first: each task is taken exactly once, and the second
/// is either in the slot or handed back to go elsewhere (the thread's
/// deque), never lost or written over a task being copied out.
#[test]
fn the_owner_and_a_thief_take_a_slot_task_once() {
    loom::model(|| {
        let slot = Arc::new(Slot::new());
        assert!(slot.put(task(Origin::Execute)).is_none());
        let stamp = slot.peek().expect("a full slot");
        let thief = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || slot.steal(stamp).map(|t| t.origin()))
        };
        // The owner puts a second task: the first comes back unless the
        // thief has it, and the second comes back while the thief copies.
        let owner = {
            let slot = Arc::clone(&slot);
            side(move || {
                let elsewhere = slot.put(task(Origin::AfterToken)).map(|back| back.origin());
                let taken = slot.take_own().map(|t| t.origin());
                elsewhere.into_iter().chain(taken).collect::<Vec<Origin>>()
            })
        };
        let stolen = thief.join().unwrap();
        let mut all: Vec<Origin> = owner.join().unwrap().into_iter().chain(stolen).collect();
        // A second task left in the slot (the owner's take raced nothing).
        if let Some(t) = slot.take_own() {
            all.push(t.origin());
        }
        all.sort_by_key(|o| *o as u8);
        assert_eq!(all, vec![Origin::Execute, Origin::AfterToken], "a task lost or taken twice");
        assert!(slot.peek().is_none());
    });
}
