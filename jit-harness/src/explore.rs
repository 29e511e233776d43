//! Deterministic schedules: --explore N runs the program under N seeds of
//! our runtime's deterministic mode (one thread at a time, the next chosen
//! by a seeded strategy), each on a fresh runtime instance, and stops at
//! the first failing run with the command that replays it; --replay SEED
//! runs one seed (N times with --repeat, each output compared with the
//! first's). The runtime reads `MLIR_ASYNC_RUNTIME_SCHEDULE` once, so the
//! harness selects each run's schedule through the introspection ABI
//! (`rust_mlir_async_runtime_select_schedule`) and calls the runtime's
//! destroy hook after each run (docs/exploration.md).

use crate::capture::Capture;
use crate::cli::{Cli, StrategyArg};
use crate::filecheck::CheckFile;
use crate::report::{ScheduleSummary, Summary};
use crate::resolve::{Libraries, Schedules};
use crate::run::{record, run_once, Reporter, RunConfig, RunResult};
use crate::tally::Tally;
use crate::watchdog::Watchdog;
use indicatif::ProgressBar;
use std::ffi::OsString;
use std::sync::Mutex;

/// PCT's depth when --depth is not given.
pub const DEFAULT_DEPTH: u32 = 3;

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// --replay: the same seed `count` times.
    pub replay: bool,
    pub first_seed: u64,
    pub count: u64,
    pub strategy: StrategyArg,
    pub depth: u32,
    /// PCT's step bound; `None`: counted on a calibration run first.
    pub steps: Option<u64>,
}

impl Plan {
    /// The plan of the command line, if it explores or replays.
    pub fn from_cli(cli: &Cli) -> Option<Plan> {
        let s = &cli.schedules;
        let (replay, first_seed, count) = match (s.explore, s.replay) {
            (Some(n), _) => (false, s.seed.unwrap_or(1), n),
            (None, Some(seed)) => (true, seed, cli.repeat),
            (None, None) => return None,
        };
        Some(Plan {
            replay,
            first_seed,
            count,
            strategy: s.strategy(),
            depth: s.depth.unwrap_or(DEFAULT_DEPTH),
            steps: s.steps,
        })
    }

    /// Runs the plan may make: the schedules, and PCT's calibration run.
    pub fn max_runs(&self) -> u64 {
        self.count + u64::from(self.strategy == StrategyArg::Pct && self.steps.is_none())
    }
}

/// One schedule: a seed under a strategy with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Schedule {
    seed: u64,
    strategy: StrategyArg,
    depth: u32,
    steps: u64,
}

impl Schedule {
    /// The runtime's spec (`MLIR_ASYNC_RUNTIME_SCHEDULE`).
    fn spec(&self) -> String {
        match self.strategy {
            StrategyArg::Random => format!("random:{}", self.seed),
            StrategyArg::Pct => format!("pct:{}:{}:{}", self.seed, self.depth, self.steps),
        }
    }
}

/// Quotes `word` for a POSIX shell when it needs it.
fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"_./=:,@%+-".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The variables that change a deterministic schedule besides its spec,
/// as `NAME=VALUE` words: the worker count (the program may read it; by
/// default it is the machine's parallelism, so it is always pinned) and
/// the thread cap, if set.
fn pinned_environment() -> Vec<String> {
    let workers = std::env::var("MLIR_ASYNC_RUNTIME_WORKERS")
        .unwrap_or_else(|_| std::thread::available_parallelism().map_or(1, |n| n.get()).to_string());
    let mut words = vec![format!("MLIR_ASYNC_RUNTIME_WORKERS={}", shell_quote(&workers))];
    if let Ok(cap) = std::env::var("MLIR_ASYNC_RUNTIME_MAX_THREADS") {
        words.push(format!("MLIR_ASYNC_RUNTIME_MAX_THREADS={}", shell_quote(&cap)));
    }
    words
}

