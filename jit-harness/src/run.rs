//! Stages 5 and 6, run and check: call the entry point N times with fd 1
//! captured, wait for the runtime to go idle, check each run's output and
//! live-object count, and keep a watchdog that reports a hung run.

use crate::capture::{write_fd, Capture};
use crate::filecheck::CheckFile;
use crate::jit::EntryKind;
use crate::report::Summary;
use crate::resolve::Introspection;
use indicatif::ProgressBar;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// At most this many failing runs are described on stderr.
const MAX_REPORTED: u64 = 5;

/// Run times in a fixed log-scale histogram (1% wide buckets from 100 ns to
/// about 1000 s), so that memory stays flat however many runs there are.
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
}

const H_MIN_NS: f64 = 100.0;
const H_STEP: f64 = 1.01;
const H_BUCKETS: usize = 2400;

impl Histogram {
    pub fn new() -> Histogram {
        Histogram { counts: vec![0; H_BUCKETS], total: 0 }
    }
    pub fn add(&mut self, d: Duration) {
        let ns = (d.as_nanos() as f64).max(H_MIN_NS);
        let b = ((ns / H_MIN_NS).ln() / H_STEP.ln()) as usize;
        self.counts[b.min(H_BUCKETS - 1)] += 1;
        self.total += 1;
    }
    /// The q-quantile (nearest rank) in µs, as the middle of its bucket.
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return H_MIN_NS * H_STEP.powf(i as f64 + 0.5) / 1e3;
            }
        }
        0.0
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

/// What the main thread and the watchdog share.
pub struct Tally {
    pub summary: Summary,
    pub times: Histogram,
}

impl Tally {
    pub fn finish(&mut self) -> Summary {
        let round = |us: f64| (us * 10.0).round() / 10.0;
        self.summary.median_us = round(self.times.quantile_us(0.5));
        self.summary.p99_us = round(self.times.quantile_us(0.99));
        self.summary.clone()
    }
}

pub struct RunConfig {
    pub entry: usize,
    pub kind: EntryKind,
    pub repeat: u64,
    pub timeout: Option<Duration>,
    pub introspection: Option<Introspection>,
    pub leak_check: bool,
    pub echo: bool,
    pub json: bool,
}

/// The run in progress, for the watchdog: its number and its start in ns
/// since `base` (0 when no run is in progress).
struct Watch {
    base: Instant,
    run: AtomicU64,
    started_ns: AtomicU64,
}

fn spawn_watchdog(
    watch: Arc<Watch>,
    timeout: Duration,
    cfg_repeat: u64,
    introspection: Option<Introspection>,
    tally: Arc<Mutex<Tally>>,
    stdout_fd: libc::c_int,
    json: bool,
    pb: ProgressBar,
) {
    let poll = (timeout / 10).clamp(Duration::from_millis(5), Duration::from_millis(100));
    std::thread::Builder::new()
        .name("jit-harness-watchdog".into())
        .spawn(move || loop {
            std::thread::sleep(poll);
            let started = watch.started_ns.load(Ordering::Acquire);
            if started == 0 {
                continue;
            }
            let run = watch.run.load(Ordering::Acquire);
            let now = watch.base.elapsed().as_nanos() as u64;
            if now.saturating_sub(started) < timeout.as_nanos() as u64 {
                continue;
            }
            // Still the same run? (It may have ended while we looked.)
            if watch.started_ns.load(Ordering::Acquire) != started {
                continue;
            }
            pb.abandon();
            let counts = match introspection {
                Some(i) => {
                    let s = i.stats();
                    format!(
                        "runtime: {} live tokens, {} live values, {} live groups, {} tasks in flight",
                        s.live_tokens, s.live_values, s.live_groups, s.tasks_in_flight
                    )
                }
                None => "runtime counts unavailable (the runtime has no rust_mlir_async_runtime_stats)".to_string(),
            };
            let msg = format!(
                "jit-harness: run {run} of {cfg_repeat} hung: no result after {:.1} s; {counts}\n",
                timeout.as_secs_f64()
            );
            write_fd(2, msg.as_bytes());
            let summary = match tally.lock() {
                Ok(mut t) => {
                    t.summary.runs = run;
                    t.summary.hung += 1;
                    t.summary.first_failure.get_or_insert_with(|| msg.trim_start_matches("jit-harness: ").trim().to_string());
                    t.finish()
                }
                Err(_) => Summary::default(),
            };
            let mut out = summary.render(json);
            out.push('\n');
            write_fd(stdout_fd, out.as_bytes());
            // A hung JIT thread cannot be cancelled, and exit handlers could
            // wait for it: leave at once.
            // SAFETY: ends the process.
            unsafe { libc::_exit(1) };
        })
        .expect("cannot start the watchdog thread");
}

