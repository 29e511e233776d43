//! Stage 7, report: the summary of the runs, its line (or JSON), the exit
//! status, and the progress bar.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::io::IsTerminal;

#[derive(Debug, Default, Clone, Serialize)]
pub struct Summary {
    pub name: String,
    pub runtime: String,
    /// Runs started (a hung run counts).
    pub runs: u64,
    pub passed: u64,
    pub failed: u64,
    pub hung: u64,
    pub leaked: u64,
    /// The runtime's destroy hook did not return within --timeout.
    pub destroy_hung: bool,
    pub median_us: f64,
    pub p99_us: f64,
    pub leak_check: bool,
    /// Why the leak check is off, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leak_check_note: Option<String>,
    /// The first failure's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// Deterministic schedules (--explore, --replay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleSummary>,
    /// --expect-failure's note, when the runs failed as expected: only
    /// their checks, no hang, leak or hung destroy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_failure: Option<String>,
    /// --expect-failure's note, when every run passed all the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unexpected_pass: Option<String>,
}

/// What --explore or --replay did.
#[derive(Debug, Default, Clone, Serialize)]
pub struct ScheduleSummary {
    /// `explore` or `replay`.
    pub mode: String,
    /// `random` or `pct`.
    pub strategy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// PCT's step bound (given, or counted on the calibration run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<u64>,
    pub first_seed: u64,
    /// Schedules run, the last one included even if it did not finish
    /// (PCT's calibration run, with the first seed at depth 1, included).
    pub schedules: u64,
    /// The seed of the schedule that failed (or hung, or crashed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_seed: Option<u64>,
    /// The harness command that replays it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// The environment that replays it under any runner with our runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_env: Option<String>,
}

impl ScheduleSummary {
    fn describe(&self) -> String {
        let what = match (self.strategy.as_str(), self.depth, self.steps) {
            ("pct", Some(d), Some(k)) => format!("pct (depth {d}, {k} step{})", if k == 1 { "" } else { "s" }),
            ("pct", Some(d), None) => format!("pct (depth {d})"),
            (s, _, _) => s.to_string(),
        };
        match (self.mode.as_str(), self.failing_seed) {
            ("replay", Some(seed)) => format!("replayed {what} schedule seed {seed}: failed"),
            ("replay", None) => format!("replayed {what} schedule seed {}: passed", self.first_seed),
            (_, Some(seed)) => format!("{what} schedule seed {seed} failed, after {} schedule(s)", self.schedules),
            _ => format!("{} {what} schedule(s) from seed {}: none failed", self.schedules, self.first_seed),
        }
    }
}

fn fmt_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.1} us")
    }
}

impl Summary {
    /// The program was expected to fail its check (--expect-failure NOTE):
    /// records whether it did, and only that.
    pub fn expect_failure(&mut self, note: &str) {
        let only_checks = self.hung == 0 && self.leaked == 0 && !self.destroy_hung;
        if self.failed > 0 && only_checks {
            self.expected_failure = Some(note.to_string());
        } else if self.runs > 0 && self.passed == self.runs {
            self.unexpected_pass = Some(note.to_string());
        }
    }

    pub fn line(&self) -> String {
        if let Some(note) = &self.expected_failure {
            let mut s = format!("expected failure: {}: {} of {} runs failed their check", self.name, self.failed, self.runs);
            if let Some(schedule) = &self.schedule {
                s.push_str(&format!(" ({})", schedule.describe()));
            }
            return format!("{s}; {note}");
        }
        let mut s = format!(
            "{}: {} runs, {} passed, {} failed, {} hung, {} leaked, median {}, p99 {}",
            self.name,
            self.runs,
            self.passed,
            self.failed,
            self.hung,
            self.leaked,
            fmt_us(self.median_us),
            fmt_us(self.p99_us)
        );
        if self.destroy_hung {
            s.push_str(", destroy hook hung");
        }
        if let Some(note) = &self.leak_check_note {
            s.push_str(&format!(" (leak check off: {note})"));
        }
        if let Some(schedule) = &self.schedule {
            s.push_str("; ");
            s.push_str(&schedule.describe());
            if let (Some(_), Some(replay)) = (schedule.failing_seed, &schedule.replay) {
                s.push_str("\nreplay: ");
                s.push_str(replay);
            }
            if let (Some(_), Some(env)) = (schedule.failing_seed, &schedule.replay_env) {
                s.push_str("\nreplay under mlir-cpu-runner (our runtime): ");
                s.push_str(env);
            }
        }
        if let Some(note) = &self.unexpected_pass {
            s.push_str(&format!(" (passed, though expected to fail: {note})"));
        }
        s
    }

    pub fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string())
    }

    pub fn render(&self, json: bool) -> String {
        if json {
            self.json()
        } else {
            self.line()
        }
    }
}

/// Stage 7's way in: the summary, as --expect-failure reads it, printed
/// (a line, or JSON with --json); returns the exit status: 0 when every run
/// passed and every run asked for ran (an exploration that found nothing
/// ran every schedule), else 1.
pub fn finish(mut summary: Summary, cli: &crate::cli::Cli) -> i32 {
    if let Some(note) = &cli.expect_failure {
        summary.expect_failure(note);
    }
    println!("{}", summary.render(cli.json));
    let all_ran = match &summary.schedule {
        Some(s) => s.failing_seed.is_none(),
        None => summary.runs == cli.repeat,
    };
    i32::from(!(summary.passed == summary.runs && all_ran))
}

/// A progress bar on stderr when it is a terminal and there is more than one run.
pub fn progress(runs: u64) -> ProgressBar {
    progress_of(runs, "runs")
}

/// The same, counting `what` (e.g. `schedules`).
pub fn progress_of(count: u64, what: &str) -> ProgressBar {
    if count <= 1 || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(count), ProgressDrawTarget::stderr_with_hz(10));
    if let Ok(style) = ProgressStyle::with_template(&format!("{{bar:40}} {{pos}}/{{len}} {what} {{per_sec}} eta {{eta}} {{msg}}")) {
        pb.set_style(style);
    }
    pb
}
