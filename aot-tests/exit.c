/* What happens at process exit in a program that never calls the destroy
 * hook (docs/aot.md, "At process exit"); run by scripts/corpus/aot_test.sh, which
 * FileChecks stdout against this file. argv[1] is the mode:
 *
 *   queued     main queues TASKS tasks, which wait until main has returned,
 *              and returns: every task runs at exit, before the exit
 *              handlers that the program registered before the runtime
 *              started.
 *   from-task  a task calls exit(7) while main blocks in an await and the
 *              other tasks never finish: the process exits with status 7
 *              without waiting for them.
 *   destroy    main calls the destroy hook itself, then returns: the exit
 *              teardown has nothing left to do (the counters, when on, are
 *              printed once).
 *
 * Tasks are plain C functions handed to mlirAsyncRuntimeExecute (a task is
 * a handle and a resume function; compiled MLIR passes coroutines). */
#define _DEFAULT_SOURCE
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mlir-async-runtime/AsyncRuntime.h>

enum { TASKS = 8 };
static atomic_int ran;
static atomic_bool main_returned;

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static void count_after_main_returned(void *handle) {
  (void)handle;
  while (!atomic_load(&main_returned))
    sleep_ms(1);
  sleep_ms(20);
  atomic_fetch_add(&ran, 1);
}

static void count_after_20ms(void *handle) {
  (void)handle;
  sleep_ms(20);
  atomic_fetch_add(&ran, 1);
}

static void exit_7(void *handle) {
  (void)handle;
  sleep_ms(20);
  fflush(stdout);
  exit(7);
}

static void never_finish(void *handle) {
  (void)handle;
  for (;;)
    sleep_ms(1000);
}

/* Registered before the runtime starts, so it runs after the runtime's. */
static void report_at_exit(void) {
  printf("exit handler: %d of %d tasks ran\n", atomic_load(&ran), TASKS);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  atexit(report_at_exit);
  if (strcmp(mode, "queued") == 0) {
    // QUEUED: main returns with 0 of 8 tasks run
    // QUEUED-NEXT: exit handler: 8 of 8 tasks ran
    for (int i = 0; i < TASKS; i++)
      mlirAsyncRuntimeExecute(NULL, count_after_main_returned);
    printf("main returns with %d of %d tasks run\n", atomic_load(&ran), TASKS);
    atomic_store(&main_returned, true);
    return 0;
  }
  if (strcmp(mode, "from-task") == 0) {
    // FROM-TASK: exit handler: 0 of 8 tasks ran
    mlirAsyncRuntimeExecute(NULL, exit_7);
    for (int i = 1; i < TASKS; i++)
      mlirAsyncRuntimeExecute(NULL, never_finish);
    AsyncToken *never = mlirAsyncRuntimeCreateToken();
    mlirAsyncRuntimeAwaitToken(never);
    printf("main: the await returned\n");
    return 1;
  }
  if (strcmp(mode, "destroy") == 0) {
    // DESTROY: after destroy: 8 of 8 tasks ran, 0 in flight
    // DESTROY-NEXT: exit handler: 8 of 8 tasks ran
    for (int i = 0; i < TASKS; i++)
      mlirAsyncRuntimeExecute(NULL, count_after_20ms);
    __mlir_execution_engine_destroy();
    RustMlirAsyncRuntimeStats stats;
    rust_mlir_async_runtime_stats(&stats);
    printf("after destroy: %d of %d tasks ran, %lld in flight\n",
           atomic_load(&ran), TASKS, (long long)stats.tasks_in_flight);
    return 0;
  }
  fprintf(stderr, "usage: %s queued|from-task|destroy\n", argv[0]);
  return 2;
}