/// The command line `args` (the harness's own, program name first) turned
/// into one that replays `schedule`: the exploration's flags replaced by
/// --replay and the schedule's own.
pub fn replay_command(args: &[OsString], seed: u64, strategy: StrategyArg, depth: u32, steps: u64) -> String {
    const REPLACED: [&str; 7] = ["--explore", "--seed", "--replay", "--repeat", "--strategy", "--depth", "--steps"];
    let mut words = pinned_environment();
    let mut skip_value = false;
    for (i, arg) in args.iter().enumerate() {
        let arg = arg.to_string_lossy();
        if skip_value {
            skip_value = false;
            continue;
        }
        if i > 0 && REPLACED.contains(&arg.as_ref()) {
            skip_value = true;
            continue;
        }
        if i > 0 && REPLACED.iter().any(|flag| arg.starts_with(&format!("{flag}="))) {
            continue;
        }
        words.push(shell_quote(&arg));
    }
    words.push(format!("--replay {seed}"));
    if strategy == StrategyArg::Pct {
        words.push(format!("--strategy pct --depth {depth} --steps {steps}"));
    }
    words.join(" ")
}

/// The environment that replays `schedule` under any runner.
fn replay_environment(schedule: &Schedule) -> String {
    let mut words = pinned_environment();
    words.push(format!("MLIR_ASYNC_RUNTIME_SCHEDULE={}", schedule.spec()));
    words.join(" ")
}

/// What the exploration needs besides the runs' own configuration.
pub struct Exploration<'a> {
    pub plan: Plan,
    pub schedules: Schedules,
    pub libs: &'a Libraries,
    /// The harness's command line, for the replay command.
    pub args: &'a [OsString],
    /// The real standard output, for the note a crash prints.
    pub stdout_fd: libc::c_int,
    pub json: bool,
}

/// Counts the schedules started (the one in progress, and PCT's
/// calibration run, included).
fn set_schedules(tally: &Mutex<Tally>, n: u64) {
    if let Ok(mut t) = tally.lock() {
        if let Some(s) = t.summary.schedule.as_mut() {
            s.schedules = n;
        }
    }
}

/// --replay: every run's output (addresses masked) must be the first's;
/// a run whose output differs fails.
fn same_as_first(first: &mut Option<Vec<u8>>, out: &[u8], run: u64, schedule: &Schedule, result: &mut RunResult) {
    let output = crate::text::mask_addresses(out);
    match first {
        None => *first = Some(output),
        Some(first) if *first != output => {
            result.check_failed = true;
            result.add_failure(format!(
                "run {run}: the output differs from run 1's under the same schedule {} ({} vs {} bytes): \
                 the program or the runtime is not deterministic",
                schedule.spec(),
                output.len(),
                first.len()
            ));
        }
        Some(_) => {}
    }
}

/// The failure of run `run` whose instance queued `queued` tasks and ran
/// `ran` under `spec`, if the two differ.
fn lost_tasks(run: u64, spec: &str, queued: u64, ran: u64) -> Option<String> {
    (queued != ran).then(|| {
        format!(
            "run {run}: {queued} task(s) queued, {ran} run under the schedule {spec}: the runtime lost {} task(s)",
            queued.abs_diff(ran)
        )
    })
}

/// The placeholder for the signal's name in a crash note.
const SIGNAL_MARK: char = '\u{1}';

