/*
 * mlir-async-runtime: the C ABI of libmlir_async_runtime (a drop-in
 * replacement, in Rust, for MLIR's C++ async runtime).
 *
 * Plain C (C99 or later), usable from C++ too. The functions are those of
 * MLIR 19's mlir/ExecutionEngine/AsyncRuntime.h, with the same names and
 * types: code compiled from MLIR's `async` dialect calls them. Under C++17
 * or later this header declares them exactly as MLIR's header does (in
 * namespace mlir::runtime, extern "C", ValueStorage = std::byte *), so a
 * C++ file may include both headers.
 *
 * Beyond MLIR's functions it declares:
 *  - the runners' destroy hook, which an ahead-of-time program may call to
 *    drain and stop the runtime before it exits (see docs/aot.md: a process
 *    that exits without calling it gets the same teardown at exit);
 *  - our introspection functions, rust_mlir_async_runtime_* (see
 *    docs/introspection-abi.md); the C++ runtime does not have them.
 *
 * Link with `pkg-config --cflags --libs mlir-async-runtime` (shared) or
 * `pkg-config --cflags --libs mlir-async-runtime-static` (static).
 */
#ifndef MLIR_ASYNC_RUNTIME_ASYNCRUNTIME_H
#define MLIR_ASYNC_RUNTIME_ASYNCRUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
#if __cplusplus >= 201703L
#include <cstddef>
#endif
namespace mlir {
namespace runtime {
extern "C" {
#else
#include <stdbool.h>
#endif

/* ---- types ------------------------------------------------------------- */

/* Runtime objects of the `async.token`, `async.group` and `async.value`
 * types; opaque, reference counted. */
typedef struct AsyncToken AsyncToken;
typedef struct AsyncGroup AsyncGroup;
typedef struct AsyncValue AsyncValue;

/* The storage of an async value's payload, owned by the value. */
#if defined(__cplusplus) && __cplusplus >= 201703L
typedef std::byte *ValueStorage;
#else
typedef unsigned char *ValueStorage;
#endif

/* A task is an LLVM coroutine: a handle and the function that resumes it. */
typedef void *CoroHandle;
typedef void (*CoroResume)(void *);

/* A token, a group or a value. */
typedef void *RefCountedObjPtr;

/* ---- MLIR's async runtime API ------------------------------------------- */

/* Adds `count` references to a token, a value or a group. */
void mlirAsyncRuntimeAddRef(RefCountedObjPtr obj, int64_t count);

/* Drops `count` references; the object is freed when none is left. */
void mlirAsyncRuntimeDropRef(RefCountedObjPtr obj, int64_t count);

/* A new `async.token`, not ready, with one reference. */
AsyncToken *mlirAsyncRuntimeCreateToken(void);

/* A new `async.value` with `size` bytes of storage, not ready. */
AsyncValue *mlirAsyncRuntimeCreateValue(int64_t size);

/* A new, empty `async.group` that will hold `size` tokens or values. */
AsyncGroup *mlirAsyncRuntimeCreateGroup(int64_t size);

/* Adds a token to a group; returns the token's rank in the group. */
int64_t mlirAsyncRuntimeAddTokenToGroup(AsyncToken *token, AsyncGroup *group);

/* Make a token or a value ready (or an error) and run its awaiters. */
void mlirAsyncRuntimeEmplaceToken(AsyncToken *token);
void mlirAsyncRuntimeEmplaceValue(AsyncValue *value);
void mlirAsyncRuntimeSetTokenError(AsyncToken *token);
void mlirAsyncRuntimeSetValueError(AsyncValue *value);

/* True when the object is in the error state (a group: when any of its
 * members is). */
bool mlirAsyncRuntimeIsTokenError(AsyncToken *token);
bool mlirAsyncRuntimeIsValueError(AsyncValue *value);
bool mlirAsyncRuntimeIsGroupError(AsyncGroup *group);

/* Block the calling thread until the object is ready. */
void mlirAsyncRuntimeAwaitToken(AsyncToken *token);
void mlirAsyncRuntimeAwaitValue(AsyncValue *value);
void mlirAsyncRuntimeAwaitAllInGroup(AsyncGroup *group);

/* The storage of a value's payload. */
ValueStorage mlirAsyncRuntimeGetValueStorage(AsyncValue *value);

/* Runs resume(handle) on a worker thread of the runtime. */
void mlirAsyncRuntimeExecute(CoroHandle handle, CoroResume resume);

/* Runs resume(handle) on a worker thread once the object is ready. */
void mlirAsyncRuntimeAwaitTokenAndExecute(AsyncToken *token, CoroHandle handle,
                                          CoroResume resume);
void mlirAsyncRuntimeAwaitValueAndExecute(AsyncValue *value, CoroHandle handle,
                                          CoroResume resume);
void mlirAsyncRuntimeAwaitAllInGroupAndExecute(AsyncGroup *group,
                                               CoroHandle handle,
                                               CoroResume resume);

/* The number of worker threads. (Upstream's name has no `e` after
 * `Runtim`.) */
int64_t mlirAsyncRuntimGetNumWorkerThreads(void);

/* Prints the calling thread's id (for tests). */
void mlirAsyncRuntimePrintCurrentThreadId(void);

#ifdef __cplusplus
} /* extern "C" */
} /* namespace runtime */
} /* namespace mlir */
extern "C" {
#endif

/* ---- teardown ----------------------------------------------------------- */

/* The runners' destroy hook: waits for every task queued or running, joins
 * the worker threads, writes the trace and counters when they are on, and
 * reports objects still alive on stderr. The next runtime call starts a
 * fresh runtime. Not from a task. Optional: at process exit the same
 * teardown runs unless this was called (docs/aot.md). */
void __mlir_execution_engine_destroy(void);

/* ---- introspection (ours; docs/introspection-abi.md) --------------------- */

typedef struct {
  int64_t live_tokens;     /* tokens created and not yet freed */
  int64_t live_values;     /* values created and not yet freed */
  int64_t live_groups;     /* groups created and not yet freed */
  int64_t tasks_in_flight; /* 0 exactly when no task is queued or running (docs/introspection-abi.md) */
} RustMlirAsyncRuntimeStats;

/* Fills *out with a snapshot. Never creates the runtime. Any thread. */
void rust_mlir_async_runtime_stats(RustMlirAsyncRuntimeStats *out);

/* Blocks until no task is in flight or `timeout_ms` passed; true when the
 * runtime went idle. Never creates the runtime. */
bool rust_mlir_async_runtime_wait_idle(uint64_t timeout_ms);

/* Selects the schedule of every runtime instance started after the call,
 * overriding MLIR_ASYNC_RUNTIME_SCHEDULE: "random:SEED",
 * "pct:SEED[:DEPTH[:STEPS]]" (deterministic: one thread at a time, the
 * interleaving a function of the seed; docs/exploration.md) or "off"; NULL
 * goes back to the variable. 0, or -1 for a malformed spec (no change). */
int rust_mlir_async_runtime_select_schedule(const char *spec);

/* Scheduling steps of the current deterministic instance, or of the last
 * one destroyed; 0 when there was none. */
uint64_t rust_mlir_async_runtime_schedule_steps(void);

/* Tasks queued (Execute calls, fired continuations) by the last
 * deterministic instance destroyed; writes the tasks it ran to *run unless
 * run is NULL. The two differ exactly when that instance lost tasks (its
 * destroy then said so on stderr). 0 and 0 when there was none. */
uint64_t rust_mlir_async_runtime_schedule_tasks(uint64_t *run);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLIR_ASYNC_RUNTIME_ASYNCRUNTIME_H */
