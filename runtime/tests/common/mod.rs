//! Helpers shared by the runtime's integration tests: Rust closures as
//! coroutine tasks, and a completion latch to wait on from tests.

#![allow(dead_code)]

use std::ffi::c_void;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The `resume` half of a task whose handle is a boxed Rust closure.
unsafe extern "C" fn run_boxed(handle: *mut c_void) {
    // SAFETY: `handle` came from `into_handle` and is resumed once.
    let f = unsafe { Box::from_raw(handle.cast::<Box<dyn FnOnce() + Send>>()) };
    f();
}

/// A `(handle, resume)` pair that runs `f` when resumed.
pub fn task(
    f: impl FnOnce() + Send + 'static,
) -> (*mut c_void, Option<unsafe extern "C" fn(*mut c_void)>) {
    let boxed: Box<Box<dyn FnOnce() + Send>> = Box::new(Box::new(f));
    (Box::into_raw(boxed).cast(), Some(run_boxed))
}

/// A one-shot signal from a task to the test thread.
pub fn signal() -> (mpsc::Sender<()>, mpsc::Receiver<()>) {
    mpsc::channel()
}

pub const TIMEOUT: Duration = Duration::from_secs(20);

/// A token's address, to move into tasks and threads (raw pointers are not
/// `Send`).
#[derive(Clone, Copy)]
pub struct TokenPtr(usize);

impl TokenPtr {
    pub fn new(t: *mut mlir_async_runtime::Token) -> TokenPtr {
        TokenPtr(t as usize)
    }
    pub fn get(self) -> *mut mlir_async_runtime::Token {
        self.0 as *mut mlir_async_runtime::Token
    }
}

/// Awaits `token` from this thread (the caller holds a reference).
pub fn await_token(token: TokenPtr) {
    // SAFETY: the caller holds a reference to the token.
    unsafe { mlir_async_runtime::abi::mlirAsyncRuntimeAwaitToken(token.get()) };
}

/// Drops the caller's reference to `token`.
pub fn drop_token(token: TokenPtr) {
    // SAFETY: the caller's reference.
    unsafe { mlir_async_runtime::abi::mlirAsyncRuntimeDropRef(token.get().cast(), 1) };
}

/// Runs a task that completes a token, and awaits it from this thread.
pub fn execute_and_await() {
    let token = TokenPtr::new(mlir_async_runtime::abi::mlirAsyncRuntimeCreateToken());
    // SAFETY: the task owns the producer's reference.
    let (h, r) = task(move || unsafe { mlir_async_runtime::abi::mlirAsyncRuntimeEmplaceToken(token.get()) });
    mlir_async_runtime::abi::mlirAsyncRuntimeExecute(h, r);
    // SAFETY: our reference.
    unsafe {
        mlir_async_runtime::abi::mlirAsyncRuntimeAwaitToken(token.get());
        mlir_async_runtime::abi::mlirAsyncRuntimeDropRef(token.get().cast(), 1);
    }
}

/// `n` tasks that each count themselves started, then block in
/// `AwaitToken` on one gate token; [`GatedTasks::open`] completes the gate.
pub struct GatedTasks {
    n: usize,
    gate: TokenPtr,
    started: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    finished: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    all_finished: mpsc::Receiver<()>,
}

