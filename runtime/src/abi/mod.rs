//! The exported C ABI: thin adapters from raw pointers to the safe(r)
//! Rust in the other modules. Names and signatures are MLIR 19's
//! (`mlir/ExecutionEngine/AsyncRuntime.h`), plus the runners' init/destroy
//! hooks and our own introspection functions (`rust_mlir_async_runtime_*`).
//!
//! Nothing unwinds out of these functions: every misuse aborts with one
//! line naming the call, and since Rust 1.81 a panic that reaches an
//! `extern "C"` boundary aborts the process instead of unwinding into C.

pub mod introspection;
pub(crate) mod symbol_map;
pub(crate) mod thread_id;

use std::ffi::{c_char, c_void, CStr};
use std::time::Duration;

use crate::abi::introspection::RuntimeStats;
use crate::base::task::{Origin, ResumeFn, Task};
use crate::instance;
use crate::object::completion::{self, Outcome};
use crate::object::group::Group;
use crate::object::header::Header;
use crate::object::token::Token;
use crate::object::value::Value;

type Resume = Option<ResumeFn>;

// ---- reference counting ---------------------------------------------------

/// # Safety
/// `obj` is a live token, value or group on which the caller holds a
/// reference.
#[no_mangle]
pub unsafe extern "C" fn mlirAsyncRuntimeAddRef(obj: *mut c_void, count: i64) {
    const CALL: &str = "mlirAsyncRuntimeAddRef";
    // SAFETY: the caller's reference keeps the object alive; the kind check
    // rejects null and foreign pointers.
    unsafe { (*checked_header(obj, CALL)).add_ref(count, CALL) };
}

/// # Safety
/// `obj` is a live object on which the caller holds `count` references; it
/// must not be used after they are dropped.
#[no_mangle]
pub unsafe extern "C" fn mlirAsyncRuntimeDropRef(obj: *mut c_void, count: i64) {
    const CALL: &str = "mlirAsyncRuntimeDropRef";
    // SAFETY: as above; `drop_ref` is the caller's last use.
    unsafe { Header::drop_ref(checked_header(obj, CALL), count, CALL) };
}

/// The header of the object `obj`, checked to be a live token, value or
/// group (aborts naming `call` otherwise).
///
/// # Safety
/// `obj` is null or points to readable memory of at least a header.
#[inline(always)]
unsafe fn checked_header(obj: *mut c_void, call: &str) -> *mut Header {
    let header = obj.cast::<Header>();
    // SAFETY: forwarded contract.
    unsafe { Header::check_live(header, call) };
    header
}

// ---- creation -----------------------------------------------------------

#[no_mangle]
pub extern "C" fn mlirAsyncRuntimeCreateToken() -> *mut Token {
    let token = Token::create();
    // SAFETY: a fresh token, ours until returned.
    instance::object_created(unsafe { token.as_ref() }.completion(), true);
    token.as_ptr()
}

#[no_mangle]
pub extern "C" fn mlirAsyncRuntimeCreateValue(size: i64) -> *mut Value {
    let value = Value::create(size, "mlirAsyncRuntimeCreateValue");
    // SAFETY: a fresh value, ours until returned.
    instance::object_created(unsafe { value.as_ref() }.completion(), false);
    value.as_ptr()
}

#[no_mangle]
pub extern "C" fn mlirAsyncRuntimeCreateGroup(size: i64) -> *mut Group {
    Group::create(size, "mlirAsyncRuntimeCreateGroup").as_ptr()
}

/// # Safety
/// `token` and `group` are live objects on which the caller holds references.
#[no_mangle]
pub unsafe extern "C" fn mlirAsyncRuntimeAddTokenToGroup(token: *mut Token, group: *mut Group) -> i64 {
    const CALL: &str = "mlirAsyncRuntimeAddTokenToGroup";
    // SAFETY: checked pointers, kept alive by the caller's references.
    let (token, group) = unsafe { (Token::from_abi(token, CALL), Group::from_abi(group, CALL)) };
    instance::token_added_to_group(token.completion(), group.completion());
    group.add_token(token, CALL)
}

// ---- completion ---------------------------------------------------------

/// `mlirAsyncRuntimeEmplace*` and `Set*Error`, for one kind and outcome:
/// checks the object, then completes it, a scheduling point under a
/// deterministic schedule.
macro_rules! complete {
    ($name:ident, $ty:ident, $outcome:expr) => {
        #[doc = concat!("# Safety\n`object` is a live, pending ", stringify!($ty), "; the call releases the")]
        #[doc = "producer's reference, so the caller must not use it afterwards unless it"]
        #[doc = "holds another."]
        #[no_mangle]
        pub unsafe extern "C" fn $name(object: *mut $ty) {
            // SAFETY: the caller's live object (the check rejects a foreign one).
            unsafe { $ty::from_abi(object, stringify!($name)) };
            // SAFETY: checked above; completed once, and not used afterwards.
            instance::completing(|| unsafe { completion::complete_and_release(object, $outcome, stringify!($name)) });
        }
    };
}

