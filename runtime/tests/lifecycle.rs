//! The scheduler's lifecycle under hostile use: `fork` while other threads
//! are inside the runtime, tasks queued at the thread cap, spare threads
//! started for bursts of blocked tasks, and schedule fuzzing that must only
//! produce interleavings the real scheduler can. Each scenario runs in a
//! child process (this test binary again, the scenario named in an
//! environment variable), so a hang is killed and reported, and a crash is
//! seen as a signal.
//!
//! These are the regression tests of five lifecycle bugs, each of which
//! hung, aborted or reported a deadlock that cannot happen on the runtime
//! before they were fixed (the commit that adds this file says how often).

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{execute_and_await, run_child, task, wait_child, ChildRun, GatedTasks, TokenPtr};
use mlir_async_runtime::abi::*;
use mlir_async_runtime::RuntimeStats;

const SCENARIO_ENV: &str = "MLIR_ASYNC_RUNTIME_TEST_SCENARIO";

/// Scales the rounds of the churn scenarios (`make churn` sets it high;
/// `make test` runs the default, 1).
const SCALE_ENV: &str = "MLIR_ASYNC_RUNTIME_TEST_SCALE";

/// Sets the rounds of every scenario outright (`scripts/check/lifecycle_repeat.sh`
/// runs many short children).
const ROUNDS_ENV: &str = "MLIR_ASYNC_RUNTIME_TEST_ROUNDS";

fn scaled(rounds: usize) -> usize {
    if let Some(n) = std::env::var(ROUNDS_ENV).ok().and_then(|s| s.parse::<usize>().ok()) {
        return n.max(1);
    }
    let scale = std::env::var(SCALE_ENV).ok().and_then(|s| s.parse::<usize>().ok()).unwrap_or(1);
    rounds * scale.max(1)
}

/// A child's exit code when a scenario detects a hang itself.
const HUNG: i32 = 3;

fn recv_or_exit(rx: &mpsc::Receiver<()>, what: &str, limit: Duration) {
    if rx.recv_timeout(limit).is_err() {
        eprintln!("scenario: {what} did not happen within {limit:?}");
        std::process::exit(HUNG);
    }
}

/// Calls the destroy hook under a watchdog: if it has not returned within
/// `limit`, the process ends at once with [`HUNG`], saying so with `what`.
/// Returns how long the hook took.
fn destroy_or_exit_hung(limit: Duration, what: &str) -> Duration {
    let (tx, rx) = mpsc::channel();
    let what = what.to_string();
    let watchdog = thread::spawn(move || {
        if rx.recv_timeout(limit).is_err() {
            eprintln!("scenario: the destroy hook did not return within {limit:?} {what}");
            // SAFETY: ends the process at once: its exit handler would
            // call the destroy hook again.
            unsafe { libc::_exit(HUNG) };
        }
    });
    let start = Instant::now();
    __mlir_execution_engine_destroy();
    let took = start.elapsed();
    tx.send(()).unwrap();
    watchdog.join().unwrap();
    took
}
/// A small deterministic generator for the scenarios' timings.
struct Jitter(u64);

