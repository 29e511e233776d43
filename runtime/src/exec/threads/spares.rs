//! Spare threads: started on demand when a drainer must start and every
//! runtime thread is in a job, some of them blocked in an `Await*` without
//! a task stack (`drainers.rs`'s `Start::Spawn`). A spare then runs the
//! pool threads' loop (`Scheduler::run_pool_thread`): it waits for a job,
//! takes any that is owed, and lives until the pool closes, as the pool's
//! threads do (why spares no longer expire: docs/decisions/spares.md).
//!
//! This module only starts the threads and joins them at shutdown: the
//! drainers word decides when one is needed, and counts it.

use crate::exec::config::platform_stack_size;
use crate::sync::thread::{Builder, JoinHandle};
use crate::sync::{lock, Mutex};

/// Starts a named thread running `main` (the OS may refuse).
pub(super) type SpawnFn = fn(String, Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>>;

/// The spare threads of one runtime instance.
pub(super) struct Spares {
    state: Mutex<State>,
    /// The registry slot of the first spare (`deques.rs`): the pool's
    /// threads hold the ones before.
    first_slot: usize,
    spawn: SpawnFn,
}

struct State {
    /// The spares started, in order: spare `i` holds registry slot
    /// `first_slot + i`.
    handles: Vec<JoinHandle<()>>,
    /// Set by `shutdown`: nothing starts any more.
    closed: bool,
}

/// Why [`Spares::start`] started no thread.
#[derive(Debug)]
pub(super) enum NotStarted {
    /// The spares were shut down (the pool closed).
    Closed,
    /// The system refused a thread (`EAGAIN`: its limit on processes,
    /// `ulimit -u`, or memory).
    Refused(std::io::Error),
}

/// Starts a runtime thread with the platform's stack size, as every
/// runtime thread (`config::platform_stack_size`: compiled code may nest
/// deeply within one task, as deep as on a thread of the program).
pub(super) fn spawn_thread(name: String, main: Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>> {
    let builder = Builder::new().name(name).stack_size(platform_stack_size());
    // Outside any fork (`sync::spawn`); a loom model has no fork, and its
    // threads are loom's.
    #[cfg(not(loom))]
    return crate::sync::spawn::spawn(builder, main);
    #[cfg(loom)]
    builder.spawn(main)
}

impl Spares {
    /// Spares whose registry slots start at `first_slot`.
    pub(crate) fn new(first_slot: usize) -> Spares {
        Spares::with_spawn(first_slot, spawn_thread)
    }

    /// [`Spares::new`], starting threads with `spawn`.
    pub(super) fn with_spawn(first_slot: usize, spawn: SpawnFn) -> Spares {
        Spares { state: Mutex::new(State { handles: Vec::new(), closed: false }), first_slot, spawn }
    }

    /// Starts a spare thread that runs `main` with its registry slot. The
    /// caller counted it (`Start::Spawn`), under the cap; this says nothing
    /// on stderr.
    pub(super) fn start(&self, main: impl FnOnce(usize) + Send + 'static) -> Result<(), NotStarted> {
        let mut state = lock(&self.state);
        if state.closed {
            return Err(NotStarted::Closed);
        }
        let slot = self.first_slot + state.handles.len();
        let name = format!("mlir-async-spare-{}", state.handles.len() + 1);
        let main = Box::new(move || {
            // A panic here is a bug of the runtime (tasks are C functions
            // and cannot unwind into it): end the process with one line.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| main(slot))).is_err() {
                crate::sync::misuse::abort_misuse("spare thread", "the runtime panicked");
            }
        });
        // Under the lock: each spare gets the next slot, and shutdown joins
        // every one started.
        let handle = (self.spawn)(name, main).map_err(NotStarted::Refused)?;
        state.handles.push(handle);
        Ok(())
    }

    /// Joins every spare thread; none starts after. The caller closed the
    /// pool's starts first (`pool_starts.rs`), which ends their loops.
    pub(crate) fn shutdown(&self) {
        let handles = {
            let mut state = lock(&self.state);
            state.closed = true;
            std::mem::take(&mut state.handles)
        };
        for handle in handles {
            if handle.join().is_err() {
                crate::sync::misuse::abort_misuse("spare thread", "a spare thread panicked");
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    #[test]
    fn a_start_refused_by_the_system_takes_no_slot() {
        static REFUSED: AtomicBool = AtomicBool::new(false);
        fn refuse_once(name: String, main: Box<dyn FnOnce() + Send>) -> std::io::Result<JoinHandle<()>> {
            if !REFUSED.swap(true, Ordering::SeqCst) {
                return Err(std::io::Error::new(std::io::ErrorKind::WouldBlock, "refused by the test"));
            }
            spawn_thread(name, main)
        }
        let spares = Spares::with_spawn(3, refuse_once);
        assert!(matches!(spares.start(|_| {}), Err(NotStarted::Refused(_))));
        assert!(lock(&spares.state).handles.is_empty());
        let (tx, rx) = mpsc::channel();
        spares.start(move |slot| tx.send(slot).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 3, "the first spare's slot");
        spares.shutdown();
        assert!(matches!(spares.start(|_| {}), Err(NotStarted::Closed)));
    }

    /// A spare's thread-local destructors run after its closure returned
    /// (`JoinHandle::is_finished` is already true then): shutdown must
    /// still wait for them (the instance is freed after shutdown, and a
    /// destructor may touch it).
    #[test]
    fn shutdown_returns_only_after_every_spare_thread_ended_completely() {
        static DONE: AtomicUsize = AtomicUsize::new(0);
        struct SlowDrop;
        impl Drop for SlowDrop {
            fn drop(&mut self) {
                std::thread::sleep(Duration::from_millis(100));
                DONE.fetch_add(1, Ordering::SeqCst);
            }
        }
        thread_local! { static SLOW: SlowDrop = const { SlowDrop }; }
        let spares = Spares::new(0);
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let ran = Arc::clone(&ran);
            spares.start(move |_| {
                SLOW.with(|_| ran.fetch_add(1, Ordering::SeqCst));
            })
            .unwrap();
        }
        spares.shutdown();
        assert_eq!(ran.load(Ordering::SeqCst), 2);
        assert_eq!(DONE.load(Ordering::SeqCst), 2, "a spare's thread-local destructor ran after shutdown returned");
    }
}
