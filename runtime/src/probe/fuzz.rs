//! Schedule fuzzing: perturbs the runtime's scheduling from a seed, so that
//! repeated runs of the same program explore other interleavings.
//!
//! Enabled by `MLIR_ASYNC_RUNTIME_FUZZ=<seed>` (a decimal `u64`; `random`
//! picks one from the clock and prints it on stderr). Unset, empty, `0` or
//! `off` means off. When on:
//! - before each task or continuation runs, the worker sometimes yields its
//!   core, spins briefly, or sleeps for a few microseconds
//!   ([`before_task`]);
//! - a continuation that a completion made ready sometimes goes through the
//!   pool's queues, where another worker may run it while the completing
//!   task goes on (and the completing thread sometimes yields its core
//!   right after, so that it does), and otherwise takes its usual path
//!   ([`continuation_detour`]).
//!
//! Every perturbation is one the real scheduler can produce: a delay is
//! what preemption does, and the queue is a route the scheduler takes
//! itself. A continuation never runs nested in the completing call: the
//! real scheduler never does that, and a nested continuation that blocks
//! holds back every waiter after it in the completion's list, which makes
//! deadlocks that cannot happen.
//!
//! Off costs one relaxed load of a static per hook (the environment is read
//! once). Each thread draws from its own PCG stream (`oorandom`), seeded from the
//! seed and the order in which threads first reach a hook.

use std::cell::Cell;
use std::time::Duration;

use oorandom::Rand64;

use crate::sync::process::{AtomicU64, AtomicU8, Ordering};

/// Environment variable that turns schedule fuzzing on, with its seed.
pub(super) const FUZZ_ENV: &str = "MLIR_ASYNC_RUNTIME_FUZZ";

const UNKNOWN: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

/// Whether fuzzing is on; `UNKNOWN` until the environment was read.
static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);
static SEED: AtomicU64 = AtomicU64::new(0);
/// Threads that have drawn a stream so far (each gets a different one).
static STREAMS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's stream, drawn at its first hook.
    static RNG: Cell<Option<Rand64>> = const { Cell::new(None) };
}

/// The address of this thread's stream (the migration check,
/// `exec/threads/migration.rs`). Never inlined, as every read of a
/// thread-local after a task's switch (`sync/mutation.rs`, 8).
#[cfg_attr(feature = "mutation-tls-inline", inline(always))]
#[cfg_attr(not(feature = "mutation-tls-inline"), inline(never))]
pub(crate) fn stream_address() -> usize {
    crate::sync::tls::fresh(RNG.try_with(|rng| rng as *const _ as usize).unwrap_or(0))
}

/// True when fuzzing is on.
#[inline(always)]
pub(crate) fn enabled() -> bool {
    // Relaxed: the flag guards no other memory; every thread that reads
    // the environment decides the same way.
    match MODE.load(Ordering::Relaxed) {
        OFF => false,
        ON => true,
        _ => init(),
    }
}

#[cold]
#[inline(never)]
fn init() -> bool {
    let text = std::env::var(FUZZ_ENV).unwrap_or_default();
    let text = text.trim();
    let seed = match text {
        "" | "0" | "off" => None,
        "random" => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1;
            crate::sync::misuse::warn(&format!("{FUZZ_ENV}: seed {nanos}"));
            Some(nanos)
        }
        _ => match text.parse::<u64>() {
            Ok(seed) => Some(seed),
            Err(_) => {
                crate::sync::misuse::warn(&format!(
                    "ignoring {FUZZ_ENV}={text:?}: expected a decimal seed, `random` or `off`"
                ));
                None
            }
        },
    };
    if let Some(seed) = seed {
        SEED.store(seed, Ordering::Relaxed);
    }
    // The first thread to decide wins; others read the same environment.
    let mode = if seed.is_some() { ON } else { OFF };
    let _ = MODE.compare_exchange(UNKNOWN, mode, Ordering::Relaxed, Ordering::Relaxed);
    MODE.load(Ordering::Relaxed) == ON
}

/// The next number of this thread's stream.
fn next() -> u64 {
    RNG.with(|rng| {
        let mut stream = rng.get().unwrap_or_else(|| {
            // Relaxed: a counter that only has to hand out distinct numbers.
            let number = STREAMS.fetch_add(1, Ordering::Relaxed);
            // One PCG stream per thread: the seed, with the thread's own
            // increment.
            Rand64::new_inc(u128::from(SEED.load(Ordering::Relaxed)), u128::from(number))
        });
        let x = stream.rand_u64();
        rng.set(Some(stream));
        x
    })
}

/// Called before a task or continuation runs on a worker.
#[inline(always)]
pub(crate) fn before_task() {
    when_on(perturb)
}

/// Calls `delay` with the thread's next number, when fuzzing is on.
#[inline(always)]
fn when_on(delay: fn(u64)) {
    if enabled() {
        delay(next());
    }
}

#[cold]
fn perturb(r: u64) {
    // Only one hook in four perturbs at all: programs with a million tasks
    // per run must stay within a few times their normal speed.
    if r % 4 != 0 {
        return;
    }
    let r = r >> 2;
    // Mostly nothing, often a yield or a short spin, rarely a sleep: a
    // sleep costs tens of microseconds even when short, and programs with
    // thousands of tasks per run must stay fast enough to run 10,000 times.
    match r % 64 {
        0..=31 => {}
        32..=45 => std::thread::yield_now(),
        46..=61 => {
            for _ in 0..(r >> 8) % 200 {
                std::hint::spin_loop();
            }
        }
        _ => std::thread::sleep(Duration::from_micros(1 + (r >> 8) % 50)),
    }
}

/// Called where a runtime thread changes what it is: a drainer that just
/// left the drainers' count, a spare thread about to end. A delay there is
/// what preemption at that point would do, and the windows around these
/// transitions are where lifecycle races live.
#[inline(always)]
pub(crate) fn at_transition() {
    when_on(transition_delay)
}

#[cold]
fn transition_delay(r: u64) {
    match r % 4 {
        0 => {}
        1 => std::thread::yield_now(),
        _ => std::thread::sleep(Duration::from_micros(1 + (r >> 8) % 200)),
    }
}

/// Where a continuation made ready by a completion should run instead of
/// its usual place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Detour {
    /// The scheduler's usual choice.
    Usual,
    /// Through the pool's queues, where any worker may take it.
    Pool,
    /// Through the pool's queues, and the completing thread then yields
    /// its core: another worker may well run the continuation before the
    /// completing task goes on.
    PoolThenYield,
}

/// The route for a ready continuation: always `Usual` when fuzzing is off.
#[inline(always)]
pub(crate) fn continuation_detour() -> Detour {
    if enabled() {
        pick_detour()
    } else {
        Detour::Usual
    }
}

#[cold]
fn pick_detour() -> Detour {
    perturb(next());
    // Mostly the usual route; a trip through the pool costs a wake-up of
    // another worker (tens of microseconds), so it is rarer.
    match next() % 64 {
        0..=3 => Detour::Pool,
        4..=6 => Detour::PoolThenYield,
        _ => Detour::Usual,
    }
}