impl Jitter {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn spin_for(micros: u64) {
    let end = Instant::now() + Duration::from_micros(micros);
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// A task that blocks in `AwaitToken(gate)` inside the pool, then signals.
fn execute_blocked_on(gate: TokenPtr, done: mpsc::Sender<()>) {
    // SAFETY: the task owns one consumer reference to the gate.
    unsafe { mlirAsyncRuntimeAddRef(gate.get().cast(), 1) };
    let (h, r) = task(move || unsafe {
        mlirAsyncRuntimeAwaitToken(gate.get());
        mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
        let _ = done.send(());
    });
    mlirAsyncRuntimeExecute(h, r);
}

/// Completes `token` and drops the creator's own reference.
fn open(token: TokenPtr) {
    // SAFETY: the producer's reference, then ours.
    unsafe {
        mlirAsyncRuntimeEmplaceToken(token.get());
        mlirAsyncRuntimeDropRef(token.get().cast(), 1);
    }
}

fn stats() -> RuntimeStats {
    let mut s = RuntimeStats::default();
    // SAFETY: a valid out pointer.
    unsafe { rust_mlir_async_runtime_stats(&mut s) };
    s
}

// ---- 1: fork while other threads are inside the runtime ---------------------

/// What the other threads do while the main thread forks.
#[derive(Clone, Copy)]
enum Busy {
    /// Read the counters in a loop (`rust_mlir_async_runtime_stats`).
    Stats,
    /// Queue tasks that block inside the pool (spare threads start, and
    /// exit at every eighth round's destroy), and read the counters.
    Tasks,
    /// Start and destroy instances in a loop (with tracing on, each destroy
    /// writes a trace).
    Destroy,
}

/// The main thread forks `children` times while `busy` goes on in other
/// threads; each child queues one task, awaits it and destroys the
/// runtime, twice, then `_exit`s.
fn fork_while_busy(busy: Busy, children: usize) {
    execute_and_await();
    let stop = Arc::new(AtomicBool::new(false));
    let mut helpers = Vec::new();
    for n in 0..2 {
        let stop = Arc::clone(&stop);
        helpers.push(thread::spawn(move || {
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                match busy {
                    Busy::Stats => {
                        let _ = stats();
                    }
                    Busy::Tasks if n == 0 => {
                        // A task blocked on a gate makes the next one start a
                        // spare thread.
                        let gate = TokenPtr::new(mlirAsyncRuntimeCreateToken());
                        let (tx, rx) = mpsc::channel();
                        execute_blocked_on(gate, tx.clone());
                        execute_blocked_on(gate, tx);
                        execute_and_await();
                        open(gate);
                        rx.recv().unwrap();
                        rx.recv().unwrap();
                        // Spares live until the destroy hook, which joins
                        // them: the next round starts one again.
                        if round % 8 == 0 {
                            __mlir_execution_engine_destroy();
                        }
                    }
                    Busy::Tasks => {
                        let _ = stats();
                    }
                    // Paced: every destroy writes the whole trace so far.
                    Busy::Destroy if n == 0 => {
                        execute_and_await();
                        __mlir_execution_engine_destroy();
                        thread::sleep(Duration::from_millis(2));
                    }
                    Busy::Destroy => {
                        execute_and_await();
                        thread::sleep(Duration::from_micros(200));
                    }
                }
            }
        }));
    }
    for i in 0..children {
        // SAFETY: the child only calls the runtime, then `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            for _ in 0..2 {
                execute_and_await();
                __mlir_execution_engine_destroy();
            }
            // SAFETY: ends the child without running the parent's exit hooks.
            unsafe { libc::_exit(0) };
        }
        match wait_child(pid, Duration::from_secs(10)) {
            None => {
                eprintln!("scenario: forked child {} of {children} hung", i + 1);
                std::process::exit(HUNG);
            }
            Some(status) if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) => {
                eprintln!("scenario: forked child {} ended with wait status {status:#x}", i + 1);
                std::process::exit(4);
            }
            Some(_) => {}
        }
    }
    stop.store(true, Ordering::Relaxed);
    for h in helpers {
        h.join().unwrap();
    }
    execute_and_await();
    __mlir_execution_engine_destroy();
}

/// Tasks blocked in an `Await*` (switched out on their stacks, or blocking
/// their threads with task stacks off) when the destroy hook is called:
/// destroy waits for them, as for any task in flight, and returns once the
/// gate opened (from another thread, 50 ms later) and every one finished.
fn destroy_with_blocked_tasks(rounds: usize) {
    const TASKS: usize = 64;
    for _ in 0..rounds {
        let tasks = GatedTasks::start(TASKS);
        if let Err(started) = tasks.wait_all_started(Duration::from_secs(30)) {
            eprintln!("scenario: only {started} of {TASKS} tasks started");
            std::process::exit(HUNG);
        }
        let gate = tasks.gate();
        let opener = thread::spawn(move || {
            thread::sleep(Duration::from_millis(50));
            open(gate);
        });
        __mlir_execution_engine_destroy();
        let done = tasks.finished();
        if done != TASKS {
            eprintln!("scenario: destroy returned with {} of {TASKS} blocked tasks unfinished", TASKS - done);
            std::process::exit(LOST);
        }
        opener.join().unwrap();
    }
}

// ---- 2: tasks queued at the thread cap ---------------------------------------

/// Five tasks queued from outside, each blocking on the previous one's
/// token, the first on a gate the main thread opens after 30 ms: a
/// first-in-first-out pool of any size completes it.
fn blocking_chain_of_five() {
    for round in 0..scaled(5) {
        let gate = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let mut previous = gate;
        let (tx, rx) = mpsc::channel();
        for k in 0..5 {
            let next = TokenPtr::new(mlirAsyncRuntimeCreateToken());
            let awaited = previous;
            let tx = tx.clone();
            // SAFETY: the task owns one consumer reference to `awaited` and
            // the producer's reference to `next`.
            unsafe { mlirAsyncRuntimeAddRef(awaited.get().cast(), 1) };
            let (h, r) = task(move || unsafe {
                mlirAsyncRuntimeAwaitToken(awaited.get());
                mlirAsyncRuntimeDropRef(awaited.get().cast(), 1);
                mlirAsyncRuntimeEmplaceToken(next.get());
                if k == 4 {
                    tx.send(()).unwrap();
                }
            });
            mlirAsyncRuntimeExecute(h, r);
            if k > 0 {
                // SAFETY: our reference of the previous task's token.
                unsafe { mlirAsyncRuntimeDropRef(previous.get().cast(), 1) };
            }
            previous = next;
        }
        thread::sleep(Duration::from_millis(30));
        open(gate);
        recv_or_exit(&rx, &format!("round {round}: the fifth task"), Duration::from_secs(10));
        // SAFETY: our reference of the last token.
        unsafe { mlirAsyncRuntimeDropRef(previous.get().cast(), 1) };
    }
    __mlir_execution_engine_destroy();
}

