//! Stages 5 and 6 around the runs: the summary's header, the tally the
//! watchdog shares, the progress bar, the capture of fd 1 and the watchdog
//! are set up; the runs go ([`crate::run`]), or the schedules
//! ([`crate::explore`]); then the program is torn down in order: its
//! destroy hooks under the watchdog, the capture, the JIT's code.

use crate::capture::Capture;
use crate::cli::Cli;
use crate::error::Result;
use crate::explore::{Exploration, Plan};
use crate::filecheck::CheckFile;
use crate::load::Program;
use crate::reference::Reference;
use crate::report::Summary;
use crate::run::RunConfig;
use crate::tally::{Histogram, Tally};
use crate::watchdog::{Context, Watchdog};
use indicatif::ProgressBar;
use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the session runs: the command line (and its words, for the replay
/// command), the runtime's path and the program's name for the summary.
pub struct Session<'a> {
    pub cli: &'a Cli,
    pub args: &'a [OsString],
    pub runtime: &'a Path,
    pub name: String,
}

impl Session<'_> {
    /// The stage's one way in: runs `program` (checked against `check`
    /// and `reference`), tears it down, returns the final summary.
    pub fn run(&self, program: Program, mut check: Option<CheckFile>, reference: Option<Reference>) -> Result<Summary> {
        let tally = Arc::new(Mutex::new(Tally { summary: self.header(&program), times: Histogram::new() }));
        let capture = Capture::new()?;
        let plan = Plan::from_cli(self.cli);
        let runs = plan.as_ref().map_or(self.cli.repeat, Plan::max_runs);
        let pb = match &plan {
            Some(p) if !p.replay => crate::report::progress_of(p.count, "schedules"),
            _ => crate::report::progress(runs),
        };
        let cfg = self.run_config(&program, reference);
        let watchdog = self.watchdog(runs, &cfg, &tally, &capture, &pb);
        crate::crash::install();
        let schedules = program.libs.introspection.and_then(|i| i.schedules());
        let summary = match (plan, schedules) {
            (Some(plan), Some(schedules)) => {
                let stdout_fd = capture.saved_stdout();
                let exploration =
                    Exploration { plan, schedules, libs: &program.libs, args: self.args, stdout_fd, json: self.cli.json };
                exploration.run(&cfg, check.as_mut(), &capture, &watchdog, &tally, &pb)
            }
            _ => crate::run::run_all(&cfg, check.as_mut(), &capture, &watchdog, tally, &pb),
        };
        // Destroy hooks wait for the runtime's tasks (the C++ runtime's can
        // hang on a task that never ends: the watchdog covers it); only
        // then is the JIT'd code freed. The capture lives on for the
        // watchdog's output.
        let Program { libs, jit, .. } = program;
        watchdog.destroy_started();
        drop(libs);
        watchdog.idle();
        drop(capture);
        drop(jit);
        Ok(summary)
    }

    /// The summary before any run: name, runtime, whether leaks are checked.
    fn header(&self, program: &Program) -> Summary {
        let cli = self.cli;
        let has_stats = program.libs.introspection.is_some();
        let leak_check_note = if cli.no_leak_check {
            Some("disabled by --no-leak-check".to_string())
        } else if !has_stats {
            Some("the runtime has no rust_mlir_async_runtime_stats".to_string())
        } else {
            None
        };
        Summary {
            name: self.name.clone(),
            runtime: self.runtime.display().to_string(),
            leak_check: !cli.no_leak_check && has_stats,
            leak_check_note,
            ..Default::default()
        }
    }

    fn run_config(&self, program: &Program, reference: Option<Reference>) -> RunConfig {
        let cli = self.cli;
        RunConfig {
            entry: program.entry,
            kind: program.kind,
            repeat: cli.repeat,
            introspection: program.libs.introspection,
            leak_check: !cli.no_leak_check && program.libs.introspection.is_some(),
            echo: cli.echo,
            json: cli.json,
            reference,
            save_output: cli.save_output.clone(),
            quiet_checks: cli.expect_failure.is_some() && !cli.verbose,
        }
    }

    /// The watchdog over `runs` runs and the destroy hooks after them.
    fn watchdog(&self, runs: u64, cfg: &RunConfig, tally: &Arc<Mutex<Tally>>, capture: &Capture, pb: &ProgressBar) -> Watchdog {
        // The parser bounds the timeout (cli::MAX_TIMEOUT_SECS).
        let timeout = (self.cli.timeout > 0.0).then(|| Duration::from_secs_f64(self.cli.timeout));
        let context = Context {
            repeat: runs,
            introspection: cfg.introspection,
            tally: tally.clone(),
            stdout_fd: capture.saved_stdout(),
            json: self.cli.json,
            progress: pb.clone(),
        };
        Watchdog::start(timeout, context)
    }
}
