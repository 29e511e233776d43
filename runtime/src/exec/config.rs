//! The runtime's configuration, read from the environment when an instance
//! starts: the number of workers and the cap on threads.

use std::time::{Duration, Instant};

use crate::sync::misuse::warn;

/// Environment variable that sets the number of worker threads: how many
/// tasks run in parallel.
pub(super) const WORKERS_ENV: &str = "MLIR_ASYNC_RUNTIME_WORKERS";

/// Environment variable that caps the runtime's threads: workers plus the
/// spare threads that take the place of workers blocked in an `Await*`.
pub(super) const MAX_THREADS_ENV: &str = "MLIR_ASYNC_RUNTIME_MAX_THREADS";

/// Environment variable that turns task stacks off (`0`): every task then
/// runs on its thread's stack, and a task that blocks in an `Await*` blocks
/// its thread, which a spare thread replaces (threads/README.md).
pub(crate) const TASK_STACKS_ENV: &str = "MLIR_ASYNC_RUNTIME_TASK_STACKS";

/// Environment variable that chooses which queued tasks a thread waiting
/// in an `Await*` outside the pool runs ([`WaiterRuns`]; threads/README.md,
/// "A waiting thread runs its producers").
pub(crate) const WAITERS_RUN_TASKS_ENV: &str = "MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS";

/// Which queued tasks a thread waiting in an `Await*` outside the pool (the
/// program's main thread, an embedder's) runs on task stacks meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaiterRuns {
    /// None: every task runs on the pool (`=0`; always with task stacks
    /// off, where a task that blocked would block the waiter under it).
    Nothing,
    /// The default (`=1`, or unset): only the tasks it waits for, those
    /// that produce the awaited token or value or a token of the awaited
    /// group (`threads/binding.rs`). Anything such a task needs from the
    /// caller would deadlock the C++ runtime as well, so running it on the
    /// caller adds no hang; every other task runs on the pool.
    Producers,
    /// The opt-in `=any`: any queued task, its own first, then the queue's,
    /// then other threads' (the policy before issue 39). Faster on some
    /// shapes, and not a drop-in: a task that takes a lock the caller holds
    /// deadlocks, one that waits for a signal the caller gives after its
    /// await holds the await up until it gives up, an unrelated long task
    /// delays the await by its whole run, and the task sees the caller's
    /// thread-locals (threads/README.md lists the hazards).
    Any,
}

/// Environment variable that sets the size of a task's stack, in bytes
/// (default [`platform_stack_size`]): a task that overflows its stack dies
/// with one line naming it.
pub(crate) const TASK_STACK_SIZE_ENV: &str = "MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE";

/// A stack when `RLIMIT_STACK` sets none (unlimited, or unreadable): the
/// main thread's usual 8 MiB, what glibc's threads get then too on most
/// distributions' default limit.
pub(crate) const UNLIMITED_STACK_SIZE: usize = 8 << 20;

/// The smallest stack: a task's (a smaller `MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE`
/// is raised to it), and the smallest default taken from `RLIMIT_STACK`.
const MIN_STACK_SIZE: usize = 64 << 10;

/// The default size of a new stack, task stack or runtime thread, as glibc
/// sizes a new thread's (`pthread_create` without a size): the soft
/// `RLIMIT_STACK` (what `ulimit -s` sets), rounded up to the page size, at
/// least [`MIN_STACK_SIZE`]; [`UNLIMITED_STACK_SIZE`] when the limit is
/// unlimited or cannot be read. So a program that runs under `ulimit -s
/// 65536` gets 64 MiB stacks for its tasks, as the C++ runtime's pool
/// threads (glibc's) do. Reserved, not committed: a stack costs address
/// space, and memory only where a task touched it. Read when an instance
/// starts (its task stacks) and when a runtime thread starts.
pub(crate) fn platform_stack_size() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: writes the limit into `limit`, a live local.
    let read = unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) } == 0;
    let soft = (read && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    stack_size_for_limit(soft, usize::try_from(page).unwrap_or(4096).max(1))
}

/// [`platform_stack_size`] for a soft limit of `soft` bytes (`None`:
/// unlimited or unreadable) and pages of `page` bytes.
fn stack_size_for_limit(soft: Option<u64>, page: usize) -> usize {
    let Some(soft) = soft else {
        return UNLIMITED_STACK_SIZE;
    };
    // A limit beyond the address space (a 32-bit host) is as good as none.
    let size = usize::try_from(soft).unwrap_or(UNLIMITED_STACK_SIZE).max(MIN_STACK_SIZE);
    size.checked_next_multiple_of(page).unwrap_or(UNLIMITED_STACK_SIZE)
}

