//! A task made ready inside a task (an `Execute` from a task, a
//! continuation its completion fires) must be visible to idle threads while
//! that task goes on: its parent may wait for it by spinning on memory
//! instead of awaiting. An earlier version kept it in the thread's
//! next-task slot, which no other thread could take, and started no drainer
//! for it: the parent spun forever (3 runs of 3 hung).
//!
//! Each scenario runs in a child process with two workers, so a hang is
//! killed and reported instead of stalling the suite; each spin also gives
//! up by itself after 10 s and the child then exits with [`HUNG`].

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{run_child, task, TokenPtr};
use mlir_async_runtime::abi::*;

const SCENARIO_ENV: &str = "MLIR_ASYNC_RUNTIME_TEST_SCENARIO";

/// A child's exit code when a spin gave up.
const HUNG: i32 = 3;

/// How long a spin waits for the task it made ready.
const SPIN_LIMIT: Duration = Duration::from_secs(10);

/// Spins until `flag` is set; exits the process with [`HUNG`] after
/// [`SPIN_LIMIT`].
fn spin_on(flag: &AtomicBool, what: &str) {
    let start = Instant::now();
    while !flag.load(Ordering::Acquire) {
        if start.elapsed() > SPIN_LIMIT {
            eprintln!("scenario: {what}: the spin did not end within {SPIN_LIMIT:?}");
            std::process::exit(HUNG);
        }
        std::hint::spin_loop();
    }
}

/// Runs `body` as a task and waits (blocking, from this thread) until it
/// returns.
fn run_task_and_wait(body: impl FnOnce() + Send + 'static) {
    let done = TokenPtr::new(mlirAsyncRuntimeCreateToken());
    let (h, r) = task(move || {
        body();
        // SAFETY: the task owns the producer's reference.
        unsafe { mlirAsyncRuntimeEmplaceToken(done.get()) };
    });
    mlirAsyncRuntimeExecute(h, r);
    // SAFETY: our reference.
    unsafe {
        mlirAsyncRuntimeAwaitToken(done.get());
        mlirAsyncRuntimeDropRef(done.get().cast(), 1);
    }
}

/// A task starts a child with `Execute` (then, with `younger`, a second
/// one) and spins until the first child ran. With a younger child, the
/// first is not in the thread's slot but in its deque.
fn child_then_spin(rounds: usize, younger: bool, what: &'static str) {
    for round in 0..rounds {
        run_task_and_wait(move || {
            let flag = Arc::new(AtomicBool::new(false));
            let set = Arc::clone(&flag);
            let (h, r) = task(move || set.store(true, Ordering::Release));
            mlirAsyncRuntimeExecute(h, r);
            if younger {
                let (h, r) = task(|| {});
                mlirAsyncRuntimeExecute(h, r);
            }
            spin_on(&flag, &format!("round {round}: {what}"));
        });
    }
    __mlir_execution_engine_destroy();
}

/// A task completes a token whose continuation (registered beforehand from
/// this thread) sets a flag, and spins until it is set.
fn continuation_then_spin(rounds: usize) {
    for round in 0..rounds {
        let gate = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let flag = Arc::new(AtomicBool::new(false));
        let set = Arc::clone(&flag);
        let (h, r) = task(move || {
            // SAFETY: the continuation owns the consumer's reference.
            unsafe { mlirAsyncRuntimeDropRef(gate.get().cast(), 1) };
            set.store(true, Ordering::Release);
        });
        // SAFETY: a live token; our reference moves to the continuation.
        unsafe { mlirAsyncRuntimeAwaitTokenAndExecute(gate.get(), h, r) };
        run_task_and_wait(move || {
            // SAFETY: the producer's reference.
            unsafe { mlirAsyncRuntimeEmplaceToken(gate.get()) };
            spin_on(&flag, &format!("round {round}: a continuation fired inside a task"));
        });
    }
    __mlir_execution_engine_destroy();
}

/// A thread outside the pool queues one task onto its empty entry and spins
/// until it ran, never in an `Await*`; each round on a fresh thread (a
/// fresh entry), after a pause in which the pool's threads went to sleep
/// and one of them took the watch (`exec/threads/watch.rs`; shorter than
/// the 16 ms after which the watch lets go): the push woke nobody, and only
/// the watch's look can start a drainer for the task.
fn outside_then_spin(rounds: usize) {
    for round in 0..rounds {
        std::thread::sleep(Duration::from_millis(8));
        std::thread::spawn(move || {
            let flag = Arc::new(AtomicBool::new(false));
            let set = Arc::clone(&flag);
            let (h, r) = task(move || set.store(true, Ordering::Release));
            mlirAsyncRuntimeExecute(h, r);
            spin_on(&flag, &format!("round {round}: a task queued from outside"));
        })
        .join()
        .unwrap();
    }
    __mlir_execution_engine_destroy();
}

/// The child side: runs the scenario named in the environment, if any.
#[test]
fn scenario_child() {
    let Ok(name) = std::env::var(SCENARIO_ENV) else { return };
    match name.as_str() {
        "execute" => child_then_spin(200, false, "the child of an Execute inside a task"),
        "two-children" => child_then_spin(200, true, "the older of two children"),
        "continuation" => continuation_then_spin(200),
        "outside" => outside_then_spin(20),
        other => panic!("unknown scenario {other}"),
    }
    std::process::exit(0);
}

/// The scenarios' children spin on memory on 2 workers: run one at a time,
/// so that the watch's scenario finds the pool asleep after its pauses.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn assert_completes(name: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let run = run_child(
        "scenario_child",
        &[(SCENARIO_ENV, name), ("MLIR_ASYNC_RUNTIME_WORKERS", "2")],
        Duration::from_secs(60),
    );
    assert!(run.succeeded(), "{name} with 2 workers: {}", run.describe());
}

#[test]
fn a_task_spinning_on_the_child_it_started_completes() {
    assert_completes("execute");
}

#[test]
fn a_task_spinning_on_the_older_of_two_children_completes() {
    assert_completes("two-children");
}

#[test]
fn a_task_spinning_on_a_continuation_it_fired_completes() {
    assert_completes("continuation");
}

/// A thread outside the pool that queues a task and spins on it, never
/// awaiting, while the watch holds: the watch starts a drainer for it. The
/// stats count the tasks the watch started. A busy machine may keep the
/// pool's threads looking for work through the pauses (then the pushes
/// start nobody, and lookers take the tasks; under two CPU hogs on 2 cores,
/// none of 20 found the pool asleep): up to five runs, until the watch
/// starts one (on a quiet machine, 19 of 20 in each run).
#[test]
fn a_thread_outside_the_pool_spinning_on_the_task_it_queued_completes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let count = |run: &common::ChildRun, label: &str| {
        run.stderr
            .lines()
            .find(|l| l.contains(label))
            .and_then(|l| l.split_whitespace().last()?.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no count of {label}: {}", run.describe()))
    };
    for _ in 0..5 {
        let run = run_child(
            "scenario_child",
            &[(SCENARIO_ENV, "outside"), ("MLIR_ASYNC_RUNTIME_WORKERS", "2"), ("MLIR_ASYNC_RUNTIME_STATS", "1")],
            Duration::from_secs(60),
        );
        assert!(run.succeeded(), "outside with 2 workers: {}", run.describe());
        if count(&run, "started by the watch") > 0 {
            return;
        }
    }
    panic!("in five runs, the watch started no task: no push found the pool asleep with the watch held");
}
