/* The C main of an ahead-of-time compiled corpus program (docs/aot.md).
 *
 * The corpus's entry point is `main` returning void; the AOT test renames
 * it to `aot_entry` in the program's object file and links this main,
 * which calls it, then waits until the runtime is idle and reports on
 * stderr what is still alive (the test expects nothing). It calls our
 * introspection functions, so it links against our runtime only. */
#include <stdio.h>

#include <mlir-async-runtime/AsyncRuntime.h>

void aot_entry(void);

int main(void) {
  aot_entry();
  bool idle = rust_mlir_async_runtime_wait_idle(60000);
  RustMlirAsyncRuntimeStats stats;
  rust_mlir_async_runtime_stats(&stats);
  fprintf(stderr,
          "aot-main: idle=%d live tokens=%lld values=%lld groups=%lld "
          "tasks=%lld\n",
          (int)idle, (long long)stats.live_tokens,
          (long long)stats.live_values, (long long)stats.live_groups,
          (long long)stats.tasks_in_flight);
  return 0;
}
