//! What a task may do to the whole process, on every kind of thread that
//! runs tasks (issue 39, shapes 6 and 7, and fork): a worker of the pool
//! (on a task stack), a spare thread (task stacks off:
//! `MLIR_ASYNC_RUNTIME_TASK_STACKS=0`, the worker blocked), and the
//! program's main thread while it waits in an `Await*` outside the pool
//! (the task on that thread's task stack).
//!
//! - `exit()` from a task exits the process with the task's status: the
//!   teardown at exit does not wait for the task that called it. Before
//!   the fix, from the waiting main thread's task stack, it hung: the exit
//!   handler ran the destroy hook, whose gate waited for the entry this
//!   same thread holds (killed after the limit, 3 of 3). The C++ runtime
//!   (Debian's LLVM 19, dlopen'ed by a C program: `exit(7)` in a task
//!   queued by `mlirAsyncRuntimeExecute` while main awaits its token)
//!   hangs at exit from a pool task (killed after 10 s, 2026-12-06; issue
//!   39, shape 6); ours must exit with the status.
//! - The destroy hook called from a task is misuse: one line on stderr
//!   naming the call, then SIGABRT. Before the fix, from the waiting main
//!   thread's task stack, it was a Rust panic inside an `extern "C"`
//!   function ("already borrowed", a `RefCell` of `instance/cached.rs`):
//!   a panic message, a backtrace hint, "panic in a function that cannot
//!   unwind" and an abort; from the pool and a spare it was already one
//!   line (now worded "called from inside a task"). The C++ runtime's
//!   destroy hook called from a pool task hangs (killed after 10 s, the
//!   same C program). `Runtime::shutdown` from a task is refused with
//!   `ShutdownError::OnRuntimeThread` (a Rust API has an error to return):
//!   before the fix, the same panic from the waiting thread's task stack.
//! - `fork` from a task: the child is not bound to the parent's scheduler
//!   (whose threads do not exist there): it can queue a task, await it and
//!   call the destroy hook. Before the fix, on a task stack (the pool's or
//!   the waiting thread's), the child's task went to the parent's
//!   scheduler: a SIGSEGV in the child forked on a pool thread, the
//!   cache's `RefCell` panic in the one forked on the waiting thread. In
//!   the C++ runtime a child forked from a pool task hangs in its first
//!   await (its pool's threads are not in the child; SIGALRM after 5 s).
//!
//! Each case runs in a child process (this test binary again, the case in
//! an environment variable), as in `misuse.rs` and `lifecycle.rs`.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::time::Duration;

use common::{run_child, task, ChildRun, TokenPtr};
use mlir_async_runtime::abi::*;
use mlir_async_runtime::{Runtime, ShutdownError};

const CASE_ENV: &str = "MLIR_ASYNC_RUNTIME_FROM_TASK_CASE";

/// The child could not put the task where the case wants it.
const NOT_REACHED: i32 = 60;
/// The task's own exit status (shape 6).
const TASK_STATUS: i32 = 7;

/// Where the task runs.
#[derive(Clone, Copy, Debug)]
enum Place {
    Pool,
    Spare,
    Waiter,
}

const PLACES: [(&str, Place); 3] = [("pool", Place::Pool), ("spare", Place::Spare), ("waiter", Place::Waiter)];

impl Place {
    /// The environment that puts the task there.
    fn env(self) -> Vec<(&'static str, &'static str)> {
        match self {
            // The waiting main thread runs no task: the pool does.
            Place::Pool => vec![("MLIR_ASYNC_RUNTIME_WORKERS", "2"), ("MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS", "0")],
            // One worker, blocked on its own stack: the next task goes to
            // a spare thread.
            Place::Spare => vec![("MLIR_ASYNC_RUNTIME_WORKERS", "1"), ("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0")],
            // The default: the waiting main thread runs the task it waits
            // for (its producer), on its task stack.
            Place::Waiter => vec![("MLIR_ASYNC_RUNTIME_WORKERS", "2")],
        }
    }
}

static MAIN_TID: AtomicI32 = AtomicI32::new(0);
static REACHED: AtomicBool = AtomicBool::new(false);

fn gettid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() }
}

/// True when the calling task runs where `place` says.
fn runs_in(place: Place) -> bool {
    let name = std::thread::current().name().map(str::to_owned).unwrap_or_default();
    match place {
        Place::Pool => mlir_async_runtime::on_runtime_thread() && !name.starts_with("mlir-async-spare-"),
        Place::Spare => name.starts_with("mlir-async-spare-"),
        Place::Waiter => gettid() == MAIN_TID.load(Ordering::SeqCst) && !mlir_async_runtime::on_runtime_thread(),
    }
}