/// One worker, a cap of two threads: the pool thread blocks on a token
/// inside a task, a second task makes the one spare start, and the task
/// that completes the token is queued just as that spare goes idle. It
/// must run.
fn push_as_the_only_spare_goes_idle(rounds: usize) {
    let mut jitter = Jitter(0x9e37_79b9_7f4a_7c15);
    for round in 0..rounds {
        let t = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let (tx, rx) = mpsc::channel();
        execute_blocked_on(t, tx);
        // Let the pool thread block.
        thread::sleep(Duration::from_micros(200));
        let (h, r) = task(|| {});
        mlirAsyncRuntimeExecute(h, r);
        spin_for(jitter.below(300));
        // SAFETY: the task owns the producer's reference.
        let (h, r) = task(move || unsafe { mlirAsyncRuntimeEmplaceToken(t.get()) });
        mlirAsyncRuntimeExecute(h, r);
        recv_or_exit(&rx, &format!("round {round}: the blocked task"), Duration::from_secs(5));
        // SAFETY: our reference.
        unsafe { mlirAsyncRuntimeDropRef(t.get().cast(), 1) };
    }
    __mlir_execution_engine_destroy();
}

// ---- 3: spare threads started for bursts of blocked tasks -----------------------

/// Bursts of blocking tasks: spares start for them, run other tasks, go
/// idle and take the next burst's, while other spares are starting; every
/// few bursts the instance is destroyed, which joins its spares, and the
/// next burst starts them again. Another thread reads the counters
/// meanwhile.
fn spare_churn(bursts: usize) {
    let mut jitter = Jitter(0x2545_f491_4f6c_dd1d);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = stats();
                thread::sleep(Duration::from_micros(50));
            }
        })
    };
    for burst in 0..bursts {
        let gate = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let blocked = 1 + jitter.below(3) as usize;
        let (tx, rx) = mpsc::channel();
        for _ in 0..blocked {
            execute_blocked_on(gate, tx.clone());
        }
        for _ in 0..1 + jitter.below(3) {
            let (h, r) = task(|| {});
            mlirAsyncRuntimeExecute(h, r);
        }
        // The blocked tasks reach their wait (spares start for them)
        // before the gate opens.
        spin_for(100 + jitter.below(300));
        open(gate);
        for _ in 0..blocked {
            recv_or_exit(&rx, &format!("burst {burst}: a blocked task"), Duration::from_secs(10));
        }
        // The spares go idle, or are still leaving as the next burst comes.
        spin_for(jitter.below(1000));
        if burst % 16 == 15 {
            __mlir_execution_engine_destroy();
        }
    }
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    __mlir_execution_engine_destroy();
}

// ---- 5: fuzzing and deterministic schedules invent no deadlock ---------------

/// Token `t` has two continuations: X blocks in `AwaitToken(u)`, Y
/// completes `u`; a task completes `t`. Whatever the schedule, Y can run
/// while X waits. The main thread waits through the runtime (a wait
/// outside it would hold a deterministic schedule's baton), and a hang is
/// the parent's time limit or the deterministic mode's deadlock report.
fn two_continuations_one_blocks_on_the_other() {
    for _ in 0..20 {
        let t = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let u = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let done = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        // SAFETY: X owns the consumer references of t and u and the
        // producer's of `done`; Y owns one more reference to t and the
        // producer's reference to u.
        unsafe { mlirAsyncRuntimeAddRef(t.get().cast(), 1) };
        let (h, r) = task(move || unsafe {
            mlirAsyncRuntimeAwaitToken(u.get());
            mlirAsyncRuntimeDropRef(u.get().cast(), 1);
            mlirAsyncRuntimeDropRef(t.get().cast(), 1);
            mlirAsyncRuntimeEmplaceToken(done.get());
        });
        // SAFETY: live token.
        unsafe { mlirAsyncRuntimeAwaitTokenAndExecute(t.get(), h, r) };
        let (h, r) = task(move || unsafe {
            mlirAsyncRuntimeEmplaceToken(u.get());
            mlirAsyncRuntimeDropRef(t.get().cast(), 1);
        });
        // SAFETY: live token.
        unsafe { mlirAsyncRuntimeAwaitTokenAndExecute(t.get(), h, r) };
        // SAFETY: the task owns the producer's reference of t.
        let (h, r) = task(move || unsafe { mlirAsyncRuntimeEmplaceToken(t.get()) });
        mlirAsyncRuntimeExecute(h, r);
        // SAFETY: our reference.
        unsafe {
            mlirAsyncRuntimeAwaitToken(done.get());
            mlirAsyncRuntimeDropRef(done.get().cast(), 1);
        }
    }
    __mlir_execution_engine_destroy();
}

// ---- 6: exit paths (issue 27) ---------------------------------------------------

/// Tasks queued by a scenario, and tasks that ran: equal at the end, or the
/// runtime lost tasks.
static QUEUED: AtomicUsize = AtomicUsize::new(0);
static RAN: AtomicUsize = AtomicUsize::new(0);

/// A child's exit code when tasks were lost.
const LOST: i32 = 5;