complete!(mlirAsyncRuntimeEmplaceToken, Token, Outcome::Available);
complete!(mlirAsyncRuntimeSetTokenError, Token, Outcome::Error);
complete!(mlirAsyncRuntimeEmplaceValue, Value, Outcome::Available);
complete!(mlirAsyncRuntimeSetValueError, Value, Outcome::Error);

// ---- queries --------------------------------------------------------------

/// # Safety
/// `token` is live, and the caller holds a reference.
#[no_mangle]
pub unsafe extern "C" fn mlirAsyncRuntimeIsTokenError(token: *mut Token) -> bool {
    // SAFETY: checked pointer, kept alive by the caller.
    let token = unsafe { Token::from_abi(token, "mlirAsyncRuntimeIsTokenError") };
    token.completion().state() == Some(Outcome::Error)
}

/// # Safety
/// `value` is live, and the caller holds a reference.
#[no_mangle]
pub unsafe extern "C" fn mlirAsyncRuntimeIsValueError(value: *mut Value) -> bool {
    // SAFETY: as above.
    let value = unsafe { Value::from_abi(value, "mlirAsyncRuntimeIsValueError") };
    value.completion().state() == Some(Outcome::Error)
}

/// # Safety
/// `group` is live, and the caller holds a reference.
#[no_mangle]
pub unsafe extern "C" fn mlirAsyncRuntimeIsGroupError(group: *mut Group) -> bool {
    // SAFETY: as above.
    unsafe { Group::from_abi(group, "mlirAsyncRuntimeIsGroupError") }.is_error()
}

/// # Safety
/// `value` is live, and the caller holds a reference.
#[no_mangle]
pub unsafe extern "C" fn mlirAsyncRuntimeGetValueStorage(value: *mut Value) -> *mut u8 {
    // SAFETY: as above.
    unsafe { Value::from_abi(value, "mlirAsyncRuntimeGetValueStorage") }.storage()
}

// ---- blocking waits -------------------------------------------------------

/// # Safety
/// `token` is live, and the caller holds a reference.
#[no_mangle]
pub unsafe extern "C" fn mlirAsyncRuntimeAwaitToken(token: *mut Token) {
    // SAFETY: as above.
    instance::wait(unsafe { Token::from_abi(token, "mlirAsyncRuntimeAwaitToken") }.completion());
}

/// # Safety
/// `value` is live, and the caller holds a reference.
#[no_mangle]
pub unsafe extern "C" fn mlirAsyncRuntimeAwaitValue(value: *mut Value) {
    // SAFETY: as above.
    instance::wait(unsafe { Value::from_abi(value, "mlirAsyncRuntimeAwaitValue") }.completion());
}

/// # Safety
/// `group` is live, and the caller holds a reference.
#[no_mangle]
pub unsafe extern "C" fn mlirAsyncRuntimeAwaitAllInGroup(group: *mut Group) {
    // SAFETY: as above.
    instance::wait(unsafe { Group::from_abi(group, "mlirAsyncRuntimeAwaitAllInGroup") }.completion());
}

// ---- running tasks --------------------------------------------------------

#[no_mangle]
pub extern "C" fn mlirAsyncRuntimeExecute(handle: *mut c_void, resume: Resume) {
    instance::make_ready(Task::new(handle, resume, Origin::Execute, "mlirAsyncRuntimeExecute"));
}

/// `mlirAsyncRuntimeAwait*AndExecute`, for one kind: checks the object,
/// then resumes the coroutine once it completes.
macro_rules! await_and_execute {
    ($name:ident, $ty:ident, $origin:expr) => {
        #[doc = concat!("# Safety\n`object` is a live ", stringify!($ty), ", and the caller holds a reference until `resume` runs.")]
        #[no_mangle]
        pub unsafe extern "C" fn $name(object: *mut $ty, handle: *mut c_void, resume: Resume) {
            // SAFETY: as above.
            let completion = unsafe { $ty::from_abi(object, stringify!($name)) }.completion();
            instance::resume_when_complete(completion, Task::new(handle, resume, $origin, stringify!($name)));
        }
    };
}

await_and_execute!(mlirAsyncRuntimeAwaitTokenAndExecute, Token, Origin::AfterToken);
await_and_execute!(mlirAsyncRuntimeAwaitValueAndExecute, Value, Origin::AfterValue);
await_and_execute!(mlirAsyncRuntimeAwaitAllInGroupAndExecute, Group, Origin::AfterGroup);

