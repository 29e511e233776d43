//! Schedule fuzzing: perturbs the runtime's scheduling from a seed, so that
//! repeated runs of the same program explore other interleavings.
//!
//! Enabled by `MLIR_ASYNC_RUNTIME_FUZZ=<seed>` (a decimal `u64`; `random`
//! picks one from the clock and prints it on stderr). Unset, empty, `0` or
//! `off` means off. When on:
//! - before each task or continuation runs, the worker sometimes yields its
//!   core, spins briefly, or sleeps for a few microseconds
//!   ([`before_task`]);
//! - a continuation that a completion made ready sometimes runs at once,
//!   nested in the completing call (as the C++ runtime always does, bounded
//!   here to a small depth), sometimes through the pool's queues, and
//!   otherwise takes its usual path ([`continuation_detour`]).
//!
//! Off costs one relaxed load of a static per hook (the environment is read
//! once). Each thread draws from its own xorshift stream, seeded from the
//! seed and the order in which threads first reach a hook.

use std::cell::Cell;
use std::time::Duration;

use crate::sync::process::{AtomicU64, AtomicU8, Ordering};

/// Environment variable that turns schedule fuzzing on, with its seed.
pub(crate) const FUZZ_ENV: &str = "MLIR_ASYNC_RUNTIME_FUZZ";

const UNKNOWN: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

/// Whether fuzzing is on; `UNKNOWN` until the environment was read.
static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);
static SEED: AtomicU64 = AtomicU64::new(0);
/// Threads that have drawn a stream so far (each gets a different one).
static STREAMS: AtomicU64 = AtomicU64::new(0);

/// Inline continuations deeper than this go their usual way instead, so a
/// long chain cannot overflow the stack.
const MAX_INLINE_DEPTH: u32 = 8;

thread_local! {
    static RNG: Cell<u64> = const { Cell::new(0) };
    static INLINE_DEPTH: Cell<u32> = const { Cell::new(0) };
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
            eprintln!("mlir_async_runtime: {FUZZ_ENV}: seed {nanos}");
            Some(nanos)
        }
        _ => match text.parse::<u64>() {
            Ok(seed) => Some(seed),
            Err(_) => {
                eprintln!(
                    "mlir_async_runtime: ignoring {FUZZ_ENV}={text:?}: \
                     expected a decimal seed, `random` or `off`"
                );
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
        let mut x = rng.get();
        if x == 0 {
            let stream = STREAMS.fetch_add(1, Ordering::Relaxed) + 1;
            // splitmix64 of (seed, stream), never zero.
            let mut z = SEED
                .load(Ordering::Relaxed)
                .wrapping_add(stream.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x = (z ^ (z >> 31)) | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        rng.set(x);
        x
    })
}

/// Called before a task or continuation runs on a worker.
#[inline(always)]
pub(crate) fn before_task() {
    if enabled() {
        perturb();
    }
}

#[cold]
fn perturb() {
    let r = next();
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

/// Where a continuation made ready by a completion should run instead of
/// its usual place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Detour {
    /// The scheduler's usual choice.
    Usual,
    /// Through the pool's queues, where any worker may take it.
    Pool,
    /// At once, nested in the current call.
    Inline,
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
    perturb();
    // Mostly the usual route; a trip through the pool costs a wake-up of
    // another worker (tens of microseconds), so it is the rarest.
    match next() % 64 {
        0 => Detour::Pool,
        1..=12 if INLINE_DEPTH.with(Cell::get) < MAX_INLINE_DEPTH => Detour::Inline,
        _ => Detour::Usual,
    }
}

/// Runs `f` as an inline continuation, counting the nesting depth.
pub(crate) fn run_inline(f: impl FnOnce()) {
    INLINE_DEPTH.with(|d| d.set(d.get() + 1));
    f();
    INLINE_DEPTH.with(|d| d.set(d.get() - 1));
}