/// Queues a task that counts itself when it runs.
fn queue_counted() {
    QUEUED.fetch_add(1, Ordering::SeqCst);
    let (h, r) = task(|| {
        RAN.fetch_add(1, Ordering::SeqCst);
    });
    mlirAsyncRuntimeExecute(h, r);
}

/// Exits with [`LOST`] unless every task queued so far ran.
fn check_none_lost(when: &str) {
    let (queued, ran) = (QUEUED.load(Ordering::SeqCst), RAN.load(Ordering::SeqCst));
    if queued != ran {
        eprintln!("scenario: {when}: {} of {queued} task(s) lost ({ran} ran)", queued - ran);
        // SAFETY: ends the process at once (no exit handler may run again).
        unsafe { libc::_exit(LOST) };
    }
}

extern "C" fn check_none_lost_at_exit() {
    check_none_lost("at exit, after the runtime's exit handler");
}

/// Registers [`check_none_lost_at_exit`] before the runtime's own exit
/// handler (the first runtime call registers that), so it runs after it:
/// exit handlers run in reverse order.
fn check_at_exit() {
    // SAFETY: a plain function without captured state.
    assert_eq!(unsafe { libc::atexit(check_none_lost_at_exit) }, 0);
}

/// `main` returns without the destroy hook: one task awaited, a few queued
/// and not awaited, then `exit`. The runtime's exit handler must drain the
/// tasks and return (under a deterministic schedule it hung: the main
/// thread's thread-locals are gone by then, and registering it again
/// deadlocked on the executor's own lock).
fn exit_without_destroy() {
    check_at_exit();
    execute_and_await();
    for _ in 0..8 {
        queue_counted();
    }
    std::process::exit(0);
}

thread_local! {
    /// Calls the destroy hook when the thread's locals are destroyed.
    static DESTROY_ON_EXIT: DestroyOnDrop = const { DestroyOnDrop };
}

struct DestroyOnDrop;

impl Drop for DestroyOnDrop {
    fn drop(&mut self) {
        // The runtime's own thread-locals of this thread are gone by now.
        execute_and_await();
        queue_counted();
        __mlir_execution_engine_destroy();
        check_none_lost("after a destroy in a thread-local destructor");
    }
}

/// The destroy hook runs in a thread-local destructor: of a thread the
/// program started (the first to call in, which queued tasks and called
/// the runtime again from the destructor), then of the main thread at
/// `exit`. The destructor is registered before the thread's first runtime
/// call, so it runs after the runtime's own thread-locals are gone. (The
/// main thread calls nothing while it joins the other: under a
/// deterministic schedule a program thread that waits outside the runtime
/// holds the turn, docs/exploration.md.)
fn destroy_in_thread_local_destructor() {
    check_at_exit();
    thread::spawn(|| {
        DESTROY_ON_EXIT.with(|_| {});
        execute_and_await();
        for _ in 0..8 {
            queue_counted();
        }
    })
    .join()
    .unwrap();
    check_none_lost("after the other thread's exit");
    DESTROY_ON_EXIT.with(|_| {});
    execute_and_await();
    for _ in 0..8 {
        queue_counted();
    }
    std::process::exit(0);
}

/// Another thread queues tasks in a loop (and now and then awaits one)
/// while the main thread calls the destroy hook `destroys` times, 200 µs
/// apart; then the thread stops, and a last destroy must find that every
/// task it queued ran.
fn destroy_while_another_thread_queues(destroys: usize) {
    execute_and_await();
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                if n % 16 == 0 {
                    execute_and_await();
                } else {
                    queue_counted();
                }
                // Paced: a producer faster than the tasks finish is the
                // endless-producer scenario's.
                spin_for(20);
            }
        })
    };
    for _ in 0..destroys {
        thread::sleep(Duration::from_micros(200));
        __mlir_execution_engine_destroy();
    }
    stop.store(true, Ordering::Relaxed);
    producer.join().unwrap();
    __mlir_execution_engine_destroy();
    check_none_lost("after the last destroy");
}

/// A second destroy right after the first, with tasks queued and not
/// awaited before the first (by this thread and by another one, which
/// this one waits for through the runtime); then two destroys at once, of
/// this thread and of another.
fn destroy_twice(rounds: usize) {
    for _ in 0..rounds {
        for _ in 0..8 {
            queue_counted();
        }
        let done = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        // SAFETY: the other thread owns one more reference to `done`.
        unsafe { mlirAsyncRuntimeAddRef(done.get().cast(), 1) };
        let other = thread::spawn(move || {
            for _ in 0..4 {
                queue_counted();
            }
            open(done);
        });
        // SAFETY: our reference.
        unsafe {
            mlirAsyncRuntimeAwaitToken(done.get());
            mlirAsyncRuntimeDropRef(done.get().cast(), 1);
        }
        other.join().unwrap();
        __mlir_execution_engine_destroy();
        check_none_lost("after the first destroy");
        __mlir_execution_engine_destroy();
        check_none_lost("after the second destroy");
        // Two at once: another thread destroys first, while this one
        // (under a deterministic schedule, the primary, holding the turn
        // between its calls) destroys right after.
        for _ in 0..8 {
            queue_counted();
        }
        let other = thread::spawn(|| __mlir_execution_engine_destroy());
        spin_for(2000);
        __mlir_execution_engine_destroy();
        other.join().unwrap();
        check_none_lost("after two destroys at once");
    }
}

