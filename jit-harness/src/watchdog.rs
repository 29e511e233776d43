//! The watchdog: a thread that ends the harness when a run, or the
//! runtime's destroy hook after the last run, takes longer than --timeout.
//! Neither a hung JIT thread nor a hook blocked in a runtime can be
//! cancelled, so it reports what hung (one line on stderr, the summary on
//! the real standard output) and leaves with exit code 1 at once.

use crate::capture::write_fd;
use crate::report::Summary;
use crate::resolve::Introspection;
use crate::tally::Tally;
use indicatif::ProgressBar;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the main thread is doing, as far as the watchdog cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing that can hang is in progress.
    Idle,
    /// Run `n` (1-based) of the entry point, started at `since`.
    Run { n: u64, since: Instant },
    /// The runtime's destroy hook, called at `since`.
    Destroy { since: Instant },
}

/// What the watchdog reports with.
pub struct Context {
    pub repeat: u64,
    pub introspection: Option<Introspection>,
    pub tally: Arc<Mutex<Tally>>,
    /// The real standard output (fd 1 may be captured when it fires).
    pub stdout_fd: libc::c_int,
    pub json: bool,
    pub progress: ProgressBar,
}

/// Arms and disarms the watchdog; without a timeout it does nothing.
pub struct Watchdog {
    phase: Option<Arc<Mutex<Phase>>>,
}

impl Watchdog {
    /// Starts the watchdog thread when `timeout` is set.
    pub fn start(timeout: Option<Duration>, context: Context) -> Watchdog {
        let Some(timeout) = timeout else { return Watchdog { phase: None } };
        let phase = Arc::new(Mutex::new(Phase::Idle));
        let watched = phase.clone();
        let poll = (timeout / 10).clamp(Duration::from_millis(5), Duration::from_millis(100));
        std::thread::Builder::new()
            .name("jit-harness-watchdog".into())
            .spawn(move || loop {
                std::thread::sleep(poll);
                // A copy: the lock is never held while reporting.
                let now = match watched.lock() {
                    Ok(p) => *p,
                    Err(_) => return,
                };
                match now {
                    Phase::Idle => {}
                    Phase::Run { n, since } if since.elapsed() >= timeout => report_hung_run(&context, n, timeout),
                    Phase::Destroy { since } if since.elapsed() >= timeout => report_hung_destroy(&context, timeout),
                    _ => {}
                }
            })
            .expect("cannot start the watchdog thread");
        Watchdog { phase: Some(phase) }
    }

    fn set(&self, to: Phase) {
        if let Some(p) = &self.phase {
            if let Ok(mut p) = p.lock() {
                *p = to;
            }
        }
    }

    /// Run `n` starts now.
    pub fn run_started(&self, n: u64) {
        self.set(Phase::Run { n, since: Instant::now() });
    }

    /// The runtime's destroy hook is called now.
    pub fn destroy_started(&self) {
        self.set(Phase::Destroy { since: Instant::now() });
    }

    /// The run or the hook returned.
    pub fn idle(&self) {
        self.set(Phase::Idle);
    }
}

fn runtime_counts(introspection: Option<Introspection>) -> String {
    match introspection {
        Some(i) => {
            let s = i.stats();
            format!(
                "runtime: {} live tokens, {} live values, {} live groups, {} tasks in flight",
                s.live_tokens, s.live_values, s.live_groups, s.tasks_in_flight
            )
        }
        None => "runtime counts unavailable (the runtime has no rust_mlir_async_runtime_stats)".to_string(),
    }
}

fn report_hung_run(c: &Context, n: u64, timeout: Duration) -> ! {
    let msg = format!(
        "run {n} of {} hung: no result after {:.1} s; {}",
        c.repeat,
        timeout.as_secs_f64(),
        runtime_counts(c.introspection)
    );
    finish(c, msg, |s| {
        s.runs = n;
        s.hung += 1;
    })
}

fn report_hung_destroy(c: &Context, timeout: Duration) -> ! {
    let msg = format!(
        "the runtime's destroy hook hung: no return after {:.1} s, after the last of {} runs (a task it waits for never finished); {}",
        timeout.as_secs_f64(),
        c.repeat,
        runtime_counts(c.introspection)
    );
    finish(c, msg, |s| s.destroy_hung = true)
}

/// Prints `msg` and the summary (updated by `update`), then ends the process.
fn finish(c: &Context, msg: String, update: impl FnOnce(&mut Summary)) -> ! {
    c.progress.abandon();
    write_fd(2, format!("jit-harness: {msg}\n").as_bytes());
    let summary = match c.tally.lock() {
        Ok(mut t) => {
            update(&mut t.summary);
            t.summary.first_failure.get_or_insert(msg);
            t.finish()
        }
        Err(_) => Summary::default(),
    };
    let mut out = summary.render(c.json);
    out.push('\n');
    write_fd(c.stdout_fd, out.as_bytes());
    // Exit handlers could wait for the hung thread: leave at once.
    // SAFETY: ends the process.
    unsafe { libc::_exit(1) }
}
