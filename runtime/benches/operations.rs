//! Per-operation costs of the runtime, through the same C ABI that compiled
//! code calls, against the floor of a raw `rayon::spawn` that decrements an
//! atomic counter.
//!
//! `cargo bench -p mlir_async_runtime --bench operations`
//!
//! Task benchmarks run a batch of `BATCH` tasks and report the time per
//! task, so the floor and the runtime are measured the same way: spawn the
//! batch from the bench thread, then wait until all of it ran.

use std::ffi::c_void;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlir_async_runtime::abi::*;
use mlir_async_runtime::Token;

const BATCH: usize = 10_000;

/// A task whose handle is an `AtomicUsize` to decrement.
unsafe extern "C" fn count_down(handle: *mut c_void) {
    // SAFETY: the handle is a `&'static AtomicUsize`.
    unsafe { &*handle.cast::<AtomicUsize>() }.fetch_sub(1, Ordering::Release);
}

fn wait_zero(counter: &AtomicUsize) {
    while counter.load(Ordering::Acquire) != 0 {
        std::hint::spin_loop();
    }
}

static PENDING: AtomicUsize = AtomicUsize::new(0);

fn pending_handle() -> *mut c_void {
    &PENDING as *const AtomicUsize as *mut c_void
}

fn per_task(c: &mut Criterion) {
    let mut group = c.benchmark_group("per_task");
    group.throughput(Throughput::Elements(BATCH as u64));

    // The floor: rayon alone, same worker count as the runtime.
    let workers = mlirAsyncRuntimGetNumWorkerThreads() as usize;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(workers).build().unwrap();
    group.bench_function("floor_rayon_spawn", |b| {
        b.iter(|| {
            PENDING.store(BATCH, Ordering::Relaxed);
            for _ in 0..BATCH {
                pool.spawn(|| {
                    PENDING.fetch_sub(1, Ordering::Release);
                });
            }
            wait_zero(&PENDING);
        })
    });

    group.bench_function("execute", |b| {
        b.iter(|| {
            PENDING.store(BATCH, Ordering::Relaxed);
            for _ in 0..BATCH {
                mlirAsyncRuntimeExecute(pending_handle(), Some(count_down));
            }
            wait_zero(&PENDING);
        })
    });

    // Register a continuation on a pending token, then fire it.
    group.bench_function("continuation_register_and_fire", |b| {
        b.iter(|| {
            PENDING.store(BATCH, Ordering::Relaxed);
            for _ in 0..BATCH {
                let token = mlirAsyncRuntimeCreateToken();
                // SAFETY: live token; both references are dropped.
                unsafe {
                    mlirAsyncRuntimeAwaitTokenAndExecute(token, pending_handle(), Some(count_down));
                    mlirAsyncRuntimeEmplaceToken(token);
                    mlirAsyncRuntimeDropRef(token.cast(), 1);
                }
            }
            wait_zero(&PENDING);
        })
    });
    group.finish();
}

fn per_object(c: &mut Criterion) {
    let mut group = c.benchmark_group("per_object");
    group.bench_function("token_create_emplace_drop", |b| {
        b.iter(|| {
            let token = mlirAsyncRuntimeCreateToken();
            // SAFETY: live token; both references are dropped.
            unsafe {
                mlirAsyncRuntimeEmplaceToken(black_box(token));
                mlirAsyncRuntimeDropRef(token.cast(), 1);
            }
        })
    });
    group.bench_function("value_create_write_emplace_drop", |b| {
        b.iter(|| {
            let value = mlirAsyncRuntimeCreateValue(8);
            // SAFETY: live value with 8 bytes of storage.
            unsafe {
                mlirAsyncRuntimeGetValueStorage(value).cast::<i64>().write(42);
                mlirAsyncRuntimeEmplaceValue(black_box(value));
                mlirAsyncRuntimeDropRef(value.cast(), 1);
            }
        })
    });
    group.bench_function("add_ref_drop_ref", |b| {
        let token = mlirAsyncRuntimeCreateToken();
        b.iter(|| {
            // SAFETY: live token held by the bench.
            unsafe {
                mlirAsyncRuntimeAddRef(black_box(token).cast(), 1);
                mlirAsyncRuntimeDropRef(token.cast(), 1);
            }
        });
        // SAFETY: both references.
        unsafe {
            mlirAsyncRuntimeEmplaceToken(token);
            mlirAsyncRuntimeDropRef(token.cast(), 1);
        }
    });
    group.bench_function("add_completed_token_to_group", |b| {
        b.iter_custom(|iters| {
            let group = mlirAsyncRuntimeCreateGroup(iters as i64);
            let tokens: Vec<*mut Token> = (0..iters).map(|_| mlirAsyncRuntimeCreateToken()).collect();
            // SAFETY: live objects, references dropped below.
            unsafe {
                for &t in &tokens {
                    mlirAsyncRuntimeEmplaceToken(t);
                }
            }
            let start = Instant::now();
            for &t in &tokens {
                // SAFETY: live objects.
                unsafe { mlirAsyncRuntimeAddTokenToGroup(t, group) };
            }
            let elapsed = start.elapsed();
            // SAFETY: the remaining references.
            unsafe {
                mlirAsyncRuntimeAwaitAllInGroup(group);
                for &t in &tokens {
                    mlirAsyncRuntimeDropRef(t.cast(), 1);
                }
                mlirAsyncRuntimeDropRef(group.cast(), 1);
            }
            elapsed
        })
    });
    group.bench_function("add_pending_token_to_group_then_complete", |b| {
        b.iter_custom(|iters| {
            let group = mlirAsyncRuntimeCreateGroup(iters as i64);
            let tokens: Vec<*mut Token> = (0..iters).map(|_| mlirAsyncRuntimeCreateToken()).collect();
            let start = Instant::now();
            // SAFETY: live objects; all references dropped.
            unsafe {
                for &t in &tokens {
                    mlirAsyncRuntimeAddTokenToGroup(t, group);
                }
                for &t in &tokens {
                    mlirAsyncRuntimeEmplaceToken(t);
                }
                mlirAsyncRuntimeAwaitAllInGroup(group);
            }
            let elapsed = start.elapsed();
            // SAFETY: the remaining references.
            unsafe {
                for &t in &tokens {
                    mlirAsyncRuntimeDropRef(t.cast(), 1);
                }
                mlirAsyncRuntimeDropRef(group.cast(), 1);
            }
            elapsed
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = per_task, per_object
}
criterion_main!(benches);