/// The real upstream name has no `e` after `Runtim`.
#[no_mangle]
pub extern "C" fn mlirAsyncRuntimGetNumWorkerThreads() -> i64 {
    instance::num_workers() as i64
}

#[no_mangle]
pub extern "C" fn mlirAsyncRuntimePrintCurrentThreadId() {
    thread_id::print_current_thread_id();
}

// ---- the functions compiled code calls ----------------------------------

/// Every function that compiled code calls, by its upstream name (the 23
/// `mlirAsyncRuntim*` exports of the C++ runtime): the one list that the
/// init hooks put into the engine's symbol map and that
/// `embed::symbols` hands to embedders. `runtime/tests/embed.rs`
/// (`symbols_are_every_function_the_library_exports_for_compiled_code`)
/// checks it against `nm -D` of this library and of the C++ runtime.
pub(crate) const EXPORTED: [(&str, *const ()); 23] = [
    ("mlirAsyncRuntimeAddRef", mlirAsyncRuntimeAddRef as *const ()),
    ("mlirAsyncRuntimeDropRef", mlirAsyncRuntimeDropRef as *const ()),
    ("mlirAsyncRuntimeCreateToken", mlirAsyncRuntimeCreateToken as *const ()),
    ("mlirAsyncRuntimeCreateValue", mlirAsyncRuntimeCreateValue as *const ()),
    ("mlirAsyncRuntimeCreateGroup", mlirAsyncRuntimeCreateGroup as *const ()),
    ("mlirAsyncRuntimeAddTokenToGroup", mlirAsyncRuntimeAddTokenToGroup as *const ()),
    ("mlirAsyncRuntimeEmplaceToken", mlirAsyncRuntimeEmplaceToken as *const ()),
    ("mlirAsyncRuntimeSetTokenError", mlirAsyncRuntimeSetTokenError as *const ()),
    ("mlirAsyncRuntimeEmplaceValue", mlirAsyncRuntimeEmplaceValue as *const ()),
    ("mlirAsyncRuntimeSetValueError", mlirAsyncRuntimeSetValueError as *const ()),
    ("mlirAsyncRuntimeIsTokenError", mlirAsyncRuntimeIsTokenError as *const ()),
    ("mlirAsyncRuntimeIsValueError", mlirAsyncRuntimeIsValueError as *const ()),
    ("mlirAsyncRuntimeIsGroupError", mlirAsyncRuntimeIsGroupError as *const ()),
    ("mlirAsyncRuntimeGetValueStorage", mlirAsyncRuntimeGetValueStorage as *const ()),
    ("mlirAsyncRuntimeAwaitToken", mlirAsyncRuntimeAwaitToken as *const ()),
    ("mlirAsyncRuntimeAwaitValue", mlirAsyncRuntimeAwaitValue as *const ()),
    ("mlirAsyncRuntimeAwaitAllInGroup", mlirAsyncRuntimeAwaitAllInGroup as *const ()),
    ("mlirAsyncRuntimeExecute", mlirAsyncRuntimeExecute as *const ()),
    ("mlirAsyncRuntimeAwaitTokenAndExecute", mlirAsyncRuntimeAwaitTokenAndExecute as *const ()),
    ("mlirAsyncRuntimeAwaitValueAndExecute", mlirAsyncRuntimeAwaitValueAndExecute as *const ()),
    ("mlirAsyncRuntimeAwaitAllInGroupAndExecute", mlirAsyncRuntimeAwaitAllInGroupAndExecute as *const ()),
    ("mlirAsyncRuntimGetNumWorkerThreads", mlirAsyncRuntimGetNumWorkerThreads as *const ()),
    ("mlirAsyncRuntimePrintCurrentThreadId", mlirAsyncRuntimePrintCurrentThreadId as *const ()),
];

// ---- runner hooks ---------------------------------------------------------
//
// `init` receives the engine's `llvm::StringMap<void *>&` and fills it with
// `EXPORTED`, as the C++ runtime does, so that the compiled code calls this
// library whatever else the process has loaded (`symbol_map`).

// The init hooks need to know who called them (the engine, whose LLVM's
// `StringMap` functions fill the map: `symbol_map`). On x86-64 each hook is
// a two-instruction trampoline that passes its return address on to the
// Rust function as a second argument and jumps there (a tail call: the
// callee returns straight to the engine); elsewhere the caller is found by
// walking the stack, which costs about half a MiB of resident memory
// (the unwinder and the unwind tables it reads).