/// Runs `body` in a task at `place`, while the main thread awaits the
/// task's token; returns once the task has run `body` and returned (a body
/// that exits or aborts never does). Exits with [`NOT_REACHED`] if the task
/// never ran there.
fn run_in(place: Place, body: fn()) {
    MAIN_TID.store(gettid(), Ordering::SeqCst);
    // For the spare: a task blocked on `gate` holds the only worker.
    let gate = TokenPtr::new(mlirAsyncRuntimeCreateToken());
    if let Place::Spare = place {
        let started = std::sync::Arc::new(AtomicUsize::new(0));
        let seen = std::sync::Arc::clone(&started);
        // SAFETY: the blocker owns one reference to the gate.
        unsafe { mlirAsyncRuntimeAddRef(gate.get().cast(), 1) };
        let (h, r) = task(move || unsafe {
            seen.store(1, Ordering::SeqCst);
            mlirAsyncRuntimeAwaitToken(gate.get());
            mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
        });
        mlirAsyncRuntimeExecute(h, r);
        while started.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Blocked by now, most likely; a task that still finds the worker
        // free is tried again below.
        std::thread::sleep(Duration::from_millis(50));
    }
    for _ in 0..200 {
        let token = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let (h, r) = task(move || {
            if runs_in(place) {
                body();
                REACHED.store(true, Ordering::SeqCst);
            }
            // SAFETY: the producer's reference.
            unsafe { mlirAsyncRuntimeEmplaceToken(token.get()) };
        });
        mlirAsyncRuntimeExecute(h, r);
        // SAFETY: our reference.
        unsafe {
            mlirAsyncRuntimeAwaitToken(token.get());
            mlirAsyncRuntimeDropRef(token.get().cast(), 1);
        }
        if REACHED.load(Ordering::SeqCst) {
            break;
        }
    }
    // SAFETY: the gate's producer and creator references.
    unsafe {
        mlirAsyncRuntimeEmplaceToken(gate.get());
        mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
    }
    if !REACHED.load(Ordering::SeqCst) {
        eprintln!("scenario: the task never ran on the {place:?} thread");
        std::process::exit(NOT_REACHED);
    }
}

/// The forked child's status, seen by the parent's task.
static FORK_STATUS: AtomicI32 = AtomicI32::new(-1);

/// The body of the fork case: forks; the child uses the runtime afresh and
/// calls the destroy hook; the parent's task waits for it.
fn fork_and_use_in_child() {
    // SAFETY: the child calls only the runtime (whose fork handlers reset
    // it) and async-signal-safe functions before `exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: a watchdog: a hang ends with SIGALRM.
        unsafe { libc::alarm(20) };
        common::execute_and_await();
        __mlir_execution_engine_destroy();
        // A second instance, left to the teardown at exit: `exit` (not
        // `_exit`) runs it, and this thread's thread-local destructors,
        // over the parent's state that the fork handlers forgot.
        common::execute_and_await();
        // SAFETY: ends the child.
        unsafe { libc::exit(0) };
    }
    let status = common::wait_child(pid, Duration::from_secs(30)).unwrap_or(-2);
    FORK_STATUS.store(status, Ordering::SeqCst);
}

/// The body of the shutdown case: refused, on every thread.
fn shutdown_is_refused() {
    let result = Runtime::start().shutdown();
    if result != Err(ShutdownError::OnRuntimeThread) {
        eprintln!("scenario: Runtime::shutdown from a task gave {result:?}");
        // SAFETY: ends the process at once (no unwinding out of a task).
        unsafe { libc::_exit(5) };
    }
}

#[test]
fn from_a_task_child() {
    let Ok(case) = std::env::var(CASE_ENV) else { return };
    let (what, place) = case.split_once('@').expect("WHAT@PLACE");
    let place = PLACES.iter().find(|(n, _)| *n == place).expect("a place").1;
    match what {
        // SAFETY: plain `exit`, as C code would call it.
        "exit" => run_in(place, || unsafe { libc::exit(TASK_STATUS) }),
        "destroy" => run_in(place, || __mlir_execution_engine_destroy()),
        "shutdown" => run_in(place, shutdown_is_refused),
        "fork" => {
            run_in(place, fork_and_use_in_child);
            let status = FORK_STATUS.load(Ordering::SeqCst);
            if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                eprintln!("scenario: the child forked from a task ended with wait status {status:#x} (-2: hung)");
                std::process::exit(4);
            }
        }
        _ => panic!("unknown case {what}"),
    }
    __mlir_execution_engine_destroy();
    std::process::exit(0);
}

fn run_case(what: &str, place: &str, env: &[(&str, &str)]) -> ChildRun {
    let case = format!("{what}@{place}");
    let mut env = env.to_vec();
    env.push((CASE_ENV, &case));
    run_child("from_a_task_child", &env, Duration::from_secs(40))
}

#[test]
fn exit_from_a_task_exits_with_its_status_on_every_thread() {
    let mut failures = Vec::new();
    for (name, place) in PLACES {
        let run = run_case("exit", name, &place.env());
        if run.status.and_then(|s| s.code()) != Some(TASK_STATUS) {
            failures.push(format!("exit@{name}: expected status {TASK_STATUS}, got {}", run.describe()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_destroy_hook_from_a_task_aborts_with_one_line_on_every_thread() {
    let line = "mlir_async_runtime: __mlir_execution_engine_destroy: called from inside a task";
    let mut failures = Vec::new();
    for (name, place) in PLACES {
        let run = run_case("destroy", name, &place.env());
        let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.starts_with("running ") && !l.is_empty()).collect();
        if run.status.and_then(|s| s.signal()) != Some(libc::SIGABRT) || lines != [line] {
            failures.push(format!("destroy@{name}: expected SIGABRT after exactly {line:?}, got {}", run.describe()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn shutdown_from_a_task_is_refused_on_every_thread() {
    let mut failures = Vec::new();
    for (name, place) in PLACES {
        let run = run_case("shutdown", name, &place.env());
        if !run.succeeded() {
            failures.push(format!("shutdown@{name}: {}", run.describe()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
#[cfg_attr(mlir_async_tsan, ignore = "ThreadSanitizer does not support fork in a multithreaded process")]
fn a_child_forked_from_a_task_can_use_and_destroy_the_runtime_on_every_thread() {
    let mut failures = Vec::new();
    for (name, place) in PLACES {
        let run = run_case("fork", name, &place.env());
        if !run.succeeded() {
            failures.push(format!("fork@{name}: {}", run.describe()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
