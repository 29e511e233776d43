/* The installed header is plain C: compiled with -std=c99 -pedantic
 * -Werror by scripts/corpus/aot_test.sh. Every function it declares is named
 * here with its exact type, so a declaration that drifts fails to
 * compile; the script checks that the list of names matches the
 * library's exports. */
#include <mlir-async-runtime/AsyncRuntime.h>

void (*const add_ref)(RefCountedObjPtr, int64_t) = mlirAsyncRuntimeAddRef;
void (*const drop_ref)(RefCountedObjPtr, int64_t) = mlirAsyncRuntimeDropRef;
AsyncToken *(*const create_token)(void) = mlirAsyncRuntimeCreateToken;
AsyncValue *(*const create_value)(int64_t) = mlirAsyncRuntimeCreateValue;
AsyncGroup *(*const create_group)(int64_t) = mlirAsyncRuntimeCreateGroup;
int64_t (*const add_token_to_group)(AsyncToken *, AsyncGroup *) =
    mlirAsyncRuntimeAddTokenToGroup;
void (*const emplace_token)(AsyncToken *) = mlirAsyncRuntimeEmplaceToken;
void (*const emplace_value)(AsyncValue *) = mlirAsyncRuntimeEmplaceValue;
void (*const set_token_error)(AsyncToken *) = mlirAsyncRuntimeSetTokenError;
void (*const set_value_error)(AsyncValue *) = mlirAsyncRuntimeSetValueError;
bool (*const is_token_error)(AsyncToken *) = mlirAsyncRuntimeIsTokenError;
bool (*const is_value_error)(AsyncValue *) = mlirAsyncRuntimeIsValueError;
bool (*const is_group_error)(AsyncGroup *) = mlirAsyncRuntimeIsGroupError;
void (*const await_token)(AsyncToken *) = mlirAsyncRuntimeAwaitToken;
void (*const await_value)(AsyncValue *) = mlirAsyncRuntimeAwaitValue;
void (*const await_group)(AsyncGroup *) = mlirAsyncRuntimeAwaitAllInGroup;
unsigned char *(*const value_storage)(AsyncValue *) =
    mlirAsyncRuntimeGetValueStorage;
void (*const execute)(CoroHandle, CoroResume) = mlirAsyncRuntimeExecute;
void (*const await_token_execute)(AsyncToken *, CoroHandle, CoroResume) =
    mlirAsyncRuntimeAwaitTokenAndExecute;
void (*const await_value_execute)(AsyncValue *, CoroHandle, CoroResume) =
    mlirAsyncRuntimeAwaitValueAndExecute;
void (*const await_group_execute)(AsyncGroup *, CoroHandle, CoroResume) =
    mlirAsyncRuntimeAwaitAllInGroupAndExecute;
int64_t (*const num_workers)(void) = mlirAsyncRuntimGetNumWorkerThreads;
void (*const print_thread_id)(void) = mlirAsyncRuntimePrintCurrentThreadId;
void (*const destroy)(void) = __mlir_execution_engine_destroy;
void (*const stats)(RustMlirAsyncRuntimeStats *) = rust_mlir_async_runtime_stats;
bool (*const wait_idle)(uint64_t) = rust_mlir_async_runtime_wait_idle;

/* The introspection struct is four int64_t, as docs/introspection-abi.md
 * and the library's #[repr(C)] RuntimeStats say. */
typedef char stats_is_32_bytes[sizeof(RustMlirAsyncRuntimeStats) == 32 ? 1 : -1];