/// The default cap on the runtime's threads.
pub const DEFAULT_MAX_THREADS: usize = 512;

/// The largest cap accepted: the scheduler counts threads in 14-bit fields
/// (`exec/threads/drainers.rs`).
pub(super) const HARD_MAX_THREADS: usize = (1 << 14) - 1;

/// The most workers accepted: the scheduler counts their permits in a
/// 12-bit field (`exec/threads/drainers.rs`).
pub(super) const MAX_WORKERS: usize = (1 << 12) - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Config {
    /// Tasks that run in parallel: the rayon pool's size, and what
    /// `mlirAsyncRuntimGetNumWorkerThreads` reports (a parallel loop may
    /// split its work by it): the threads that run tasks when nobody
    /// waits.
    pub(crate) workers: usize,
    /// Threads at most, workers included.
    pub(crate) max_threads: usize,
    /// Tasks run on stacks of their own, and one that blocks switches out
    /// (false: `MLIR_ASYNC_RUNTIME_TASK_STACKS=0`).
    pub(crate) task_stacks: bool,
    /// The size of a task's stack, in bytes.
    pub(crate) task_stack_size: usize,
    /// Which queued tasks a thread waiting in an `Await*` outside the pool
    /// runs on task stacks (always [`WaiterRuns::Nothing`] with task stacks
    /// off).
    pub(crate) waiters_run: WaiterRuns,
}

/// The workers when `MLIR_ASYNC_RUNTIME_WORKERS` does not say: one a core,
/// as the C++ runtime's pool has. A waiting thread runs only the tasks it
/// waits for, so it does not stand in for a worker: with one worker fewer,
/// as many tasks as `mlirAsyncRuntimGetNumWorkerThreads` reports that meet
/// at a barrier while the caller polls memory never all run
/// (`runtime/tests/drop_in.rs`). With the opt-in `=any`, one fewer, at
/// least one, as before issue 39: its waiting thread takes that core, as
/// TBB's master thread does (and the barrier shape hangs).
fn default_workers(parallelism: usize, waiters_run: WaiterRuns) -> usize {
    match waiters_run {
        WaiterRuns::Any => parallelism.saturating_sub(1).max(1),
        WaiterRuns::Producers | WaiterRuns::Nothing => parallelism.max(1),
    }
}

impl Config {
    /// The configuration the environment asks for, with one warning line
    /// per variable that is malformed or out of range.
    pub(crate) fn from_env() -> Config {
        let task_stacks =
            switch(TASK_STACKS_ENV, std::env::var(TASK_STACKS_ENV).ok().as_deref(), &mut |line| warn(line));
        // A waiter runs a task on a task stack only: on its own, a task
        // that blocked there would block the waiter under it.
        let waiters_run = if task_stacks {
            waiters_run(std::env::var(WAITERS_RUN_TASKS_ENV).ok().as_deref(), &mut |line| warn(line))
        } else {
            WaiterRuns::Nothing
        };
        let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut config = Config::from_values(
            std::env::var(WORKERS_ENV).ok().as_deref(),
            std::env::var(MAX_THREADS_ENV).ok().as_deref(),
            default_workers(parallelism, waiters_run),
            &mut |line| warn(line),
        );
        config.task_stacks = task_stacks;
        config.waiters_run = waiters_run;
        config.task_stack_size = task_stack_size(
            std::env::var(TASK_STACK_SIZE_ENV).ok().as_deref(),
            platform_stack_size(),
            &mut |line| warn(line),
        );
        config
    }

