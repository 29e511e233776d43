//! The runtime for Rust programs that JIT-compile MLIR themselves (with
//! `melior`, or MLIR's C API): its lifetime ([`Runtime`], [`RuntimeGuard`])
//! and its functions as `(name, address)` pairs ([`symbols`]) to register
//! in an execution engine.
//!
//! A program that links this crate has the runtime in its own binary, so
//! the engine needs no `.so` path: it binds the functions the compiled code
//! calls to the addresses registered, whatever other runtime the process
//! has loaded. With no library given, the engine calls no init or destroy
//! hook either: the program starts and shuts the runtime down itself.
//!
//! ```
//! use mlir_async_runtime::{symbols, Runtime};
//!
//! let runtime = Runtime::start().guard(); // shuts down when dropped
//! for (name, address) in symbols() {
//!     // With melior: unsafe { engine.register_symbol(name, address) };
//!     assert!(name.starts_with("mlirAsyncRunt") && !address.is_null());
//! }
//! assert_eq!(symbols().len(), 23);
//! runtime.shutdown().expect("no token, value or group leaked");
//! ```

use std::fmt;
use std::time::Duration;

use crate::abi::introspection::{self, RuntimeStats};
use crate::abi;
use crate::instance;
use crate::object::live;

/// Every function that compiled code calls, as `(name, address)`: the
/// upstream names (`mlirAsyncRuntimeCreateToken`, ...,
/// `mlirAsyncRuntimGetNumWorkerThreads`), each with the address of this
/// crate's implementation. Register them in the engine before the first
/// call into compiled code.
///
/// ```
/// let names: Vec<&str> = mlir_async_runtime::symbols().map(|(name, _)| name).collect();
/// assert!(names.contains(&"mlirAsyncRuntimeAwaitTokenAndExecute"));
/// ```
pub fn symbols() -> impl ExactSizeIterator<Item = (&'static str, *mut ())> + Clone {
    abi::EXPORTED.into_iter().map(|(name, address)| (name, address.cast_mut()))
}

/// The process's async runtime: the one instance that compiled code and
/// the runner hooks use, started lazily by the first task and replaced by
/// a fresh one after each shutdown.
///
/// A `Runtime` is a view of that instance, not an owner: shutting down
/// through any view (or through an engine's destroy hook, if the program
/// also loads the runtime's library) ends the instance for everyone, and
/// the next task starts a fresh one.
#[derive(Clone, Copy, Debug)]
pub struct Runtime {
    _view: (),
}

impl Runtime {
    /// Starts the instance if none runs (tasks would start it anyway; this
    /// moves the cost of starting the worker threads out of the first call).
    pub fn start() -> Runtime {
        instance::start();
        Runtime { _view: () }
    }

    /// True while an instance runs.
    pub fn is_running() -> bool {
        instance::is_running()
    }

    /// Shuts down on drop.
    pub fn guard(self) -> RuntimeGuard {
        RuntimeGuard { armed: true }
    }

    /// How many tasks the instance runs at once (started if none runs):
    /// `MLIR_ASYNC_RUNTIME_WORKERS`, or the machine's parallelism (its
    /// workers, one fewer by default, and a thread that waits).
    pub fn workers(&self) -> usize {
        instance::start()
    }

    /// Live objects and tasks in flight now.
    pub fn stats(&self) -> RuntimeStats {
        introspection::stats()
    }

    /// Blocks until no task is queued or running, or `timeout` passed
    /// (`None`: no limit); true when idle. Never starts an instance.
    pub fn wait_idle(&self, timeout: Option<Duration>) -> bool {
        instance::wait_idle(timeout)
    }

    /// What the runners' destroy hook does: waits for every task queued or
    /// running (also those other threads queue meanwhile), joins the
    /// runtime's threads, writes the trace and counters if asked for
    /// (`MLIR_ASYNC_RUNTIME_TRACE`, `MLIR_ASYNC_RUNTIME_STATS`), and reports
    /// the tokens, values and groups still alive (one line on stderr, and
    /// the error here). The next task starts a fresh instance.
    ///
    /// Objects are process-wide: a handle still held anywhere in the
    /// program counts as a leak here.
    pub fn shutdown(self) -> Result<(), ShutdownError> {
        if instance::in_task() {
            return Err(ShutdownError::OnRuntimeThread);
        }
        instance::destroy("Runtime::shutdown");
        let live = live::live_objects();
        if live.total() != 0 {
            return Err(ShutdownError::Leaked(Leaks { tokens: live.tokens, values: live.values, groups: live.groups }));
        }
        Ok(())
    }
}

/// Shuts the runtime down when dropped ([`Runtime::shutdown`]; a leak is
/// reported on stderr). Call [`RuntimeGuard::shutdown`] to get the result.
#[must_use = "dropping the guard shuts the runtime down at once"]
#[derive(Debug)]
pub struct RuntimeGuard {
    armed: bool,
}

impl RuntimeGuard {
    /// Shuts down now and says whether anything leaked.
    pub fn shutdown(mut self) -> Result<(), ShutdownError> {
        self.armed = false;
        Runtime { _view: () }.shutdown()
    }

    /// The runtime, for its statistics and worker count.
    pub fn runtime(&self) -> Runtime {
        Runtime { _view: () }
    }
}

impl Drop for RuntimeGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Err(ShutdownError::OnRuntimeThread) = (Runtime { _view: () }).shutdown() {
            crate::sync::misuse::warn("RuntimeGuard dropped inside a task: not shut down");
        }
    }
}

/// Tokens, values and groups alive after a shutdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaks {
    pub tokens: i64,
    pub values: i64,
    pub groups: i64,
}

/// Why [`Runtime::shutdown`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownError {
    /// Called from inside a task, on any thread (a runtime thread, or the
    /// task stack of a thread that waits outside the pool): the shutdown
    /// would wait for that task. Nothing was done.
    OnRuntimeThread,
    /// The runtime shut down, but objects are still alive: references
    /// that compiled code or a handle never dropped.
    Leaked(Leaks),
}

impl fmt::Display for ShutdownError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShutdownError::OnRuntimeThread => f.write_str("the runtime cannot be shut down from inside one of its tasks"),
            ShutdownError::Leaked(l) => write!(
                f,
                "still alive after shutdown: {} token(s), {} value(s), {} group(s)",
                l.tokens, l.values, l.groups
            ),
        }
    }
}

impl std::error::Error for ShutdownError {}
