/*
 * threadpeak: the exact peak number of live threads of a process, for
 * scripts/bench/blocked.py (which builds it into its --out directory and
 * LD_PRELOADs it into the program it measures).
 *
 * It interposes pthread_create. A thread counts from the moment it is asked
 * for (before the real pthread_create, so a thread that runs for a moment
 * only is never missed) until its thread-specific destructor runs at its
 * exit, whether it returns or calls pthread_exit; a refused create is
 * uncounted again. The main thread counts as one. Each new peak is written
 * to the file named by $THREADPEAK_OUT at once (pwrite at offset 0, a fixed
 * width), so the figure survives a process that is killed or _exit()s.
 * Threads started without pthread_create (a raw clone) are not seen: the
 * sampled /proc/<pid>/status count is the cross-check.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static atomic_long live = 1;
static long peak = 1; /* under peak_lock */
static pthread_mutex_t peak_lock = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = -1;
static pthread_key_t exit_key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static create_fn real_create;

struct start {
  void *(*fn)(void *);
  void *arg;
};

static void on_exit_thread(void *unused) {
  (void)unused;
  atomic_fetch_sub(&live, 1);
}

/* The peak file holds one number; the lock keeps writes in peak order. */
static void write_peak(long value) {
  if (out_fd >= 0) {
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%20ld\n", value);
    if (pwrite(out_fd, buf, (size_t)n, 0) != n) {
      /* Nothing to do: blocked.py keeps its sampled count. */
    }
  }
}

static void record(long now) {
  pthread_mutex_lock(&peak_lock);
  if (now > peak) {
    peak = now;
    write_peak(now);
  }
  pthread_mutex_unlock(&peak_lock);
}

static void init(void) {
  real_create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
  pthread_key_create(&exit_key, on_exit_thread);
  const char *path = getenv("THREADPEAK_OUT");
  if (path && *path) {
    out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  write_peak(1);
}

/* At load, so the file exists (holding 1) even if no thread starts. */
__attribute__((constructor)) static void load(void) { pthread_once(&once, init); }

static void *trampoline(void *p) {
  struct start s = *(struct start *)p;
  free(p);
  pthread_setspecific(exit_key, (void *)1);
  return s.fn(s.arg);
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                   void *arg) {
  pthread_once(&once, init);
  struct start *s = malloc(sizeof *s);
  if (!s) {
    return real_create(thread, attr, fn, arg);
  }
  s->fn = fn;
  s->arg = arg;
  record(atomic_fetch_add(&live, 1) + 1);
  int rc = real_create(thread, attr, trampoline, s);
  if (rc != 0) {
    atomic_fetch_sub(&live, 1);
    free(s);
  }
  return rc;
}
