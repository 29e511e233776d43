//! The pool's threads each run one loop for their whole life: they sleep
//! here until a drainer start is owed to the pool, then run that drainer.
//! A start is a count and a wake-up, not a job queued on rayon's pool:
//! rayon queues a job spawned from one of its own threads on that
//! thread's deque, where it waited until the spawning drainer left or a
//! sleeping thread happened to look (a median of 0.9 ms, up to 3.7 ms, on
//! a parallel loop's split, which left the other worker idle meanwhile).

use crate::exec::threads::drainers::Start;
use crate::exec::threads::spares::NotStarted;
use crate::exec::threads::watch;
use crate::exec::threads::Scheduler;
use crate::probe::observe;
use crate::sync::asymmetric;
use crate::sync::misuse::warn;
use crate::sync::process::{lock, AtomicBool, AtomicUsize, Condvar, Mutex};
use crate::sync::Ordering;
use std::time::Duration;

pub(super) struct PoolStarts {
    /// Held for every change of the counts below, and by `wake`'s waits.
    lock: Mutex<()>,
    wake: Condvar,
    /// Starts owed to the pool's threads.
    starts: AtomicUsize,
    /// The pool is closing.
    closed: AtomicBool,
    /// Pool threads asleep on `wake`: a start wakes one only if any sleeps
    /// (std's `notify_one` makes a system call even when nobody waits, a
    /// microsecond of the pushing thread's at every start).
    sleepers: AtomicUsize,
    /// The watcher (`watch.rs`) sleeps on `watch`: a start wakes it only
    /// when no other pool thread sleeps, since it then lets go of the watch.
    watch: Condvar,
    watcher_asleep: AtomicBool,
}

/// What a pool thread's wait ended with.
pub(super) enum Took {
    /// A drainer start.
    Start,
    /// The watcher's period (no start owed).
    Period,
    /// The pool closed, with no start owed.
    Closed,
}

// The counts are atomics changed under the lock, not data inside it: std
// is not built with ThreadSanitizer, which then cannot see the lock order
// them, and reported every start as a race. The release of a start and
// the acquire of its take show TSan (and say) what the lock guarantees:
// the pool thread sees what the starting thread did before the start.
// Every other access is Relaxed: the lock orders it.

impl PoolStarts {
    pub(super) fn new() -> PoolStarts {
        PoolStarts {
            lock: Mutex::new(()),
            wake: Condvar::new(),
            starts: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            watch: Condvar::new(),
            watcher_asleep: AtomicBool::new(false),
        }
    }

    /// Owes the pool one drainer start; false when the pool is closed (the
    /// caller gives the start's permit back).
    pub(super) fn start_one(&self) -> bool {
        let guard = lock(&self.lock);
        if self.closed.load(Ordering::Relaxed) {
            return false;
        }
        // Release: see above (a load and a store, under the lock).
        self.starts.store(self.starts.load(Ordering::Relaxed) + 1, Ordering::Release);
        let sleeper = self.sleepers.load(Ordering::Relaxed) > 0;
        let watcher = self.watcher_asleep.load(Ordering::Relaxed);
        drop(guard);
        if sleeper {
            self.wake.notify_one();
        } else if watcher {
            self.watch.notify_one();
        }
        true
    }

