//! Stages 5 and 6, run and check: call the entry point N times with fd 1
//! captured, wait for the runtime to go idle, check each run's output and
//! live-object count, with the [`Watchdog`] armed during each run.

use crate::capture::{write_fd, Capture};
use crate::filecheck::CheckFile;
use crate::jit::EntryKind;
use crate::report::Summary;
use crate::resolve::{Introspection, Stats};
use crate::tally::Tally;
use crate::watchdog::Watchdog;
use indicatif::ProgressBar;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// At most this many failing runs are described on stderr.
const MAX_REPORTED: u64 = 5;

pub struct RunConfig {
    pub entry: usize,
    pub kind: EntryKind,
    pub repeat: u64,
    pub introspection: Option<Introspection>,
    pub leak_check: bool,
    pub echo: bool,
    pub json: bool,
    /// --reference: the output every run must match.
    pub reference: Option<crate::reference::Reference>,
    /// --save-output: where each run's output is written (the last one stays).
    pub save_output: Option<std::path::PathBuf>,
    /// --expect-failure without --verbose: a run that fails only its check
    /// is counted, not described.
    pub quiet_checks: bool,
}

/// What one run gave.
pub struct RunResult {
    pub elapsed: Duration,
    /// The failure's one-line message (check and leak together), if any.
    pub failure: Option<String>,
    /// FileCheck's headline and details of a failed check.
    pub headline: String,
    pub details: String,
    pub check_failed: bool,
    pub leaked: bool,
}

impl RunResult {
    /// Adds `msg` to the run's failure (after `; ` if it already failed).
    pub fn add_failure(&mut self, msg: String) {
        self.failure = Some(match self.failure.take() {
            Some(f) => format!("{f}; {msg}"),
            None => msg,
        });
    }
}

/// Runs the entry point once (run number `i`, 1-based), with its output
/// captured into `out`, and checks it.
pub fn run_once(
    cfg: &RunConfig,
    i: u64,
    check: Option<&mut CheckFile>,
    capture: &Capture,
    watchdog: &Watchdog,
    out: &mut Vec<u8>,
) -> RunResult {
    let leak = if cfg.leak_check { cfg.introspection } else { None };
    let before = leak.map(|x| x.stats());
    let elapsed = call_entry(cfg, i, capture, watchdog, out);
    if cfg.echo {
        write_fd(1, out);
    }
    let mut result =
        RunResult { elapsed, failure: None, headline: String::new(), details: String::new(), check_failed: false, leaked: false };
    check_output(cfg, i, check, out, &mut result);
    if let Some(path) = &cfg.save_output {
        if let Err(e) = std::fs::write(path, &out[..]) {
            eprintln!("jit-harness: warning: cannot write the output to {}: {}", path.display(), crate::input::io_reason(&e));
        }
    }
    if let (Some(x), Some(b)) = (leak, before) {
        if let Some(msg) = leaked(i, b, x.stats()) {
            result.leaked = true;
            result.add_failure(msg);
        }
    }
    result
}

/// Calls the entry point with fd 1 captured into `out`, under the
/// watchdog, and waits for the runtime to go idle; returns the time taken.
/// An i32 result is appended to the output as a line.
fn call_entry(cfg: &RunConfig, i: u64, capture: &Capture, watchdog: &Watchdog, out: &mut Vec<u8>) -> Duration {
    crate::crash::set_current_run(i);
    watchdog.run_started(i);
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
    let elapsed = t0.elapsed();
    capture.end(out);
    watchdog.idle();
    if let Some(r) = ret {
        out.extend_from_slice(format!("{r}\n").as_bytes());
    }
    elapsed
}