    /// [`Config::from_env`] on given values, reporting through `warn`.
    pub(super) fn from_values(
        workers: Option<&str>,
        max_threads: Option<&str>,
        default_workers: usize,
        warn: &mut dyn FnMut(&str),
    ) -> Config {
        let mut max = DEFAULT_MAX_THREADS;
        if let Some(text) = max_threads {
            match text.trim().parse::<usize>() {
                Ok(n) if (1..=HARD_MAX_THREADS).contains(&n) => max = n,
                Ok(n) if n > HARD_MAX_THREADS => {
                    warn(&format!(
                        "{MAX_THREADS_ENV}={n} is above the largest cap {HARD_MAX_THREADS}; using {HARD_MAX_THREADS}"
                    ));
                    max = HARD_MAX_THREADS;
                }
                _ => warn(&format!(
                    "ignoring {MAX_THREADS_ENV}={text:?}: expected a positive integer; using {DEFAULT_MAX_THREADS}"
                )),
            }
        }
        // The most workers: the thread cap, and what the scheduler counts.
        let most = max.min(MAX_WORKERS);
        let default_workers = default_workers.clamp(1, most);
        let mut count = default_workers;
        if let Some(text) = workers {
            match text.trim().parse::<usize>() {
                Ok(n) if n > max => {
                    warn(&format!(
                        "{WORKERS_ENV}={n} is above the thread cap {max} ({MAX_THREADS_ENV}); using {most} workers"
                    ));
                    count = most;
                }
                Ok(n) if n > MAX_WORKERS => {
                    warn(&format!("{WORKERS_ENV}={n} is above the most workers, {MAX_WORKERS}; using {MAX_WORKERS}"));
                    count = MAX_WORKERS;
                }
                Ok(n) if n > 0 => count = n,
                _ => warn(&format!(
                    "ignoring {WORKERS_ENV}={text:?}: expected a positive integer; using {default_workers} workers"
                )),
            }
        }
        Config {
            workers: count,
            max_threads: max,
            task_stacks: true,
            task_stack_size: UNLIMITED_STACK_SIZE,
            waiters_run: WaiterRuns::Producers,
        }
    }
}

/// The waiters' policy from `text`: `0`, `off` or `false` run nothing; `1`,
/// `on`, `true`, `producers` or unset the producers of what they await;
/// `any` any task; with one warning line if it is malformed.
fn waiters_run(text: Option<&str>, warn: &mut dyn FnMut(&str)) -> WaiterRuns {
    match text.map(str::trim) {
        Some("any") => WaiterRuns::Any,
        Some("producers") => WaiterRuns::Producers,
        text => {
            if switch(WAITERS_RUN_TASKS_ENV, text, &mut |line| {
                warn(&line.replace("expected 0 or 1; it stays on", "expected 0, 1, producers or any; using producers"))
            }) {
                WaiterRuns::Producers
            } else {
                WaiterRuns::Nothing
            }
        }
    }
}

/// A feature that is on unless the variable `name` turns it off: from its
/// value `text` (`0`, `off` or `false` turn it off; `1`, `on`, `true` or
/// unset keep it), with one warning line if it is malformed.
fn switch(name: &str, text: Option<&str>, warn: &mut dyn FnMut(&str)) -> bool {
    match text.map(str::trim) {
        None | Some("" | "1" | "on" | "true") => true,
        Some("0" | "off" | "false") => false,
        Some(other) => {
            warn(&format!("ignoring {name}={other:?}: expected 0 or 1; it stays on"));
            true
        }
    }
}

