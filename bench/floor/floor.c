/*
 * The floor runtime: the cheapest runtime that can run MLIR's async ABI,
 * used only as a yardstick by `make bench` and `make bench-instr`
 * (bench/README.md). It implements the same C ABI as our runtime and the
 * C++ one (declared in runtime/include/mlir-async-runtime/AsyncRuntime.h:
 * the 23 mlirAsyncRuntim* functions, which with the execution-engine hook
 * pair are the C++ runtime's 25 exports; both runner hook pairs; and our
 * rust_mlir_async_runtime_wait_idle), on one thread and with no locks or
 * atomics:
 *
 * - Ready work is one LIFO array of (handle, resume) pairs. Execute pushes;
 *   a completion pushes its waiting continuations; an AwaitAndExecute on an
 *   object that is already complete pushes too. Nothing runs inline, so the
 *   stack stays constant however long a chain of tasks is.
 * - Nothing runs until someone blocks: a blocking await pops and runs ready
 *   work until the awaited object completes; the destroy hook runs whatever
 *   is left. If the queue runs dry first the program needs a second thread
 *   (for example a task that spins until main does something later): that
 *   is reported on stderr and the process aborts.
 * - Allocation: one malloc per token, value (storage inline) and group; the
 *   first waiter of an object lives inside it; further waiters take nodes
 *   from a free list that only grows; the ready array grows by doubling.
 *
 * Not thread-safe: every call must come from the thread that runs the
 * program (mlir-cpu-runner and jit-harness do so). One static instance holds
 * the state, because the ABI gives no instance to hang it on.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

typedef void (*resume_fn)(void *);

enum state { PENDING = 0, AVAILABLE, ERROR };

/* What to do when an object completes: resume(handle), or, when resume is
 * NULL, count one token into the group `handle`. handle NULL = no waiter
 * (a coroutine handle is never NULL). */
struct waiter {
  void *handle;
  resume_fn resume;
};

struct node {
  struct waiter w;
  struct node *next;
};

struct object {
  int64_t refs;
  uint8_t state;
  struct waiter first;
  struct node *more;
};

struct group {
  struct object obj;
  int64_t pending;   /* tokens not yet completed, out of the group's size */
  int64_t next_rank; /* rank returned by the next AddTokenToGroup */
  bool error;        /* some completed token was in error */
};

struct value {
  struct object obj;
  _Alignas(max_align_t) unsigned char storage[];
};

struct floor_runtime {
  struct waiter *ready; /* LIFO of continuations ready to run */
  size_t len, cap;
  struct node *free_nodes;
};

static struct floor_runtime rt;

static void die(const char *call, const char *what) {
  fprintf(stderr, "floor runtime: %s: %s\n", call, what);
  fflush(stderr);
  abort();
}

static void *xmalloc(size_t n, const char *call) {
  void *p = malloc(n);
  if (!p)
    die(call, "out of memory");
  return p;
}

/* ------------------------------------------------------- the ready queue */

static void push_ready(void *handle, resume_fn resume) {
  if (rt.len == rt.cap) {
    size_t cap = rt.cap ? 2 * rt.cap : 1024;
    struct waiter *p = realloc(rt.ready, cap * sizeof *p);
    if (!p)
      die("ready queue", "out of memory");
    rt.ready = p;
    rt.cap = cap;
  }
  rt.ready[rt.len].handle = handle;
  rt.ready[rt.len].resume = resume;
  rt.len++;
}

/* Runs the most recently readied continuation; false if there is none. */
static bool run_one(void) {
  if (rt.len == 0)
    return false;
  struct waiter w = rt.ready[--rt.len];
  w.resume(w.handle);
  return true;
}

/* Runs everything queued, including what that readies. */
static void run_all(void) {
  while (run_one()) {
  }
}

static void block_on(struct object *o, const char *call) {
  while (o->state == PENDING)
    if (!run_one())
      die(call, "nothing left to run and the object is still pending: only "
                "another thread could complete it (or nothing will), and a "
                "single-thread runtime has none");
}

/* ------------------------------------------------------------ objects */