/// An init hook, `$name`, and `$export`, the function it calls told its
/// caller's return address: that fills the engine's map.
macro_rules! init_hook {
    ($(#[$doc:meta])* $name:ident, $export:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `export_symbols` is the `llvm::StringMap<void *>&` the engine
        /// passes.
        #[cfg(target_arch = "x86_64")]
        #[no_mangle]
        #[unsafe(naked)]
        pub unsafe extern "C" fn $name(export_symbols: *mut c_void) {
            // The first argument stays in rdi; the return address, at [rsp]
            // on entry, goes to rsi, the second.
            std::arch::naked_asm!("mov rsi, qword ptr [rsp]", "jmp {init}", init = sym $export);
        }

        $(#[$doc])*
        ///
        /// # Safety
        /// `export_symbols` is the `llvm::StringMap<void *>&` the engine
        /// passes.
        #[cfg(not(target_arch = "x86_64"))]
        #[no_mangle]
        pub unsafe extern "C" fn $name(export_symbols: *mut c_void) {
            // SAFETY: forwarded contract.
            unsafe { $export(export_symbols, std::ptr::null()) }
        }

        /// The init hook told its caller's return address (null when
        /// unknown).
        ///
        /// # Safety
        /// As the init hook.
        unsafe extern "C" fn $export(export_symbols: *mut c_void, caller: *const c_void) {
            // A runner loads the library before it compiles the program: the
            // registration for the gate's light fences (a grace period in a
            // process with threads) runs meanwhile, not in the first calls.
            crate::sync::asymmetric::prepare();
            // SAFETY: forwarded contract.
            unsafe { symbol_map::export(export_symbols, &EXPORTED, stringify!($name), caller) };
        }
    };
}

init_hook!(
    /// MLIR 17+'s init hook: registers the runtime's functions in the
    /// engine's symbol map.
    __mlir_execution_engine_init,
    engine_init
);

#[no_mangle]
pub extern "C" fn __mlir_execution_engine_destroy() {
    instance::destroy("__mlir_execution_engine_destroy");
}

init_hook!(
    /// MLIR 14-16's name for the init hook.
    __mlir_runner_init,
    runner_init
);

/// MLIR 14-16's name for the destroy hook.
#[no_mangle]
pub extern "C" fn __mlir_runner_destroy() {
    instance::destroy("__mlir_runner_destroy");
}

// ---- introspection (ours; see docs/introspection-abi.md) --------------------

/// # Safety
/// `out` points to writable `RuntimeStats`; a null `out` is misuse, and
/// aborts with one line naming the call.
#[no_mangle]
pub unsafe extern "C" fn rust_mlir_async_runtime_stats(out: *mut RuntimeStats) {
    if out.is_null() {
        crate::sync::misuse::abort_misuse("rust_mlir_async_runtime_stats", "null output pointer");
    }
    // SAFETY: non-null, and the caller promises it is writable.
    unsafe { out.write(introspection::stats()) };
}

#[no_mangle]
pub extern "C" fn rust_mlir_async_runtime_wait_idle(timeout_ms: u64) -> bool {
    instance::wait_idle(Some(Duration::from_millis(timeout_ms)))
}

/// Selects the schedule of the runtime instances started after this call
/// (`random:SEED`, `pct:SEED[:DEPTH[:STEPS]]`, `off`), overriding
/// `MLIR_ASYNC_RUNTIME_SCHEDULE`; null goes back to the variable. Returns 0,
/// or -1 for a malformed spec (nothing changes).
///
/// # Safety
/// `spec` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn rust_mlir_async_runtime_select_schedule(spec: *const c_char) -> i32 {
    if spec.is_null() {
        let _ = introspection::select_schedule(None);
        return 0;
    }
    // SAFETY: per the contract.
    let text = unsafe { CStr::from_ptr(spec) }.to_string_lossy();
    match introspection::select_schedule(Some(&text)) {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

/// Scheduling steps (decisions between two or more candidates) of the
/// current deterministic instance, or else of the last one destroyed; 0
/// when there was none.
#[no_mangle]
pub extern "C" fn rust_mlir_async_runtime_schedule_steps() -> u64 {
    introspection::schedule_steps()
}

/// Tasks queued and tasks run by the last deterministic instance
/// destroyed (0 and 0 when there was none): different exactly when that
/// instance lost tasks. Returns the queued count; writes the run count to
/// `*run` unless it is null.
///
/// # Safety
/// `run` is null or valid for a write of a `u64`.
#[no_mangle]
pub unsafe extern "C" fn rust_mlir_async_runtime_schedule_tasks(run: *mut u64) -> u64 {
    let (queued, ran) = introspection::schedule_task_counts();
    if !run.is_null() {
        // SAFETY: per the contract.
        unsafe { run.write(ran) };
    }
    queued
}