/// A task stack's size from `text` (bytes), else `default`, with one
/// warning line if it is malformed or below the smallest accepted.
fn task_stack_size(text: Option<&str>, default: usize, warn: &mut dyn FnMut(&str)) -> usize {
    let Some(text) = text else {
        return default;
    };
    match text.trim().parse::<usize>() {
        Ok(n) if n >= MIN_STACK_SIZE => n,
        Ok(n) => {
            warn(&format!("{TASK_STACK_SIZE_ENV}={n} is below {MIN_STACK_SIZE} bytes; using {MIN_STACK_SIZE}"));
            MIN_STACK_SIZE
        }
        Err(_) => {
            warn(&format!("ignoring {TASK_STACK_SIZE_ENV}={text:?}: expected a size in bytes; using {default}"));
            default
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(workers: Option<&str>, max: Option<&str>) -> (Config, Vec<String>) {
        let mut lines = Vec::new();
        let config = Config::from_values(workers, max, 2, &mut |l| lines.push(l.to_string()));
        (config, lines)
    }

    #[test]
    fn defaults_to_the_machine_and_the_default_cap() {
        let expected = Config {
            workers: 2,
            max_threads: DEFAULT_MAX_THREADS,
            task_stacks: true,
            task_stack_size: UNLIMITED_STACK_SIZE,
            waiters_run: WaiterRuns::Producers,
        };
        assert_eq!(config(None, None), (expected, vec![]));
    }

    #[test]
    fn one_worker_a_core_by_default() {
        assert_eq!(default_workers(2, WaiterRuns::Producers), 2);
        assert_eq!(default_workers(8, WaiterRuns::Nothing), 8);
        assert_eq!(default_workers(0, WaiterRuns::Producers), 1);
        assert_eq!(default_workers(8, WaiterRuns::Any), 7);
        assert_eq!(default_workers(1, WaiterRuns::Any), 1);
    }

    #[test]
    fn reads_the_waiters_policy() {
        let mut lines = Vec::new();
        let mut warn = |l: &str| lines.push(l.to_string());
        assert_eq!(waiters_run(None, &mut warn), WaiterRuns::Producers);
        assert_eq!(waiters_run(Some("1"), &mut warn), WaiterRuns::Producers);
        assert_eq!(waiters_run(Some(" producers "), &mut warn), WaiterRuns::Producers);
        assert_eq!(waiters_run(Some("0"), &mut warn), WaiterRuns::Nothing);
        assert_eq!(waiters_run(Some("off"), &mut warn), WaiterRuns::Nothing);
        assert_eq!(waiters_run(Some("any"), &mut warn), WaiterRuns::Any);
        assert!(lines.is_empty(), "{lines:?}");
        assert_eq!(waiters_run(Some("all"), &mut |l| lines.push(l.to_string())), WaiterRuns::Producers);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("producers or any"), "{lines:?}");
    }

    #[test]
    fn takes_valid_values() {
        let c = config(Some(" 3 "), Some("40")).0;
        assert_eq!((c.workers, c.max_threads), (3, 40));
    }

    #[test]
    fn caps_workers_at_the_thread_cap_with_one_warning() {
        let (c, lines) = config(Some("100000"), None);
        assert_eq!(c.workers, DEFAULT_MAX_THREADS);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains(WORKERS_ENV) && lines[0].contains(MAX_THREADS_ENV), "{lines:?}");
    }

    #[test]
    fn rejects_malformed_values_with_a_warning_each() {
        let (c, lines) = config(Some("0"), Some("many"));
        assert_eq!((c.workers, c.max_threads), (2, DEFAULT_MAX_THREADS));
        assert_eq!(lines.len(), 2, "{lines:?}");
    }

    #[test]
    fn caps_the_cap() {
        let (c, lines) = config(None, Some("1000000"));
        assert_eq!(c.max_threads, HARD_MAX_THREADS);
        assert_eq!(lines.len(), 1);
    }

    #[test]
    fn caps_workers_at_the_most_the_scheduler_counts() {
        let (c, lines) = config(Some("5000"), Some("10000"));
        assert_eq!((c.workers, c.max_threads), (MAX_WORKERS, 10000));
        assert_eq!(lines.len(), 1, "{lines:?}");
        let (c, lines) = config(Some("20000"), Some("20000"));
        assert_eq!((c.workers, c.max_threads), (MAX_WORKERS, HARD_MAX_THREADS));
        assert_eq!(lines.len(), 2, "{lines:?}");
    }

    #[test]
    fn a_cap_below_the_default_workers_lowers_them() {
        let c = config(None, Some("1")).0;
        assert_eq!((c.workers, c.max_threads), (1, 1));
    }

    #[test]
    fn reads_the_task_stacks_switch_and_size() {
        let mut lines = Vec::new();
        let mut warn = |l: &str| lines.push(l.to_string());
        assert!(switch(TASK_STACKS_ENV, None, &mut warn));
        assert!(!switch(TASK_STACKS_ENV, Some("0"), &mut warn));
        assert!(switch(TASK_STACKS_ENV, Some(" 1 "), &mut warn));
        assert!(switch(WAITERS_RUN_TASKS_ENV, None, &mut warn));
        assert!(!switch(WAITERS_RUN_TASKS_ENV, Some("0"), &mut warn));
        let default = 3 << 20;
        assert_eq!(task_stack_size(None, default, &mut warn), default);
        assert_eq!(task_stack_size(Some("1048576"), default, &mut warn), 1 << 20);
        assert!(lines.is_empty(), "{lines:?}");
        assert!(switch(TASK_STACKS_ENV, Some("maybe"), &mut |l| lines.push(l.to_string())));
        assert_eq!(task_stack_size(Some("12"), default, &mut |l| lines.push(l.to_string())), MIN_STACK_SIZE);
        assert_eq!(task_stack_size(Some("big"), default, &mut |l| lines.push(l.to_string())), default);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines.iter().all(|l| l.contains("MLIR_ASYNC_RUNTIME_TASK_STACK")), "{lines:?}");
    }

    #[test]
    fn stacks_follow_the_soft_stack_limit_as_glibc_threads_do() {
        let page = 4096;
        assert_eq!(stack_size_for_limit(None, page), UNLIMITED_STACK_SIZE);
        assert_eq!(stack_size_for_limit(Some(64 << 20), page), 64 << 20);
        assert_eq!(stack_size_for_limit(Some(8 << 20), page), 8 << 20);
        // Rounded up to the page; never below the smallest stack.
        assert_eq!(stack_size_for_limit(Some((1 << 20) + 1), page), (1 << 20) + page);
        assert_eq!(stack_size_for_limit(Some(4096), page), MIN_STACK_SIZE);
        assert_eq!(stack_size_for_limit(Some(3 << 20), 64 << 10), 3 << 20);
        assert_eq!(stack_size_for_limit(Some((3 << 20) + 1), 64 << 10), (3 << 20) + (64 << 10));
        // The process's own limit, as `ulimit -s` shows it.
        let size = platform_stack_size();
        assert!(size >= MIN_STACK_SIZE && size.is_multiple_of(page), "{size}");
    }

    /// A drain whose instance goes idle at the `idle_at`-th slice, each
    /// slice lasting its limit: whether it stayed current until then, and
    /// the slices it waited.
    fn drain(idle_at: u32, outpaced: bool) -> (bool, u32) {
        let slices = std::cell::Cell::new(0);
        let wait_idle = |limit: Duration| {
            slices.set(slices.get() + 1);
            std::thread::sleep(limit);
            slices.get() >= idle_at
        };
        let current = drain_while_current(wait_idle, || 1, || outpaced);
        (current, slices.get())
    }

    #[test]
    fn the_drain_stays_current_past_the_bound_while_every_task_waits() {
        let past_the_bound = 2 * DRAIN_WHILE_CURRENT.as_millis() as u32 / 10;
        assert_eq!(drain(past_the_bound, false), (true, past_the_bound));
    }

    #[test]
    fn the_drain_gives_up_being_current_at_the_bound_while_tasks_run() {
        let past_the_bound = 4 * DRAIN_WHILE_CURRENT.as_millis() as u32 / 10;
        let (current, slices) = drain(past_the_bound, true);
        assert!(!current);
        assert!(slices < past_the_bound, "gave up after {slices} slices");
    }
}

