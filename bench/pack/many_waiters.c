/* many-waiters: THREADS outside threads (not the runtime's), each queuing
 * TASKS tasks through the async ABI and awaiting every one of them, ROUNDS
 * times; part of the benchmark pack (make bench-pack, docs/scaling.md).
 * The shape of an embedder with many threads of its own (a server, Python
 * threads) on one runtime: every queue comes from outside the pool, and
 * many threads block in mlirAsyncRuntimeAwaitToken at once.
 *
 * Usage: many-waiters [THREADS [TASKS [ROUNDS [WORK]]]]
 *   defaults 32 threads, 16 tasks, 100 rounds, 2000 steps of work per task
 * Prints the checksum (line 1) and the seconds from the threads' start to
 * the last join (line 2), as the pack's MLIR programs do. The checksum is
 * recomputed sequentially after the timed part: a wrong one, or a token in
 * error, exits 3. Links against any runtime of the ABI (ours, C++, floor). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <mlir-async-runtime/AsyncRuntime.h>

static long threads = 32, tasks = 16, rounds = 100, work = 2000;
static pthread_barrier_t start;

typedef struct {
  AsyncToken *token;
  uint64_t seed, result;
} Task;

/* WORK steps of a 64-bit LCG from the seed: the same function checks. */
static uint64_t compute(uint64_t x) {
  for (long i = 0; i < work; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x >> 17;
}

static void run_task(void *arg) {
  Task *t = arg;
  t->result = compute(t->seed);
  mlirAsyncRuntimeEmplaceToken(t->token); /* drops the task's reference */
}

static uint64_t seed_of(long thread, long round, long task) {
  return ((uint64_t)thread << 40) ^ ((uint64_t)round << 20) ^ (uint64_t)task;
}

static void *waiter(void *arg) {
  long id = (long)(intptr_t)arg;
  uint64_t *sum = calloc(1, sizeof *sum);
  Task *ts = calloc((size_t)tasks, sizeof *ts);
  pthread_barrier_wait(&start);
  for (long r = 0; r < rounds; r++) {
    for (long k = 0; k < tasks; k++) {
      ts[k].token = mlirAsyncRuntimeCreateToken();
      ts[k].seed = seed_of(id, r, k);
      mlirAsyncRuntimeExecute(&ts[k], run_task);
    }
    for (long k = 0; k < tasks; k++) {
      mlirAsyncRuntimeAwaitToken(ts[k].token);
      if (mlirAsyncRuntimeIsTokenError(ts[k].token)) {
        fprintf(stderr, "many-waiters: a token ended in error\n");
        exit(3);
      }
      mlirAsyncRuntimeDropRef(ts[k].token, 1); /* the caller's reference */
      *sum += ts[k].result;
    }
  }
  free(ts);
  return sum;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  long *params[] = {&threads, &tasks, &rounds, &work};
  for (int i = 1; i < argc && i <= 4; i++) {
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end || v < 1) {
      fprintf(stderr, "many-waiters: argument %d must be a positive integer: %s\n", i, argv[i]);
      return 2;
    }
    *params[i - 1] = v;
  }
  pthread_t *ids = calloc((size_t)threads, sizeof *ids);
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  for (long t = 0; t < threads; t++)
    if (pthread_create(&ids[t], NULL, waiter, (void *)(intptr_t)t) != 0) {
      fprintf(stderr, "many-waiters: cannot start thread %ld\n", t);
      return 2;
    }
  pthread_barrier_wait(&start);
  double t0 = now();
  uint64_t sum = 0;
  for (long t = 0; t < threads; t++) {
    void *part;
    pthread_join(ids[t], &part);
    sum += *(uint64_t *)part;
    free(part);
  }
  double dt = now() - t0;
  uint64_t expect = 0;
  for (long t = 0; t < threads; t++)
    for (long r = 0; r < rounds; r++)
      for (long k = 0; k < tasks; k++) expect += compute(seed_of(t, r, k));
  printf("%llu\n%g\n", (unsigned long long)sum, dt);
  if (sum != expect) {
    fprintf(stderr, "many-waiters: wrong checksum %llu, expected %llu\n",
            (unsigned long long)sum, (unsigned long long)expect);
    return 3;
  }
  return 0;
}