/// The check stage on one output: FileCheck (--check), then the
/// sequential reference (--reference); both failures are kept.
fn check_output(cfg: &RunConfig, i: u64, check: Option<&mut CheckFile>, out: &[u8], result: &mut RunResult) {
    if let Some(cf) = check {
        if let Err(m) = cf.check(out) {
            result.check_failed = true;
            result.failure = Some(format!("run {i}: check failed: {}", m.headline));
            (result.headline, result.details) = (m.headline, m.details);
        }
    }
    if let Some(reference) = &cfg.reference {
        if let Some(m) = reference.compare(out) {
            result.check_failed = true;
            result.add_failure(format!("run {i}: {}", m.headline));
            if result.headline.is_empty() {
                (result.headline, result.details) = (m.headline, m.details);
            }
        }
    }
}

/// The leak of run `i`, if the live objects grew from `b` to `a`.
fn leaked(i: u64, b: Stats, a: Stats) -> Option<String> {
    (a.live() > b.live()).then(|| {
        format!(
            "run {i} leaked {} runtime objects (live tokens {} -> {}, values {} -> {}, groups {} -> {})",
            a.live() - b.live(),
            b.live_tokens,
            a.live_tokens,
            b.live_values,
            a.live_values,
            b.live_groups,
            a.live_groups
        )
    })
}

/// Describes failing runs on stderr: the first few in full, FileCheck's
/// details once per distinct failure; none that only failed an expected
/// check (`RunConfig::quiet_checks`).
pub struct Reporter {
    reported: u64,
    /// Headlines already shown with their details: a repeated failure gets
    /// its one line only.
    explained: Vec<String>,
    quiet_checks: bool,
}

impl Reporter {
    pub fn new(cfg: &RunConfig) -> Reporter {
        Reporter { reported: 0, explained: Vec::new(), quiet_checks: cfg.quiet_checks }
    }

    pub fn report(&mut self, pb: &ProgressBar, result: &RunResult) {
        let Some(msg) = &result.failure else { return };
        if self.quiet_checks && result.check_failed && !result.leaked {
            return;
        }
        self.reported += 1;
        if self.reported <= MAX_REPORTED {
            let mut text = format!("jit-harness: {msg}\n");
            if !result.details.is_empty() && !self.explained.contains(&result.headline) {
                self.explained.push(result.headline.clone());
                for line in result.details.lines() {
                    text.push_str("  ");
                    text.push_str(line);
                    text.push('\n');
                }
            }
            pb.suspend(|| eprint!("{text}"));
        } else if self.reported == MAX_REPORTED + 1 {
            pb.suspend(|| eprintln!("jit-harness: (further failing runs are counted but not described)"));
        }
    }
}

/// Counts run `i` in the tally.
pub fn record(tally: &Mutex<Tally>, i: u64, result: &RunResult) {
    if let Ok(mut t) = tally.lock() {
        t.times.add(result.elapsed);
        t.summary.runs = i;
        if result.failure.is_none() {
            t.summary.passed += 1;
        } else {
            // A run can both fail its check and leak; it counts in both.
            t.summary.failed += result.check_failed as u64;
            t.summary.leaked += result.leaked as u64;
            if t.summary.first_failure.is_none() {
                t.summary.first_failure = result.failure.clone();
            }
        }
    }
}

/// Runs the entry point `cfg.repeat` times; returns the final summary.
pub fn run_all(
    cfg: &RunConfig,
    mut check: Option<&mut CheckFile>,
    capture: &Capture,
    watchdog: &Watchdog,
    tally: Arc<Mutex<Tally>>,
    pb: &ProgressBar,
) -> Summary {
    let mut out = Vec::with_capacity(4096);
    let mut reporter = Reporter::new(cfg);
    for i in 1..=cfg.repeat {
        let result = run_once(cfg, i, check.as_deref_mut(), capture, watchdog, &mut out);
        reporter.report(pb, &result);
        record(&tally, i, &result);
        pb.inc(1);
    }
    crate::crash::set_current_run(0);
    pb.finish_and_clear();
    tally.lock().map(|mut t| t.finish()).unwrap_or_default()
}
