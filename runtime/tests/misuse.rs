//! Misuse the ABI cannot report: each case runs in a child process (this
//! test binary again, selecting the case through an environment variable)
//! and must abort (SIGABRT) after exactly one line on stderr:
//! `mlir_async_runtime: <call>: <what>` (src/sync/misuse.rs, README).

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use mlir_async_runtime::abi::*;

const CASE_ENV: &str = "MLIR_ASYNC_RUNTIME_MISUSE_CASE";

/// Every case: its name, the line it must print, and the misuse itself.
const CASES: &[(&str, &str, fn())] = &[
    (
        "token-emplaced-twice",
        "mlir_async_runtime: mlirAsyncRuntimeEmplaceToken: token completed twice",
        || unsafe {
            let token = mlirAsyncRuntimeCreateToken();
            mlirAsyncRuntimeAddRef(token.cast(), 1); // keep it alive
            mlirAsyncRuntimeEmplaceToken(token);
            mlirAsyncRuntimeEmplaceToken(token);
        },
    ),
    (
        "token-error-after-emplace",
        "mlir_async_runtime: mlirAsyncRuntimeSetTokenError: token completed twice",
        || unsafe {
            let token = mlirAsyncRuntimeCreateToken();
            mlirAsyncRuntimeAddRef(token.cast(), 1);
            mlirAsyncRuntimeEmplaceToken(token);
            mlirAsyncRuntimeSetTokenError(token);
        },
    ),
    (
        "value-emplaced-twice",
        "mlir_async_runtime: mlirAsyncRuntimeEmplaceValue: value completed twice",
        || unsafe {
            let value = mlirAsyncRuntimeCreateValue(8);
            mlirAsyncRuntimeAddRef(value.cast(), 1);
            mlirAsyncRuntimeEmplaceValue(value);
            mlirAsyncRuntimeEmplaceValue(value);
        },
    ),
    (
        "too-many-tokens-in-group",
        "mlir_async_runtime: mlirAsyncRuntimeAddTokenToGroup: more tokens added to a group than its size 1",
        || unsafe {
            let group = mlirAsyncRuntimeCreateGroup(1);
            mlirAsyncRuntimeAddTokenToGroup(mlirAsyncRuntimeCreateToken(), group);
            mlirAsyncRuntimeAddTokenToGroup(mlirAsyncRuntimeCreateToken(), group);
        },
    ),
    (
        "reference-count-below-zero",
        "mlir_async_runtime: mlirAsyncRuntimeDropRef: reference count dropped below zero",
        || unsafe {
            let token = mlirAsyncRuntimeCreateToken();
            mlirAsyncRuntimeDropRef(token.cast(), 3);
        },
    ),
    (
        "negative-drop-ref",
        "mlir_async_runtime: mlirAsyncRuntimeDropRef: negative reference count decrement",
        || unsafe {
            let token = mlirAsyncRuntimeCreateToken();
            mlirAsyncRuntimeDropRef(token.cast(), -1);
        },
    ),
    (
        "negative-add-ref",
        "mlir_async_runtime: mlirAsyncRuntimeAddRef: negative reference count increment",
        || unsafe { mlirAsyncRuntimeAddRef(mlirAsyncRuntimeCreateToken().cast(), -1) },
    ),
    (
        "null-object-add-ref",
        "mlir_async_runtime: mlirAsyncRuntimeAddRef: null object",
        || unsafe { mlirAsyncRuntimeAddRef(std::ptr::null_mut(), 1) },
    ),
    (
        "null-object-drop-ref",
        "mlir_async_runtime: mlirAsyncRuntimeDropRef: null object",
        || unsafe { mlirAsyncRuntimeDropRef(std::ptr::null_mut(), 1) },
    ),
    (
        "null-token-emplace",
        "mlir_async_runtime: mlirAsyncRuntimeEmplaceToken: null object",
        || unsafe { mlirAsyncRuntimeEmplaceToken(std::ptr::null_mut()) },
    ),
    (
        "null-token-await",
        "mlir_async_runtime: mlirAsyncRuntimeAwaitToken: null object",
        || unsafe { mlirAsyncRuntimeAwaitToken(std::ptr::null_mut()) },
    ),
    (
        "null-group-add-token",
        "mlir_async_runtime: mlirAsyncRuntimeAddTokenToGroup: null object",
        || unsafe {
            mlirAsyncRuntimeAddTokenToGroup(mlirAsyncRuntimeCreateToken(), std::ptr::null_mut());
        },
    ),
    (
        "null-value-storage",
        "mlir_async_runtime: mlirAsyncRuntimeGetValueStorage: null object",
        || unsafe {
            mlirAsyncRuntimeGetValueStorage(std::ptr::null_mut());
        },
    ),
    (
        "wrong-kind",
        "mlir_async_runtime: mlirAsyncRuntimeAwaitAllInGroup: expected a group, got a token",
        || unsafe { mlirAsyncRuntimeAwaitAllInGroup(mlirAsyncRuntimeCreateToken().cast()) },
    ),
    (
        "negative-group-size",
        "mlir_async_runtime: mlirAsyncRuntimeCreateGroup: negative group size",
        || {
            mlirAsyncRuntimeCreateGroup(-1);
        },
    ),
    (
        "negative-value-size",
        "mlir_async_runtime: mlirAsyncRuntimeCreateValue: negative value storage size",
        || {
            mlirAsyncRuntimeCreateValue(-8);
        },
    ),
    (
        "null-resume-function",
        "mlir_async_runtime: mlirAsyncRuntimeExecute: null resume function",
        || mlirAsyncRuntimeExecute(std::ptr::null_mut(), None),
    ),
    (
        "add-ref-overflow",
        "mlir_async_runtime: mlirAsyncRuntimeAddRef: reference count overflow",
        || unsafe {
            let token = mlirAsyncRuntimeCreateToken();
            mlirAsyncRuntimeAddRef(token.cast(), i64::MAX);
        },
    ),
    (
        "value-storage-allocation-fails",
        "mlir_async_runtime: mlirAsyncRuntimeCreateValue: cannot allocate 70368744177664 bytes of value storage",
        || {
            mlirAsyncRuntimeCreateValue(1 << 46);
        },
    ),
    (
        "token-used-after-free",
        "mlir_async_runtime: mlirAsyncRuntimeAddRef: object used after it was freed",
        || unsafe {
            let token = mlirAsyncRuntimeCreateToken();
            mlirAsyncRuntimeEmplaceToken(token);
            mlirAsyncRuntimeDropRef(token.cast(), 1);
            mlirAsyncRuntimeAddRef(token.cast(), 1);
        },
    ),
    (
        "value-used-after-free",
        "mlir_async_runtime: mlirAsyncRuntimeAwaitValue: object used after it was freed",
        || unsafe {
            let value = mlirAsyncRuntimeCreateValue(8);
            mlirAsyncRuntimeDropRef(value.cast(), 2);
            mlirAsyncRuntimeAwaitValue(value);
        },
    ),
    (
        "destroy-from-a-worker",
        "mlir_async_runtime: __mlir_execution_engine_destroy: called from inside a task",
        || {
            let (handle, resume) = common::task(|| __mlir_execution_engine_destroy());
            mlirAsyncRuntimeExecute(handle, resume);
            std::thread::sleep(std::time::Duration::from_secs(20));
        },
    ),
];