    /// On a pool thread: waits for a start owed, and takes it; with
    /// `period` (the watcher), waits at most that long.
    pub(super) fn take(&self, period: Option<Duration>) -> Took {
        let mut guard = lock(&self.lock);
        let mut period_over = false;
        loop {
            if self.take_one() {
                return Took::Start;
            }
            if self.closed.load(Ordering::Relaxed) {
                return Took::Closed;
            }
            if period_over {
                return Took::Period;
            }
            if let Some(period) = period {
                self.watcher_asleep.store(true, Ordering::Relaxed);
                let (g, wait) = self.watch.wait_timeout(guard, period).unwrap_or_else(|e| e.into_inner());
                guard = g;
                self.watcher_asleep.store(false, Ordering::Relaxed);
                period_over = wait.timed_out();
                continue;
            }
            self.sleepers.store(self.sleepers.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            guard = self.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
            self.sleepers.store(self.sleepers.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
        }
    }

    /// Takes an owed start, under the lock; false when none is owed.
    fn take_one(&self) -> bool {
        // Acquire: see above.
        let starts = self.starts.load(Ordering::Acquire);
        if starts == 0 {
            return false;
        }
        self.starts.store(starts - 1, Ordering::Relaxed);
        true
    }

    /// Takes back a start that no pool thread has taken yet; false when
    /// none is owed.
    pub(super) fn take_back(&self) -> bool {
        let _guard = lock(&self.lock);
        self.take_one()
    }

    /// How many starts are owed now (a hint).
    pub(super) fn owed(&self) -> usize {
        self.starts.load(Ordering::Relaxed)
    }

    /// The pool closes: its threads leave their loops once no start is
    /// owed.
    pub(super) fn close(&self) {
        {
            let _guard = lock(&self.lock);
            self.closed.store(true, Ordering::Relaxed);
        }
        self.wake.notify_all();
        self.watch.notify_all();
    }
}

impl Scheduler {
    /// A runtime thread's life (a pool thread's, `slot` `None`; a spare's,
    /// with its registry slot): a drainer each time one is owed to the
    /// pool.
    /// The first to find none owed also registers the process for the
    /// gate's light fences, if that was left to the pool
    /// (`sync/asymmetric.rs`): its grace period (11-32 ms) then takes no
    /// thread from work. (Before its first drainer instead, it made
    /// fib-spawn 1.23x as long: one of 2 workers gone for most of a 35 ms
    /// run.)
    ///
    /// A thread that drained and goes to sleep takes the watch if nobody
    /// holds it (`watch.rs`), and lets go of it when a start wakes it.
    pub(super) fn run_pool_thread(&self, slot: Option<usize>) {
        let mut watching = false;
        let mut drained = false;
        loop {
            if self.pool_starts.owed() == 0 {
                asymmetric::register_pending();
            }
            if drained && !watching {
                watching = self.take_watch();
            }
            drained = false;
            match self.pool_starts.take(watching.then_some(watch::PERIOD)) {
                Took::Start => {
                    if std::mem::take(&mut watching) {
                        self.let_go_watch();
                    }
                    self.run_drainer(slot);
                    drained = true;
                }
                Took::Period => watching = self.watch_period(),
                Took::Closed => {
                    if watching {
                        self.let_go_watch();
                    }
                    return;
                }
            }
        }
    }

    /// Ends the drainer starts owed to the pool that no pool thread has
    /// taken yet, as their drainers would: one that starts while a thread
    /// waits for idleness leaves at its first look. Called by that thread
    /// before it waits, so that its wait does not last a pool thread's
    /// wake-up (a run of the harness's one-task program took 11-42 µs
    /// instead of 1.3, most of it waiting for a drainer started by the
    /// run's `Execute`, whose task the harness's await ran itself). Each
    /// leaves as a drainer does (`after_leave`: a task queued meanwhile
    /// gets a drainer again); at most the starts owed on entry.
    pub(super) fn take_back_owed_starts(&self) {
        for _ in 0..self.pool_starts.owed() {
            if !self.pool_starts.take_back() {
                return;
            }
            let after = self.drainers.leave(true, false);
            self.after_leave(after);
        }
    }

    /// Starts the drainer `start` took a permit and a job for: owes the
    /// job to the threads that wait for one, after starting a spare thread
    /// first when every thread is in a job (`Start::Spawn`). Inline, the
    /// usual `Start::NotNeeded` of a push (fan-out: 12 instructions a task
    /// for the call).
    #[inline(always)]
    pub(super) fn start_drainer(&self, start: Start) {
        if !matches!(start, Start::NotNeeded) {
            self.start_needed_drainer(start);
        }
    }

    #[inline(never)]
    fn start_needed_drainer(&self, start: Start) {
        match start {
            Start::NotNeeded => return,
            Start::Wake => {}
            Start::Spawn => {
                let this = self.as_ref();
                // SAFETY: the scheduler outlives its spare threads, which
                // are joined when the pool closes (`join_threads`).
                match self.spares.start(move |slot| unsafe { this.get() }.run_pool_thread(Some(slot))) {
                    Ok(()) => observe::spare_thread_started(),
                    // The threads were joined (see below); or, below the cap,
                    // the system refused the thread: the blocked threads may
                    // wait for the very tasks queued here, and the next one
                    // to wake tries again (`look_while_blocked`). Trying
                    // again now would only spin on the system's limit.
                    Err(not_started) => {
                        let _ = self.drainers.spawn_failed();
                        if let NotStarted::Refused(error) = not_started {
                            self.report_refusal(&error);
                        }
                        return;
                    }
                }
            }
        }
        if !self.pool_starts.start_one() {
            // The threads were joined: the scheduler was idle with its gate
            // closed, so no task waits or can come. This start came from a
            // stale look (a leaving drainer saw a task in another's slot,
            // which its owner ran before the scheduler went idle): give the
            // permit and the job back.
            let _ = self.drainers.leave(true, false);
        }
    }

    /// Says once per instance, on one line, that the system refused a
    /// thread below the runtime's cap, naming both limits.
    fn report_refusal(&self, error: &std::io::Error) {
        // Relaxed: it only decides which thread prints; nothing is
        // published through it.
        if self.refusal_reported.swap(true, Ordering::Relaxed) {
            return;
        }
        warn(&format!(
            "the system refused a runtime thread: {error}; {} runtime thread(s) alive, below the cap of {} \
             (MLIR_ASYNC_RUNTIME_MAX_THREADS), so the system's limit binds first (ulimit -u, memory); \
             queued tasks wait, and blocked threads try the start again as they wake, each once a second",
            self.threads(),
            self.config.max_threads,
        ));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A start that comes as the watcher's period ends is taken, not lost
    /// with the period (an earlier `take` took it in its check after the
    /// timeout, then reported the period: the start's permit leaked, and
    /// `runtime/tests/blocking.rs` hung). Deterministic: this thread holds
    /// the lock across the end of the watcher's period, and owes the start
    /// (as `start_one` does, under the lock) before letting it go.
    #[test]
    fn a_start_owed_as_the_watchers_period_ends_is_taken() {
        let starts = Arc::new(PoolStarts::new());
        let watcher = {
            let starts = Arc::clone(&starts);
            std::thread::spawn(move || matches!(starts.take(Some(Duration::from_millis(5))), Took::Start))
        };
        // The watcher sleeps on its condvar: it set the flag under the lock,
        // and the wait let go of the lock.
        while !starts.watcher_asleep.load(Ordering::Relaxed) {
            std::thread::yield_now();
        }
        {
            let _guard = lock(&starts.lock);
            std::thread::sleep(Duration::from_millis(20));
            starts.starts.store(1, Ordering::Release);
        }
        assert!(watcher.join().unwrap(), "the start owed as the period ended was not taken");
        assert_eq!(starts.owed(), 0);
    }
}
