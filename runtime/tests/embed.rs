//! The embedding API: `Runtime` start and shutdown with the destroy hook's
//! semantics, the guard, and `symbols()` against the exports of this
//! library and of the C++ runtime.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use mlir_async_runtime::abi::*;
use mlir_async_runtime::{stats, symbols, AsyncToken, Leaks, Runtime, ShutdownError};

mod common;

/// Shutdowns end the process-wide instance: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The `mlirAsyncRuntim*` names a shared library exports.
fn exported_names(lib: &std::path::Path) -> BTreeSet<String> {
    let out = Command::new("nm").args(["-D", "--defined-only"]).arg(lib).output().expect("cannot run nm");
    assert!(out.status.success(), "nm -D {} failed", lib.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|name| name.starts_with("mlirAsyncRuntim"))
        .map(str::to_owned)
        .collect()
}

fn our_library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().and_then(|deps| deps.parent()).unwrap().join("libmlir_async_runtime.so");
    assert!(lib.exists(), "{} not built", lib.display());
    lib
}

#[test]
fn symbols_are_every_function_the_library_exports_for_compiled_code() {
    let listed: BTreeSet<String> = symbols().map(|(name, _)| name.to_owned()).collect();
    assert_eq!(listed.len(), symbols().len(), "a name is listed twice");
    assert_eq!(listed, exported_names(&our_library()), "symbols() and the cdylib's exports differ");
    // LLVM_PREFIX at run time, else the one the library was built with.
    let prefix = std::env::var_os("LLVM_PREFIX")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(env!("MLIR_ASYNC_LLVM_PREFIX")), PathBuf::from);
    let cxx = prefix.join("lib/libmlir_async_runtime.so");
    assert!(cxx.exists(), "the C++ runtime of MLIR 19 is missing: {} (make setup)", cxx.display());
    assert_eq!(listed, exported_names(&cxx), "symbols() and the C++ runtime's exports differ");
    let addresses: BTreeSet<usize> = symbols().map(|(_, address)| address as usize).collect();
    assert_eq!(addresses.len(), symbols().len(), "two names share an address");
}

/// The addresses are the functions: called through them, as JIT-compiled
/// code calls them, they create, complete and free a token.
#[test]
fn the_registered_addresses_are_callable() {
    let _serial = serial();
    let address = |wanted: &str| symbols().find(|(name, _)| *name == wanted).unwrap().1;
    type Create = extern "C" fn() -> *mut std::ffi::c_void;
    type WithToken = unsafe extern "C" fn(*mut std::ffi::c_void) -> bool;
    type Unary = unsafe extern "C" fn(*mut std::ffi::c_void);
    type DropRef = unsafe extern "C" fn(*mut std::ffi::c_void, i64);
    // SAFETY: each address is the function of that name, with the ABI's
    // signature (runtime/include/mlir-async-runtime/AsyncRuntime.h).
    unsafe {
        let create: Create = std::mem::transmute(address("mlirAsyncRuntimeCreateToken"));
        let set_error: Unary = std::mem::transmute(address("mlirAsyncRuntimeSetTokenError"));
        let is_error: WithToken = std::mem::transmute(address("mlirAsyncRuntimeIsTokenError"));
        let drop_ref: DropRef = std::mem::transmute(address("mlirAsyncRuntimeDropRef"));
        let before = stats().live_tokens;
        let token = create();
        assert_eq!(stats().live_tokens, before + 1);
        set_error(token);
        assert!(is_error(token));
        drop_ref(token, 1);
        assert_eq!(stats().live_tokens, before);
    }
}

#[test]
fn shutdown_drains_reports_leaks_and_a_later_use_starts_a_fresh_instance() {
    let _serial = serial();
    let runtime = Runtime::start();
    assert!(Runtime::is_running());
    assert!(runtime.workers() >= 1);
    // A task still running at shutdown is drained, not lost.
    let (tx, rx) = common::signal();
    let (handle, resume) = common::task(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        tx.send(()).unwrap();
    });
    mlirAsyncRuntimeExecute(handle, resume);
    // A token whose handle is still alive at shutdown is a leak.
    let before = stats();
    let raw = mlirAsyncRuntimeCreateToken();
    // SAFETY: one reference for the handle.
    let token = unsafe { AsyncToken::from_raw(raw.cast()) };
    let result = runtime.shutdown();
    assert!(rx.try_recv().is_ok(), "shutdown returned before the task ran");
    assert!(!Runtime::is_running());
    assert_eq!(
        result,
        Err(ShutdownError::Leaked(Leaks {
            tokens: before.live_tokens + 1,
            values: before.live_values,
            groups: before.live_groups
        }))
    );
    assert!(result.unwrap_err().to_string().starts_with("still alive after shutdown: "));
    // A later task starts a fresh instance.
    let (tx, rx) = common::signal();
    let (handle, resume) = common::task(move || tx.send(()).unwrap());
    mlirAsyncRuntimeExecute(handle, resume);
    common::expect_signals(&rx, 1);
    assert!(Runtime::is_running());
    // SAFETY: the producer's reference.
    unsafe { mlirAsyncRuntimeEmplaceToken(raw) };
    drop(token);
    assert_eq!(Runtime::start().shutdown(), Ok(()));
}

#[test]
fn the_guard_shuts_down_when_dropped() {
    let _serial = serial();
    {
        let guard = Runtime::start().guard();
        assert!(Runtime::is_running());
        assert!(guard.runtime().wait_idle(Some(common::TIMEOUT)));
    }
    assert!(!Runtime::is_running());
}

#[test]
fn shutdown_on_a_runtime_thread_is_refused() {
    let _serial = serial();
    let (tx, rx) = std::sync::mpsc::channel();
    let (handle, resume) = common::task(move || tx.send(Runtime::start().shutdown()).unwrap());
    mlirAsyncRuntimeExecute(handle, resume);
    assert_eq!(rx.recv_timeout(common::TIMEOUT).unwrap(), Err(ShutdownError::OnRuntimeThread));
    assert_eq!(Runtime::start().shutdown(), Ok(()));
}