/// Another thread queues tasks as fast as it can, without end (keeping up
/// to 200,000 of them queued and not run), while the main thread calls the
/// destroy hook once: the hook must return (under schedule fuzzing the
/// tasks finish slower than they come, and it never did), and every task
/// queued, before or after, must run. (The cap keeps the tasks that go to
/// the next instance while the first destroy drains few enough for the
/// last destroy to drain in seconds.)
fn destroy_against_an_endless_producer() {
    execute_and_await();
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                queue_counted();
                while QUEUED.load(Ordering::Relaxed) - RAN.load(Ordering::Relaxed) > 200_000 && !stop.load(Ordering::Relaxed) {
                    thread::yield_now();
                }
            }
        })
    };
    thread::sleep(Duration::from_millis(20));
    destroy_or_exit_hung(Duration::from_secs(45), "against an endless producer");
    stop.store(true, Ordering::Relaxed);
    producer.join().unwrap();
    __mlir_execution_engine_destroy();
    check_none_lost("after the last destroy");
}

/// The destroy hook while its one task in flight (X) waits for a token
/// that a continuation completes, and another thread fires that
/// continuation 300 ms later, past the drain's 100 ms bound on staying the
/// current instance; the continuation then runs on for 50 ms. The hook
/// must return only after the continuation's end (a runner frees the code
/// it runs). Sent to a fresh instance, the continuation ran after the
/// multithreaded scheduler's destroy returned (CI, through
/// `mlir-tests/destroy-races-continuation.mlir`), and under a
/// deterministic schedule its thread retried the closed instance for ever
/// while destroy waited for X. With `x_works` X first runs that long
/// (a task that computes, or a worker thread slow to start: 100 ms and
/// more under ThreadSanitizer) before it awaits.
fn destroy_with_a_late_continuation(x_works: Duration) {
    static CONTINUATION_DONE: AtomicBool = AtomicBool::new(false);
    static X_DONE: AtomicBool = AtomicBool::new(false);
    let gate = TokenPtr::new(mlirAsyncRuntimeCreateToken());
    let released = TokenPtr::new(mlirAsyncRuntimeCreateToken());
    // SAFETY: live tokens. The continuation owns one reference to the gate
    // and the producer's of `released`; X one to `released`; the late
    // thread the creator's of the gate.
    unsafe {
        mlirAsyncRuntimeAddRef(gate.get().cast(), 1);
        mlirAsyncRuntimeAddRef(released.get().cast(), 1);
    }
    let (h, r) = task(move || unsafe {
        mlirAsyncRuntimeEmplaceToken(released.get());
        mlirAsyncRuntimeDropRef(released.get().cast(), 1);
        thread::sleep(Duration::from_millis(50));
        mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
        CONTINUATION_DONE.store(true, Ordering::SeqCst);
    });
    // SAFETY: live token.
    unsafe { mlirAsyncRuntimeAwaitTokenAndExecute(gate.get(), h, r) };
    let (h, r) = task(move || unsafe {
        thread::sleep(x_works);
        mlirAsyncRuntimeAwaitToken(released.get());
        mlirAsyncRuntimeDropRef(released.get().cast(), 1);
        X_DONE.store(true, Ordering::SeqCst);
    });
    mlirAsyncRuntimeExecute(h, r);
    let late = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        open(gate);
    });
    destroy_or_exit_hung(Duration::from_secs(20), "with a late continuation");
    let (x, continuation) = (X_DONE.load(Ordering::SeqCst), CONTINUATION_DONE.load(Ordering::SeqCst));
    late.join().unwrap();
    if !(x && continuation) {
        eprintln!("scenario: the destroy hook returned before the end of X ({x}) or of the continuation ({continuation})");
        std::process::exit(LOST);
    }
}

/// Another thread queues, every half millisecond and without end, a task
/// that blocks in an await of a token which that thread completes at its
/// next round: the tasks in flight are switched out nearly all the time, so
/// the destroy hook's drain, which stays current while every task in
/// flight waits, must still see them run now and then and stop accepting
/// the thread's tasks. The hook must return, and every task queued,
/// before or after, must run.
fn destroy_against_a_producer_of_waiting_tasks() {
    execute_and_await();
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            let mut previous: Option<TokenPtr> = None;
            while !stop.load(Ordering::Relaxed) {
                let token = TokenPtr::new(mlirAsyncRuntimeCreateToken());
                // SAFETY: the task owns one reference, the producer (this
                // thread) the creator's.
                unsafe { mlirAsyncRuntimeAddRef(token.get().cast(), 1) };
                QUEUED.fetch_add(1, Ordering::Relaxed);
                let (h, r) = task(move || unsafe {
                    mlirAsyncRuntimeAwaitToken(token.get());
                    mlirAsyncRuntimeDropRef(token.get().cast(), 1);
                    RAN.fetch_add(1, Ordering::Relaxed);
                });
                mlirAsyncRuntimeExecute(h, r);
                if let Some(previous) = previous.replace(token) {
                    open(previous);
                }
                thread::sleep(Duration::from_micros(500));
            }
            if let Some(previous) = previous {
                open(previous);
            }
        })
    };
    thread::sleep(Duration::from_millis(20));
    let took = destroy_or_exit_hung(Duration::from_secs(20), "against a producer of waiting tasks");
    stop.store(true, Ordering::Relaxed);
    producer.join().unwrap();
    __mlir_execution_engine_destroy();
    eprintln!("scenario: the first destroy took {took:?}");
    check_none_lost("after the last destroy");
}