/// Runs the entry point `cfg.repeat` times; returns the final summary.
pub fn run_all(
    cfg: &RunConfig,
    mut check: Option<&mut CheckFile>,
    capture: &Capture,
    tally: Arc<Mutex<Tally>>,
    pb: &ProgressBar,
) -> Summary {
    let watch = Arc::new(Watch { base: Instant::now(), run: AtomicU64::new(0), started_ns: AtomicU64::new(0) });
    if let Some(t) = cfg.timeout {
        spawn_watchdog(watch.clone(), t, cfg.repeat, cfg.introspection, tally.clone(), capture.saved_stdout(), cfg.json, pb.clone());
    }
    let leak = if cfg.leak_check { cfg.introspection } else { None };
    let mut out = Vec::with_capacity(4096);
    let mut reported = 0u64;
    // Headlines already shown with their details: a repeated failure gets
    // its one line only.
    let mut explained: Vec<String> = Vec::new();
    let mut report = |pb: &ProgressBar, msg: &str, headline: &str, details: &str| {
        reported += 1;
        if reported <= MAX_REPORTED {
            let mut text = format!("jit-harness: {msg}\n");
            if !details.is_empty() && !explained.iter().any(|h| h == headline) {
                explained.push(headline.to_string());
                for line in details.lines() {
                    text.push_str("  ");
                    text.push_str(line);
                    text.push('\n');
                }
            }
            pb.suspend(|| eprint!("{text}"));
        } else if reported == MAX_REPORTED + 1 {
            pb.suspend(|| eprintln!("jit-harness: (further failing runs are counted but not described)"));
        }
    };
    for i in 1..=cfg.repeat {
        let before = leak.map(|x| x.stats());
        watch.run.store(i, Ordering::Release);
        crate::crash::set_current_run(i);
        // +1 so that a run starting at the base instant is not "idle".
        watch.started_ns.store(watch.base.elapsed().as_nanos() as u64 + 1, Ordering::Release);
        capture.begin();
        let t0 = Instant::now();
        // SAFETY: the entry's type was checked against the IR.
        let ret = unsafe {
            match cfg.kind {
                EntryKind::Void => {
                    let f: extern "C" fn() = std::mem::transmute(cfg.entry);
                    f();
                    None
                }
                EntryKind::I32 => {
                    let f: extern "C" fn() -> i32 = std::mem::transmute(cfg.entry);
                    Some(f())
                }
            }
        };
        if let Some(x) = cfg.introspection {
            // Tasks the entry started may still print; the watchdog bounds this.
            while !x.wait_idle(1000) {}
        }
        let dt = t0.elapsed();
        capture.end(&mut out);
        watch.started_ns.store(0, Ordering::Release);
        if let Some(r) = ret {
            out.extend_from_slice(format!("{r}\n").as_bytes());
        }
        if cfg.echo {
            write_fd(1, &out);
        }
        let mut failure: Option<String> = None;
        let (mut headline, mut details) = (String::new(), String::new());
        let mut leaked = false;
        let mut check_failed = false;
        if let Some(cf) = check.as_deref_mut() {
            if let Err(m) = cf.check(&out) {
                check_failed = true;
                failure = Some(format!("run {i}: check failed: {}", m.headline));
                (headline, details) = (m.headline, m.details);
            }
        }
        if let (Some(x), Some(b)) = (leak, before) {
            let a = x.stats();
            if a.live() > b.live() {
                leaked = true;
                let msg = format!(
                    "run {i} leaked {} runtime objects (live tokens {} -> {}, values {} -> {}, groups {} -> {})",
                    a.live() - b.live(),
                    b.live_tokens,
                    a.live_tokens,
                    b.live_values,
                    a.live_values,
                    b.live_groups,
                    a.live_groups
                );
                failure = Some(match failure {
                    Some(f) => format!("{f}; {msg}"),
                    None => msg,
                });
            }
        }
        if let Some(msg) = &failure {
            report(pb, msg, &headline, &details);
        }
        if let Ok(mut t) = tally.lock() {
            t.times.add(dt);
            t.summary.runs = i;
            if failure.is_none() {
                t.summary.passed += 1;
            } else {
                // A run can both fail its check and leak; it counts in both.
                t.summary.failed += check_failed as u64;
                t.summary.leaked += leaked as u64;
                if t.summary.first_failure.is_none() {
                    t.summary.first_failure = failure;
                }
            }
        }
        pb.inc(1);
    }
    crate::crash::set_current_run(0);
    pb.finish_and_clear();
    tally.lock().map(|mut t| t.finish()).unwrap_or_default()
}