static void init_object(struct object *o, int64_t refs) {
  o->refs = refs;
  o->state = PENDING;
  o->first.handle = NULL;
  o->first.resume = NULL;
  o->more = NULL;
}

static void add_waiter(struct object *o, void *handle, resume_fn resume) {
  if (!o->first.handle) {
    o->first.handle = handle;
    o->first.resume = resume;
    return;
  }
  struct node *n = rt.free_nodes;
  if (n) {
    rt.free_nodes = n->next;
  } else {
    /* A slab of nodes, never returned: they recycle through the free list. */
    enum { SLAB = 64 };
    struct node *slab = xmalloc(SLAB * sizeof *slab, "await");
    for (int i = 1; i < SLAB - 1; i++)
      slab[i].next = &slab[i + 1];
    slab[SLAB - 1].next = NULL;
    rt.free_nodes = &slab[1];
    n = &slab[0];
  }
  n->w.handle = handle;
  n->w.resume = resume;
  n->next = o->more;
  o->more = n;
}

static void drop(struct object *o, int64_t n, const char *call) {
  o->refs -= n;
  if (o->refs > 0)
    return;
  if (o->refs < 0)
    die(call, "reference count below zero");
  for (struct node *m = o->more; m;) {
    struct node *next = m->next;
    m->next = rt.free_nodes;
    rt.free_nodes = m;
    m = next;
  }
  free(o);
}

static void wake(struct object *o);

/* One token of group g completed (in error or not). */
static void count_into_group(struct group *g, bool error) {
  if (error)
    g->error = true;
  if (--g->pending == 0) {
    g->obj.state = g->error ? ERROR : AVAILABLE;
    wake(&g->obj);
  } else if (g->pending < 0) {
    die("AddTokenToGroup", "more tokens than the group's size");
  }
}

static void notify(struct waiter w, bool error) {
  if (w.resume) {
    push_ready(w.handle, w.resume);
  } else {
    struct group *g = w.handle;
    count_into_group(g, error);
    drop(&g->obj, 1, "AddTokenToGroup");
  }
}

/* Hands every waiter of a just-completed object on; the object stays. */
static void wake(struct object *o) {
  if (!o->first.handle)
    return;
  bool error = o->state == ERROR;
  struct waiter first = o->first;
  struct node *m = o->more;
  o->first.handle = NULL;
  o->more = NULL;
  notify(first, error);
  while (m) {
    struct node *next = m->next;
    struct waiter w = m->w;
    m->next = rt.free_nodes;
    rt.free_nodes = m;
    notify(w, error);
    m = next;
  }
}

/* Emplace / SetError of a token or value: final state, waiters, then the
 * creation reference. */
static void complete(struct object *o, enum state state, const char *call) {
  if (o->state != PENDING)
    die(call, "object completed twice");
  o->state = state;
  wake(o);
  drop(o, 1, call);
}

static void await_and_execute(struct object *o, void *handle, resume_fn resume) {
  if (o->state == PENDING)
    add_waiter(o, handle, resume);
  else
    push_ready(handle, resume);
}

/* ------------------------------------------------------------- the ABI */

EXPORT void mlirAsyncRuntimeAddRef(void *obj, int64_t n) {
  ((struct object *)obj)->refs += n;
}

EXPORT void mlirAsyncRuntimeDropRef(void *obj, int64_t n) {
  drop(obj, n, "DropRef");
}

EXPORT void *mlirAsyncRuntimeCreateToken(void) {
  struct object *t = xmalloc(sizeof *t, "CreateToken");
  init_object(t, 2);
  return t;
}

EXPORT void *mlirAsyncRuntimeCreateValue(int64_t size) {
  if (size < 0)
    die("CreateValue", "negative size");
  struct value *v = xmalloc(sizeof *v + (size_t)size, "CreateValue");
  init_object(&v->obj, 2);
  return v;
}

EXPORT void *mlirAsyncRuntimeCreateGroup(int64_t size) {
  if (size < 0)
    die("CreateGroup", "negative size");
  struct group *g = xmalloc(sizeof *g, "CreateGroup");
  init_object(&g->obj, 1);
  g->pending = size;
  g->next_rank = 0;
  g->error = false;
  if (size == 0)
    g->obj.state = AVAILABLE;
  return g;
}

