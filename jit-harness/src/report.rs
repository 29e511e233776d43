//! Stage 7, report: the tally of runs, the one-line summary (or JSON), and
//! the progress bar.

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
    pub fn line(&self) -> String {
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

/// A progress bar on stderr when it is a terminal and there is more than one run.
pub fn progress(runs: u64) -> ProgressBar {
    if runs <= 1 || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(runs), ProgressDrawTarget::stderr_with_hz(10));
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} runs {per_sec} eta {eta} {msg}") {
        pb.set_style(style);
    }
    pb
}