/// The child side: runs the case named in the environment, if any.
#[test]
fn misuse_child() {
    let Ok(name) = std::env::var(CASE_ENV) else { return };
    let (_, _, misuse) = CASES.iter().find(|(n, _, _)| *n == name).expect("unknown case");
    misuse();
    // Reaching this line means the runtime did not abort.
    std::process::exit(99);
}

#[test]
fn each_misuse_aborts_with_its_one_line_message() {
    let exe = std::env::current_exe().unwrap();
    let mut failures = Vec::new();
    for (name, line, _) in CASES {
        let out = Command::new(&exe)
            .args(["--exact", "misuse_child", "--nocapture", "--test-threads=1"])
            .env(CASE_ENV, name)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let ours: Vec<&str> =
            stderr.lines().filter(|l| l.starts_with("mlir_async_runtime:")).collect();
        if cfg!(mlir_async_asan) && line.ends_with("object used after it was freed") {
            // Under AddressSanitizer (`make sanitize-asan`) objects are
            // not recycled but freed (`object/recycle.rs`), so ASan reports
            // the use after free before the runtime's own check can: that
            // report is the detection here.
            if out.status.success() || !stderr.contains("ERROR: AddressSanitizer: heap-use-after-free") {
                failures.push(format!("{name}: expected AddressSanitizer's use-after-free report; stderr:\n{stderr}"));
            }
        } else if out.status.signal() != Some(libc::SIGABRT) {
            failures.push(format!("{name}: expected SIGABRT, got {:?}; stderr:\n{stderr}", out.status));
        } else if ours != [*line] {
            failures.push(format!("{name}: expected exactly {line:?}, got {ours:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