EXPORT int64_t mlirAsyncRuntimeAddTokenToGroup(void *token, void *group) {
  struct object *t = token;
  struct group *g = group;
  int64_t rank = g->next_rank++;
  if (t->state == PENDING) {
    g->obj.refs++; /* the group lives until the token has been counted */
    add_waiter(t, g, NULL);
  } else {
    count_into_group(g, t->state == ERROR);
  }
  return rank;
}

EXPORT void mlirAsyncRuntimeEmplaceToken(void *token) {
  complete(token, AVAILABLE, "EmplaceToken");
}

EXPORT void mlirAsyncRuntimeEmplaceValue(void *value) {
  complete(value, AVAILABLE, "EmplaceValue");
}

EXPORT void mlirAsyncRuntimeSetTokenError(void *token) {
  complete(token, ERROR, "SetTokenError");
}

EXPORT void mlirAsyncRuntimeSetValueError(void *value) {
  complete(value, ERROR, "SetValueError");
}

EXPORT bool mlirAsyncRuntimeIsTokenError(void *token) {
  return ((struct object *)token)->state == ERROR;
}

EXPORT bool mlirAsyncRuntimeIsValueError(void *value) {
  return ((struct object *)value)->state == ERROR;
}

EXPORT bool mlirAsyncRuntimeIsGroupError(void *group) {
  return ((struct group *)group)->error;
}

EXPORT void mlirAsyncRuntimeAwaitToken(void *token) {
  block_on(token, "AwaitToken");
}

EXPORT void mlirAsyncRuntimeAwaitValue(void *value) {
  block_on(value, "AwaitValue");
}

EXPORT void mlirAsyncRuntimeAwaitAllInGroup(void *group) {
  block_on(group, "AwaitAllInGroup");
}

EXPORT unsigned char *mlirAsyncRuntimeGetValueStorage(void *value) {
  return ((struct value *)value)->storage;
}

EXPORT void mlirAsyncRuntimeExecute(void *handle, resume_fn resume) {
  push_ready(handle, resume);
}

EXPORT void mlirAsyncRuntimeAwaitTokenAndExecute(void *token, void *handle,
                                                 resume_fn resume) {
  await_and_execute(token, handle, resume);
}

EXPORT void mlirAsyncRuntimeAwaitValueAndExecute(void *value, void *handle,
                                                 resume_fn resume) {
  await_and_execute(value, handle, resume);
}

EXPORT void mlirAsyncRuntimeAwaitAllInGroupAndExecute(void *group,
                                                      void *handle,
                                                      resume_fn resume) {
  await_and_execute(group, handle, resume);
}

EXPORT int64_t mlirAsyncRuntimGetNumWorkerThreads(void) { return 1; }

EXPORT void mlirAsyncRuntimePrintCurrentThreadId(void) {
  printf("Current thread id: %lu\n", (unsigned long)pthread_self());
}

/* ------------------------------------------------------ runner hooks */

/* The runner passes an llvm::StringMap<void *> &; left empty, the runner
 * binds the exported names (MLIR 17+ runners do; this library is only meant
 * for the MLIR 19 tools). */
EXPORT void __mlir_execution_engine_init(void *symbols) { (void)symbols; }

/* Runs everything still queued before the JIT-compiled code goes away. */
EXPORT void __mlir_execution_engine_destroy(void) {
  run_all();
  free(rt.ready);
  rt.ready = NULL;
  rt.len = rt.cap = 0;
}

/* Our runtime's introspection call (docs/introspection-abi.md), which
 * programs of the corpus use: true once no task is in flight. Here: once
 * everything queued has run. */
EXPORT bool rust_mlir_async_runtime_wait_idle(uint64_t timeout_ms) {
  (void)timeout_ms;
  run_all();
  return true;
}

EXPORT void __mlir_runner_init(void *symbols) {
  __mlir_execution_engine_init(symbols);
}

EXPORT void __mlir_runner_destroy(void) { __mlir_execution_engine_destroy(); }