/// The child side: runs the scenario named in the environment, if any.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var(SCENARIO_ENV) else { return };
    match name.as_str() {
        "fork-during-stats" => fork_while_busy(Busy::Stats, scaled(100)),
        "fork-during-tasks" => fork_while_busy(Busy::Tasks, scaled(100)),
        "fork-during-destroy" => fork_while_busy(Busy::Destroy, scaled(100)),
        "chain-of-five" => blocking_chain_of_five(),
        "push-as-spare-idles" => push_as_the_only_spare_goes_idle(scaled(2000)),
        "spare-churn" => spare_churn(scaled(2000)),
        "two-continuations" => two_continuations_one_blocks_on_the_other(),
        "exit-without-destroy" => exit_without_destroy(),
        "destroy-in-tls-destructor" => destroy_in_thread_local_destructor(),
        "destroy-while-queuing" => destroy_while_another_thread_queues(scaled(100)),
        "destroy-twice" => destroy_twice(scaled(10)),
        "destroy-with-blocked" => destroy_with_blocked_tasks(scaled(5)),
        "endless-producer" => destroy_against_an_endless_producer(),
        "late-continuation" => destroy_with_a_late_continuation(Duration::ZERO),
        "late-continuation-after-work" => destroy_with_a_late_continuation(Duration::from_millis(150)),
        "late-continuation-during-work" => destroy_with_a_late_continuation(Duration::from_millis(600)),
        "producer-of-waiting-tasks" => destroy_against_a_producer_of_waiting_tasks(),
        other => panic!("unknown scenario {other}"),
    }
    std::process::exit(0);
}

// ---- the tests (parent side) ----------------------------------------------

fn scenario(name: &str, env: &[(&str, &str)], limit: Duration) -> ChildRun {
    let mut all = vec![(SCENARIO_ENV, name)];
    all.extend_from_slice(env);
    // Under AddressSanitizer (`make sanitize-asan`), the scenarios that fork
    // run without ASan's fake stacks: one set for each task stack a thread
    // switches to, they grew one accountable mapping by about 9 GB a second
    // in fork-during-destroy, and once it passed the machine's RAM every
    // fork failed with ENOMEM (the kernel's overcommit heuristic checks
    // each mapping a fork copies; 3 runs of 6).
    let asan_options;
    if cfg!(mlir_async_asan) && name.starts_with("fork-") {
        asan_options = format!("{}:detect_stack_use_after_return=0", std::env::var("ASAN_OPTIONS").unwrap_or_default());
        all.push(("ASAN_OPTIONS", &asan_options));
    }
    // A scaled run takes proportionally longer.
    let scale = std::env::var(SCALE_ENV).ok().and_then(|s| s.parse::<u32>().ok()).unwrap_or(1).max(1);
    run_child("scenario_child", &all, limit * scale)
}

fn assert_scenario(name: &str, env: &[(&str, &str)], limit: Duration) -> ChildRun {
    let run = scenario(name, env, limit);
    assert!(run.succeeded(), "{name} with {env:?}: {}", run.describe());
    run
}

#[test]
#[cfg_attr(mlir_async_tsan, ignore = "ThreadSanitizer does not support fork in a multithreaded process")]
fn a_child_forked_while_another_thread_reads_the_counters_can_use_and_destroy_the_runtime() {
    assert_scenario("fork-during-stats", &[("MLIR_ASYNC_RUNTIME_WORKERS", "2")], Duration::from_secs(120));
}

#[test]
#[cfg_attr(mlir_async_tsan, ignore = "ThreadSanitizer does not support fork in a multithreaded process")]
fn a_child_forked_while_spares_start_and_exit_can_use_and_destroy_the_runtime() {
    assert_scenario(
        "fork-during-tasks",
        &[("MLIR_ASYNC_RUNTIME_WORKERS", "1"), ("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0")],
        Duration::from_secs(120),
    );
}

/// The same with task stacks: at the fork, tasks of the parent are
/// switched out on their stacks (and their stacks pooled, taken, given
/// back); the child has none of them and uses the runtime as any process.
#[test]
#[cfg_attr(mlir_async_tsan, ignore = "ThreadSanitizer does not support fork in a multithreaded process")]
fn a_child_forked_while_tasks_are_switched_out_can_use_and_destroy_the_runtime() {
    assert_scenario("fork-during-tasks", &[("MLIR_ASYNC_RUNTIME_WORKERS", "1")], Duration::from_secs(120));
}

