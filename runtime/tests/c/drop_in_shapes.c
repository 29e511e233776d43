// The drop-in shapes of runtime/tests/drop_in.rs (issue 39), against any
// runtime library through its C ABI, loaded with dlopen: MLIR's C++
// runtime, ours, or another. Each shape prints one line that says what
// happened; scripts/check/drop_in_cxx.sh builds this file, runs each shape
// against the C++ runtime and ours (with a timeout: a shape that hangs
// prints nothing), and prints the table.
//
//   drop_in_shapes LIBRARY SHAPE      SHAPE: 1 to 5
//
// A task is a pair (handle, resume) as the lowering queues one: the handle
// points to the task's own state, and `resume` runs it to its end.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fenv.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*resume_fn)(void *);
static void *(*create_token)(void);
static void (*emplace_token)(void *);
static void (*await_token)(void *);
static void (*drop_ref)(void *, int64_t);
static void (*execute)(void *, resume_fn);
static int64_t (*num_workers)(void);
static void (*destroy)(void);

static void *symbol(void *lib, const char *name) {
    void *f = dlsym(lib, name);
    if (!f) {
        fprintf(stderr, "drop_in_shapes: %s: %s\n", name, dlerror());
        exit(2);
    }
    return f;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// A task: runs `body(arg)`, then emplaces its token (the lowering's
// order: the token is created before the `Execute`).
struct task {
    void (*body)(void *);
    void *arg;
    void *token;
};

static void run_task(void *handle) {
    struct task *t = handle;
    if (t->body) t->body(t->arg);
    emplace_token(t->token);
    free(t);
}

static void *spawn(void (*body)(void *), void *arg) {
    struct task *t = malloc(sizeof *t);
    t->body = body;
    t->arg = arg;
    t->token = create_token();
    execute(t, run_task);
    return t->token;
}

static void await_and_drop(void *token) {
    await_token(token);
    drop_ref(token, 1);
}

// Shape 1: the caller holds a plain mutex across AwaitToken(t); t's task
// emplaces t at once, and an unrelated task queued after it takes the
// mutex.
static pthread_mutex_t shape1_lock = PTHREAD_MUTEX_INITIALIZER;
static void take_the_lock(void *arg) {
    (void)arg;
    pthread_mutex_lock(&shape1_lock);
    pthread_mutex_unlock(&shape1_lock);
}
static void shape1(int rounds) {
    for (int i = 0; i < rounds; i++) {
        pthread_mutex_lock(&shape1_lock);
        void *t = spawn(NULL, NULL);
        void *unrelated = spawn(take_the_lock, NULL);
        await_token(t);
        pthread_mutex_unlock(&shape1_lock);
        drop_ref(t, 1);
        await_and_drop(unrelated);
    }
    printf("shape 1 (lock held across an await): %d of %d rounds completed\n", rounds, rounds);
}

// Shape 2: a task waits (3 s at most) on a condition variable that the
// caller signals after its await of another task's token returns.
struct flag {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int set;
    int missed;
};
static void wait_for_signal(void *arg) {
    struct flag *f = arg;
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 3;
    pthread_mutex_lock(&f->lock);
    while (!f->set) {
        if (pthread_cond_timedwait(&f->cond, &f->lock, &limit) != 0) {
            f->missed = 1;
            break;
        }
    }
    pthread_mutex_unlock(&f->lock);
}
static void shape2(int rounds) {
    int missed = 0;
    for (int i = 0; i < rounds; i++) {
        struct flag f = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
        void *t = spawn(NULL, NULL);
        void *waiting = spawn(wait_for_signal, &f);
        await_and_drop(t);
        pthread_mutex_lock(&f.lock);
        f.set = 1;
        pthread_cond_signal(&f.cond);
        pthread_mutex_unlock(&f.lock);
        await_and_drop(waiting);
        missed += f.missed;
    }
    printf("shape 2 (signal after the await): %d of %d signals missed\n", missed, rounds);
}

// Shape 3: the caller queues the producer of t, then a long unrelated
// computation (until the caller's await returned, 3 s at most), and
// awaits t.
struct long_task {
    atomic_int returned;
    int to_limit;
};
static void compute_until_told(void *arg) {
    struct long_task *l = arg;
    double start = now_s();
    while (!atomic_load(&l->returned)) {
        if (now_s() - start > 3.0) {
            l->to_limit = 1;
            break;
        }
    }
}
static void shape3(int rounds) {
    int to_limit = 0;
    double worst = 0;
    for (int i = 0; i < rounds; i++) {
        struct long_task l = {0, 0};
        void *t = spawn(NULL, NULL);
        void *computation = spawn(compute_until_told, &l);
        double start = now_s();
        await_and_drop(t);
        double took = now_s() - start;
        if (took > worst) worst = took;
        atomic_store(&l.returned, 1);
        await_and_drop(computation);
        to_limit += l.to_limit;
    }
    printf("shape 3 (unrelated long task): %d of %d ran to their limit; slowest await %.1f ms\n", to_limit,
           rounds, worst * 1e3);
}

// As many tasks as the runtime reports workers meet at a barrier (10 s
// at most each) while the caller polls memory, without any Await*:
// whether they all met.
static atomic_int arrived, timed_out;
static int64_t expected;
static void meet(void *arg) {
    (void)arg;
    atomic_fetch_add(&arrived, 1);
    double start = now_s();
    while (atomic_load(&arrived) < expected) {
        if (now_s() - start > 10.0) {
            atomic_fetch_add(&timed_out, 1);
            return;
        }
    }
}
static int workers_meet(void) {
    atomic_store(&arrived, 0);
    atomic_store(&timed_out, 0);
    expected = num_workers();
    void **tokens = calloc(expected, sizeof *tokens);
    for (int64_t i = 0; i < expected; i++) tokens[i] = spawn(meet, NULL);
    double start = now_s();
    while (atomic_load(&arrived) < expected && now_s() - start < 11.0) {
    }
    int met = atomic_load(&arrived) == expected;
    for (int64_t i = 0; i < expected; i++) await_and_drop(tokens[i]);
    free(tokens);
    return met && !atomic_load(&timed_out);
}

// Shape 4: the caller rounds upward and awaits tasks that report their
// rounding mode and then set theirs toward zero. Every worker thread is
// started first, with the caller's first mode (they meet at a barrier):
// a thread started later inherits the mode of the thread that creates it,
// as POSIX threads do, and LLVM's pool grows on demand, from the thread
// that queues the task (a C++ run saw 1 of 50 that way, on 2 cores).
static atomic_int saw_callers_mode;
static void look_at_rounding(void *arg) {
    (void)arg;
    if (fegetround() == FE_UPWARD) atomic_fetch_add(&saw_callers_mode, 1);
    fesetround(FE_TOWARDZERO);
}
static void shape4(int rounds) {
    int kept = 0;
    if (!workers_meet()) {
        printf("shape 4 (floating-point state): the reported workers did not all start\n");
        return;
    }
    fesetround(FE_UPWARD);
    for (int i = 0; i < rounds; i++) {
        void *t = spawn(look_at_rounding, NULL);
        await_and_drop(t);
        kept += fegetround() == FE_UPWARD;
    }
    fesetround(FE_TONEAREST);
    printf("shape 4 (floating-point state): %d of %d tasks saw the caller's mode; %d of %d awaits kept it\n",
           atomic_load(&saw_callers_mode), rounds, kept, rounds);
}

// Shape 5: as many tasks as the runtime reports workers meet at a
// barrier while the caller polls memory.
static void shape5(void) {
    int met = workers_meet();
    printf("shape 5 (reported workers): %lld reported, %d arrived, barrier %s\n", (long long)expected,
           atomic_load(&arrived), met ? "met" : "not met");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: drop_in_shapes LIBRARY SHAPE (1 to 5)\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "drop_in_shapes: %s\n", dlerror());
        return 2;
    }
    create_token = symbol(lib, "mlirAsyncRuntimeCreateToken");
    emplace_token = symbol(lib, "mlirAsyncRuntimeEmplaceToken");
    await_token = symbol(lib, "mlirAsyncRuntimeAwaitToken");
    drop_ref = symbol(lib, "mlirAsyncRuntimeDropRef");
    execute = symbol(lib, "mlirAsyncRuntimeExecute");
    num_workers = symbol(lib, "mlirAsyncRuntimGetNumWorkerThreads");
    destroy = symbol(lib, "__mlir_execution_engine_destroy");
    switch (atoi(argv[2])) {
    case 1: shape1(10); break;
    case 2: shape2(6); break;
    case 3: shape3(6); break;
    case 4: shape4(50); break;
    case 5: shape5(); break;
    default:
        fprintf(stderr, "drop_in_shapes: no shape %s (1 to 5)\n", argv[2]);
        return 2;
    }
    fflush(stdout);
    destroy();
    return 0;
}