/// The destroy hook drains an instance while it is still current (tasks
/// other threads queue meanwhile join the drain) for at most this long, and
/// while at most [`DRAIN_WHILE_CURRENT_TASKS`] tasks are in flight, as long
/// as some task is queued or running and a thread outside the pool called
/// in since the drain began; then it takes it out and drains only what it
/// accepted. The bound against a thread that queues faster than the tasks
/// finish (issue 27; docs/reliability.md): its later tasks go to the next
/// instance. While every task in flight waits in an `Await*`, or no thread
/// outside the pool called in (a task that computes long, a thread slow to
/// start), nothing outpaces the drain, and the instance stays current
/// however long the wait: the completion that another thread gives later,
/// the continuation it fires and the task it queues then join the drain. (A
/// task or continuation sent to the next instance there ran after the
/// destroy hook returned, in code that the runner had freed:
/// `mlir-tests/destroy-races-continuation.mlir`.) A program must still not
/// let its own threads run compiled code after the destroy hook returns.
pub(crate) const DRAIN_WHILE_CURRENT: Duration = Duration::from_millis(100);

/// See [`DRAIN_WHILE_CURRENT`]: a queue this long is a producer outpacing
/// the tasks (under schedule fuzzing, 100,000 tasks take about 0.4 s).
pub(crate) const DRAIN_WHILE_CURRENT_TASKS: usize = 100_000;

/// The destroy hook's drain while the instance is current:
/// `wait_idle(limit)` (true once idle within `limit`) in short slices
/// until the instance is idle (true) or, while `outpaced()` (some task is
/// queued or running, not only waiting in an `Await*`, and a thread outside
/// the pool called in since the drain began), a bound of
/// [`DRAIN_WHILE_CURRENT`] is passed (false); `in_flight` counts the tasks
/// in flight.
pub(crate) fn drain_while_current(
    mut wait_idle: impl FnMut(Duration) -> bool,
    in_flight: impl Fn() -> usize,
    outpaced: impl Fn() -> bool,
) -> bool {
    const SLICE: Duration = Duration::from_millis(10);
    let start = Instant::now();
    loop {
        if wait_idle(SLICE) {
            return true;
        }
        if (start.elapsed() >= DRAIN_WHILE_CURRENT || in_flight() > DRAIN_WHILE_CURRENT_TASKS) && outpaced() {
            return false;
        }
    }
}