impl Exploration<'_> {
    /// Runs the plan; returns the final summary (with its `schedule` part).
    pub fn run(
        &self,
        cfg: &RunConfig,
        mut check: Option<&mut CheckFile>,
        capture: &Capture,
        watchdog: &Watchdog,
        tally: &Mutex<Tally>,
        pb: &ProgressBar,
    ) -> Summary {
        let plan = &self.plan;
        self.start_summary(tally);
        let mut reporter = Reporter::new(cfg);
        let mut out = Vec::with_capacity(4096);
        let mut run = 0u64;
        let mut steps = plan.steps;
        if plan.strategy == StrategyArg::Pct && steps.is_none() {
            // PCT draws its change points from the steps of a run: count
            // them on one run of the first seed with random priorities
            // only (depth 1), itself a schedule worth checking.
            let calibration = Schedule { seed: plan.first_seed, strategy: StrategyArg::Pct, depth: 1, steps: 1 };
            run += 1;
            set_schedules(tally, 1);
            let result = self.run_schedule(cfg, check.as_deref_mut(), capture, watchdog, tally, run, calibration, &mut out);
            reporter.report(pb, &result);
            record(tally, run, &result);
            if result.failure.is_some() {
                return self.finish(tally, pb, Some(calibration));
            }
            steps = Some(self.counted_steps(tally));
        }
        let mut first_output: Option<Vec<u8>> = None;
        for k in 0..plan.count {
            let seed = if plan.replay { plan.first_seed } else { plan.first_seed + k };
            let schedule = Schedule { seed, strategy: plan.strategy, depth: plan.depth, steps: steps.unwrap_or(1) };
            run += 1;
            set_schedules(tally, run);
            let mut result = self.run_schedule(cfg, check.as_deref_mut(), capture, watchdog, tally, run, schedule, &mut out);
            if plan.replay {
                same_as_first(&mut first_output, &out, run, &schedule, &mut result);
            }
            reporter.report(pb, &result);
            record(tally, run, &result);
            pb.inc(1);
            if result.failure.is_some() {
                return self.finish(tally, pb, Some(schedule));
            }
        }
        self.finish(tally, pb, None)
    }

    /// The summary's `schedule` part, before the first run.
    fn start_summary(&self, tally: &Mutex<Tally>) {
        let plan = &self.plan;
        let pct = plan.strategy == StrategyArg::Pct;
        let summary = ScheduleSummary {
            mode: if plan.replay { "replay" } else { "explore" }.to_string(),
            strategy: if pct { "pct" } else { "random" }.to_string(),
            depth: pct.then_some(plan.depth),
            steps: plan.steps,
            first_seed: plan.first_seed,
            ..Default::default()
        };
        if let Ok(mut t) = tally.lock() {
            t.summary.schedule = Some(summary);
        }
    }

    /// PCT's step bound: the steps the calibration run took (at least 1),
    /// also written into the summary.
    fn counted_steps(&self, tally: &Mutex<Tally>) -> u64 {
        let counted = self.schedules.steps().max(1);
        if let Ok(mut t) = tally.lock() {
            if let Some(s) = t.summary.schedule.as_mut() {
                s.steps = Some(counted);
            }
        }
        counted
    }

    /// One run under `schedule` on a fresh runtime instance.
    #[allow(clippy::too_many_arguments)]
    fn run_schedule(
        &self,
        cfg: &RunConfig,
        check: Option<&mut CheckFile>,
        capture: &Capture,
        watchdog: &Watchdog,
        tally: &Mutex<Tally>,
        run: u64,
        schedule: Schedule,
        out: &mut Vec<u8>,
    ) -> RunResult {
        let spec = schedule.spec();
        if !self.schedules.select(&spec) {
            // The harness builds only specs the runtime takes.
            panic!("the runtime rejects the schedule {spec}");
        }
        // Until the run passes, it is the one a hang (the watchdog) or a
        // crash (the signal handler) reports.
        self.mark_failing(tally, Some(schedule));
        self.prepare_crash_note(tally, run);
        let mut result = run_once(cfg, run, check, capture, watchdog, out);
        // A fresh instance for the next run; a hook that hangs is the
        // watchdog's, and this schedule's.
        watchdog.destroy_started();
        self.libs.destroy_runtime_instance();
        watchdog.idle();
        // Every task the run queued must have run: a schedule that loses
        // one would pass on a false answer.
        if let Some(lost) = self.schedules.task_counts().and_then(|(queued, ran)| lost_tasks(run, &spec, queued, ran)) {
            result.check_failed = true;
            result.failure = Some(match result.failure.take() {
                Some(f) => format!("{f}; {lost}"),
                None => lost,
            });
        }
        crate::crash::set_note(None);
        if result.failure.is_none() {
            self.mark_failing(tally, None);
        }
        result
    }

    /// Sets (or clears) the failing seed and the replay commands.
    fn mark_failing(&self, tally: &Mutex<Tally>, schedule: Option<Schedule>) {
        if let Ok(mut t) = tally.lock() {
            if let Some(s) = t.summary.schedule.as_mut() {
                s.failing_seed = schedule.map(|x| x.seed);
                s.replay = schedule.map(|x| replay_command(self.args, x.seed, x.strategy, x.depth, x.steps));
                s.replay_env = schedule.map(|x| replay_environment(&x));
                if let Some(x) = schedule.filter(|x| x.strategy == StrategyArg::Pct) {
                    // A failing calibration run is depth 1.
                    s.depth = Some(x.depth);
                    s.steps = Some(x.steps);
                }
            }
        }
    }

    /// What the crash handler prints on the real standard output if run
    /// `run` dies: the summary, the run counted as failed.
    fn prepare_crash_note(&self, tally: &Mutex<Tally>, run: u64) {
        let Ok(mut t) = tally.lock() else { return };
        let mut summary = t.finish();
        summary.runs = run;
        summary.failed += 1;
        summary.first_failure = Some(format!("run {run} crashed: {SIGNAL_MARK}"));
        let mut text = summary.render(self.json);
        text.push('\n');
        let mark = if self.json { "\\u0001".to_string() } else { SIGNAL_MARK.to_string() };
        let (text, at) = match text.find(&mark) {
            Some(at) => (format!("{}{}", &text[..at], &text[at + mark.len()..]), Some(at)),
            None => (text, None),
        };
        crate::crash::set_note(Some((self.stdout_fd, text.into_bytes(), at)));
    }

    fn finish(&self, tally: &Mutex<Tally>, pb: &ProgressBar, failing: Option<Schedule>) -> Summary {
        crate::crash::set_current_run(0);
        pb.finish_and_clear();
        self.mark_failing(tally, failing);
        tally.lock().map(|mut t| t.finish()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_replay_command_swaps_the_exploration_flags_for_the_seed() {
        let cmd = replay_command(
            &args(&["jit-harness", "p.mlir", "--explore", "100", "--seed=5", "--check", "my file.mlir", "--strategy", "pct", "--depth", "2"]),
            42,
            StrategyArg::Pct,
            2,
            77,
        );
        let tail = cmd.split_once(" jit-harness ").map(|x| x.1).unwrap_or_else(|| panic!("{cmd}"));
        assert_eq!(tail, "p.mlir --check 'my file.mlir' --replay 42 --strategy pct --depth 2 --steps 77");
        assert!(cmd.starts_with("MLIR_ASYNC_RUNTIME_WORKERS="), "{cmd}");
        let cmd = replay_command(&args(&["h", "p.ll", "--repeat", "3", "--replay", "9"]), 9, StrategyArg::Random, 3, 1);
        assert!(cmd.ends_with(" h p.ll --replay 9"), "{cmd}");
    }

    #[test]
    fn addresses_are_masked_and_nothing_else() {
        let out = b"base@ = 0x55806ff72a30 rank = 1\nvalue 0x1f\n0xABCDEF0\n";
        assert_eq!(crate::text::mask_addresses(out), b"base@ = 0x? rank = 1\nvalue 0x1f\n0x?\n".to_vec());
    }

    #[test]
    fn a_run_whose_queued_count_differs_from_its_run_count_fails() {
        assert_eq!(lost_tasks(3, "random:7", 12, 12), None);
        let msg = lost_tasks(3, "random:7", 12, 10).expect("a failure");
        assert_eq!(msg, "run 3: 12 task(s) queued, 10 run under the schedule random:7: the runtime lost 2 task(s)");
    }

    #[test]
    fn quoting_leaves_plain_words_alone() {
        assert_eq!(shell_quote("--check-prefix=A,B"), "--check-prefix=A,B");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