/// Destroy with tasks blocked in an `Await*`: switched out on their
/// stacks, and (task stacks off) blocking their threads. Either way
/// destroy waits for them and returns with every one finished.
#[test]
fn destroy_waits_for_tasks_switched_out_or_blocked() {
    for stacks in ["1", "0"] {
        for workers in ["1", "2"] {
            assert_scenario(
                "destroy-with-blocked",
                &[("MLIR_ASYNC_RUNTIME_WORKERS", workers), ("MLIR_ASYNC_RUNTIME_TASK_STACKS", stacks)],
                Duration::from_secs(60),
            );
        }
    }
}

#[test]
#[cfg_attr(mlir_async_tsan, ignore = "ThreadSanitizer does not support fork in a multithreaded process")]
fn a_child_forked_while_another_thread_destroys_and_traces_can_use_and_destroy_the_runtime() {
    let dir = std::env::temp_dir().join(format!("mlir-async-fork-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.json");
    assert_scenario(
        "fork-during-destroy",
        &[
            ("MLIR_ASYNC_RUNTIME_WORKERS", "2"),
            ("MLIR_ASYNC_RUNTIME_TRACE", trace.to_str().unwrap()),
            ("MLIR_ASYNC_RUNTIME_STATS", "1"),
        ],
        Duration::from_secs(120),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Design invariant 4 of the ABI: tasks queued from outside start in the
/// order they were queued, so a pool capped at N threads completes what a
/// first-in-first-out pool of N threads completes.
#[test]
fn a_chain_of_blocking_tasks_completes_at_every_cap() {
    for stacks in ["1", "0"] {
        for (workers, cap) in [("1", "1"), ("1", "2"), ("2", "2"), ("1", "3"), ("2", "3"), ("2", "4")] {
            let run = scenario(
                "chain-of-five",
                &[
                    ("MLIR_ASYNC_RUNTIME_WORKERS", workers),
                    ("MLIR_ASYNC_RUNTIME_MAX_THREADS", cap),
                    ("MLIR_ASYNC_RUNTIME_TASK_STACKS", stacks),
                ],
                Duration::from_secs(30),
            );
            assert!(run.succeeded(), "{workers} worker(s), cap {cap}, stacks {stacks}: {}", run.describe());
        }
    }
}

/// Without fuzzing the window (between the spare's leaving the drainers'
/// count and its becoming idle) is hit rarely; schedule fuzzing delays
/// threads right there.
#[test]
fn a_task_queued_as_the_only_spare_goes_idle_runs() {
    for fuzz in ["off", "1", "2", "3"] {
        assert_scenario(
            "push-as-spare-idles",
            &[
                ("MLIR_ASYNC_RUNTIME_WORKERS", "1"),
                ("MLIR_ASYNC_RUNTIME_MAX_THREADS", "2"),
                ("MLIR_ASYNC_RUNTIME_FUZZ", fuzz),
                ("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0"),
            ],
            Duration::from_secs(120),
        );
    }
}

/// Spares start for bursts of blocked tasks, go idle and are reused, at
/// caps of one to three spares, and are joined by every destroy: no abort,
/// no hang, no use of a freed scheduler (under `make sanitize`,
/// AddressSanitizer sees the last). With fuzzing, a spare is delayed as it
/// goes idle and as it ends.
#[test]
fn spares_started_for_bursts_of_blocked_tasks_are_reused_and_joined() {
    for (workers, cap, fuzz) in [("1", "2", "off"), ("1", "3", "1"), ("2", "4", "2"), ("2", "5", "3"), ("1", "2", "4")] {
        assert_scenario(
            "spare-churn",
            &[
                ("MLIR_ASYNC_RUNTIME_WORKERS", workers),
                ("MLIR_ASYNC_RUNTIME_MAX_THREADS", cap),
                ("MLIR_ASYNC_RUNTIME_FUZZ", fuzz),
                ("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0"),
            ],
            Duration::from_secs(120),
        );
    }
}

fn assert_no_invented_deadlock(variable: &str, specs: impl Iterator<Item = String>) {
    let mut hung = Vec::new();
    let mut runs = 0;
    for spec in specs {
        runs += 1;
        let run = scenario(
            "two-continuations",
            &[("MLIR_ASYNC_RUNTIME_WORKERS", "1"), (variable, &spec)],
            Duration::from_secs(10),
        );
        if !run.succeeded() {
            hung.push(format!("{variable}={spec}: {}", run.describe()));
        }
    }
    assert!(hung.is_empty(), "{} of {runs} runs failed:\n{}", hung.len(), hung.join("\n"));
}

#[test]
fn schedule_fuzzing_invents_no_deadlock() {
    assert_no_invented_deadlock("MLIR_ASYNC_RUNTIME_FUZZ", (1..=64).map(|s| s.to_string()));
}

#[test]
#[cfg_attr(
    mlir_async_tsan,
    ignore = "the deterministic executor's state is behind a std Mutex and Condvar, which ThreadSanitizer cannot see with an uninstrumented std"
)]
fn deterministic_schedules_invent_no_deadlock() {
    assert_no_invented_deadlock(
        "MLIR_ASYNC_RUNTIME_SCHEDULE",
        (1..=32).map(|s| format!("random:{s}")).chain((1..=32).map(|s| format!("pct:{s}"))),
    );
}

// ---- 6: exit paths under every executor (issue 27) ----------------------------

/// The executors the exit paths run under: the multithreaded scheduler,
/// both deterministic strategies, and schedule fuzzing (`{seed}` becomes
/// the run's seed). scripts/check/lifecycle_repeat.sh runs the same four.
const EXECUTORS: [(&str, &str); 4] = [
    ("MLIR_ASYNC_RUNTIME_WORKERS", "2"),
    ("MLIR_ASYNC_RUNTIME_SCHEDULE", "random:{seed}"),
    ("MLIR_ASYNC_RUNTIME_SCHEDULE", "pct:{seed}"),
    ("MLIR_ASYNC_RUNTIME_FUZZ", "{seed}"),
];

/// Runs exit path `name` under every executor with `seeds`: each run must
/// exit 0 in time (no hang, no task lost: the child counts) and the
/// runtime must not report an abandoned task.
fn assert_exit_path(name: &str, seeds: std::ops::RangeInclusive<u64>, limit: Duration) {
    let mut failed = Vec::new();
    let mut runs = 0;
    for (variable, value) in EXECUTORS {
        for seed in seeds.clone() {
            runs += 1;
            let value = value.replace("{seed}", &seed.to_string());
            let run = scenario(name, &[(variable, &value)], limit);
            if !run.succeeded() || run.stderr.contains("abandoned") {
                failed.push(format!("{variable}={value}: {}", run.describe()));
            }
        }
    }
    assert!(failed.is_empty(), "{name}: {} of {runs} runs failed:\n{}", failed.len(), failed.join("\n"));
}

/// Issue 27 (1): under a deterministic schedule this hung in every run.
#[test]
fn a_program_that_exits_without_the_destroy_hook_drains_and_exits() {
    assert_exit_path("exit-without-destroy", 1..=4, Duration::from_secs(20));
}

#[test]
fn the_destroy_hook_in_a_thread_local_destructor_drains_and_returns() {
    assert_exit_path("destroy-in-tls-destructor", 1..=4, Duration::from_secs(20));
}

/// Issue 27 (2): under a deterministic schedule tasks were lost in most
/// runs (a program thread's `Execute` ran between the destroy's wake at
/// idleness and its close).
#[test]
fn no_task_is_lost_when_destroy_runs_while_another_thread_queues() {
    assert_exit_path("destroy-while-queuing", 1..=3, Duration::from_secs(60));
}

#[test]
fn a_second_destroy_right_after_the_first_finds_nothing_lost() {
    assert_exit_path("destroy-twice", 1..=2, Duration::from_secs(20));
}

/// Issue 27 (3): under schedule fuzzing the destroy hook never returned
/// against a thread that queues without end.
#[test]
fn the_destroy_hook_returns_against_an_endless_producer() {
    assert_exit_path("endless-producer", 1..=1, Duration::from_secs(60));
}

#[test]
fn the_destroy_hook_returns_against_a_producer_of_waiting_tasks() {
    assert_exit_path("producer-of-waiting-tasks", 1..=1, Duration::from_secs(60));
}

#[test]
fn the_destroy_hook_waits_for_a_late_continuation_that_its_task_awaits() {
    assert_exit_path("late-continuation", 1..=2, Duration::from_secs(30));
}

/// X computes 150 ms, past the drain's 100 ms bound, before it awaits the
/// late continuation: no program thread called in meanwhile, so nothing
/// outpaced the drain and the instance must stay current. Before, the
/// multithreaded scheduler gave it up at the bound, sent the continuation
/// to a fresh instance and returned while it still ran (in code a runner
/// frees), and the deterministic executor refused the late thread's
/// completion and waited for X for ever (also the TSan-only failure of
/// the test above: a worker thread slow to start there).
#[test]
fn the_destroy_hook_waits_for_a_late_continuation_after_its_task_computed_past_the_bound() {
    assert_exit_path("late-continuation-after-work", 1..=2, Duration::from_secs(30));
}

/// X computes 600 ms, and the late thread's completion (at 300 ms) comes
/// while X still runs: the late thread called in, but it waits for its turn
/// (a deterministic schedule runs one thread at a time), and a call not
/// yet accepted has outpaced nothing. Before, the deterministic executor
/// counted the call on arrival, gave the instance up at the bound, refused
/// the completion at its turn, and waited for X for ever (under
/// ThreadSanitizer the test above failed so, its X slowed past 300 ms).
#[test]
fn the_destroy_hook_waits_for_a_late_continuation_that_comes_while_its_task_computes() {
    assert_exit_path("late-continuation-during-work", 1..=2, Duration::from_secs(30));
}
