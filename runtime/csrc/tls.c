/* Thread-local slots of the runtime, in the initial-exec TLS model.
 *
 * Rust's thread_local! in a shared library uses the general-dynamic model:
 * every access calls __tls_get_addr (about 25 instructions), and the hot
 * paths touch per-thread state several times per task (8% of fib-spawn's
 * instructions went there). An initial-exec variable is one load from the
 * thread pointer. Stable Rust cannot ask for that model, so this file
 * defines one block of slots and returns its address; src/sync/tls.rs gives the
 * slots names. The block is small (64 bytes): glibc serves initial-exec
 * variables of libraries loaded with dlopen from a reserved surplus of the
 * static TLS area (over 1 KiB by default).
 */
#include <stddef.h>

struct mlir_async_runtime_tls {
    void *slots[8];
};

/* Hidden, not static: on x86-64, src/sync/tls.rs reads its address inline
 * (thread pointer + the GOTTPOFF offset) instead of calling the function
 * below, which other architectures use. */
__attribute__((visibility("hidden"), tls_model("initial-exec")))
__thread struct mlir_async_runtime_tls mlir_async_runtime_tls_block;

__attribute__((visibility("hidden")))
struct mlir_async_runtime_tls *mlir_async_runtime_tls(void) {
    return &mlir_async_runtime_tls_block;
}