impl GatedTasks {
    /// Queues the `n` tasks.
    pub fn start(n: usize) -> GatedTasks {
        use mlir_async_runtime::abi::*;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let gate = TokenPtr::new(mlirAsyncRuntimeCreateToken());
        let started = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicUsize::new(0));
        let (tx, all_finished) = mpsc::channel();
        for _ in 0..n {
            // SAFETY: each task owns one reference to the gate.
            unsafe { mlirAsyncRuntimeAddRef(gate.get().cast(), 1) };
            let (started, finished, tx) = (Arc::clone(&started), Arc::clone(&finished), tx.clone());
            let (h, r) = task(move || unsafe {
                started.fetch_add(1, Ordering::SeqCst);
                mlirAsyncRuntimeAwaitToken(gate.get());
                mlirAsyncRuntimeDropRef(gate.get().cast(), 1);
                if finished.fetch_add(1, Ordering::SeqCst) + 1 == n {
                    let _ = tx.send(());
                }
            });
            mlirAsyncRuntimeExecute(h, r);
        }
        GatedTasks { n, gate, started, finished, all_finished }
    }

    /// Waits until every task has started (and so is blocked on the gate),
    /// for at most `limit`; false, with the count, if they did not.
    pub fn wait_all_started(&self, limit: Duration) -> Result<(), usize> {
        let deadline = Instant::now() + limit;
        loop {
            let started = self.started.load(std::sync::atomic::Ordering::SeqCst);
            if started >= self.n {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(started);
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Opens the gate: the producer's reference, then the creator's.
    pub fn open(&self) {
        // SAFETY: both references are ours, dropped once.
        unsafe {
            mlir_async_runtime::abi::mlirAsyncRuntimeEmplaceToken(self.gate.get());
            mlir_async_runtime::abi::mlirAsyncRuntimeDropRef(self.gate.get().cast(), 1);
        }
    }

    /// Tasks that finished so far.
    pub fn finished(&self) -> usize {
        self.finished.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits for the last task to finish, for at most `limit`.
    pub fn wait_all_finished(&self, limit: Duration) -> bool {
        self.all_finished.recv_timeout(limit).is_ok()
    }

    /// A gate to move into a thread that opens it.
    pub fn gate(&self) -> TokenPtr {
        self.gate
    }
}

/// Waits for child `pid` for at most `limit`; kills it and returns `None`
/// if it hangs, else its wait status.
pub fn wait_child(pid: libc::pid_t, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    let mut status = 0;
    loop {
        // SAFETY: our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return Some(status);
        }
        if Instant::now() >= deadline {
            dump_stacks(pid);
            // SAFETY: our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Prints every thread's stack of the hung process `pid` on stderr, where
/// gdb is installed (the set-up installs it): a hang in CI then says where
/// it hung.
fn dump_stacks(pid: libc::pid_t) {
    let gdb = std::path::Path::new("/usr/bin/gdb");
    if !gdb.exists() {
        return;
    }
    eprintln!("---- stacks of hung process {pid} ----");
    let _ = std::process::Command::new(gdb)
        .args(["-p", &pid.to_string(), "-batch", "-nx", "-ex", "thread apply all bt"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::inherit())
        .status();
    eprintln!("---- end of stacks of {pid} ----");
}

/// Waits for `n` signals, failing the test if they do not come in time.
pub fn expect_signals(rx: &mpsc::Receiver<()>, n: usize) {
    for i in 0..n {
        rx.recv_timeout(TIMEOUT)
            .unwrap_or_else(|_| panic!("only {i} of {n} signals arrived"));
    }
}

/// The outcome of a scenario run in a child process.
pub struct ChildRun {
    pub status: Option<std::process::ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl ChildRun {
    /// True when the child exited with code 0 in time.
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// A description for assertion messages.
    pub fn describe(&self) -> String {
        let status = match self.status {
            None => "hung (killed after the time limit)".to_string(),
            Some(s) => format!("{s}"),
        };
        format!("{status}\n--- stdout\n{}\n--- stderr\n{}", self.stdout, self.stderr)
    }
}

/// Runs the test named `child_test` of this test binary in a child process
/// with `env` set (the test reads its scenario from there), killing it
/// after `limit`. Scenarios that can hang, crash or need a fresh process
/// (worker counts are read once per runtime) run this way.
pub fn run_child(child_test: &str, env: &[(&str, &str)], limit: Duration) -> ChildRun {
    run_child_with(child_test, env, limit, |_| {})
}

/// [`run_child`], with `configure` given the command before it spawns (a
/// resource limit set in the child, say).
pub fn run_child_with(
    child_test: &str,
    env: &[(&str, &str)],
    limit: Duration,
    configure: impl FnOnce(&mut std::process::Command),
) -> ChildRun {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", child_test, "--nocapture", "--test-threads=1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    configure(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    ChildRun { status, stdout: out_reader.join().unwrap(), stderr: err_reader.join().unwrap() }
}
