//! Command-line flags (clap derive) and the checks clap cannot express.

use crate::error::{Error, Result};
use clap::{Parser, ValueEnum};
use std::path::PathBuf;

/// The end of --help: what the exit status means.
const EXIT_STATUS: &str = "\
Exit status:
  0    every run passed (output checked, no leak)
  1    a run failed its check or leaked, a run hung, or the runtime's destroy hook hung
       (--timeout); the summary says which
  2    bad input or usage: flags, files, libraries, symbols, a check file FileCheck rejects
  A run that crashes (SIGSEGV, stack overflow included, SIGABRT, ...) is named on stderr
  ('run N crashed: SIGSEGV (stack overflow in thread ...)') and the signal ends the process.";

/// How --explore and --replay choose what runs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// Uniformly among the threads and tasks that can run, at every scheduling point.
    Random,
    /// Probabilistic concurrency testing: random priorities, --depth - 1 priority change points.
    Pct,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// From the file extension; for standard input, from the text.
    Auto,
    /// Textual LLVM IR.
    Ll,
    /// MLIR (any dialects the pipeline lowers, or the LLVM dialect).
    Mlir,
}

/// Runs an MLIR async program (LLVM IR or MLIR) many times in one process
/// with an ORC LLJIT, checking every run's output and leaks.
#[derive(Parser, Debug)]
#[command(name = "jit-harness", version, about, max_term_width = 100, after_help = EXIT_STATUS)]
pub struct Cli {
    /// Input program: a .ll (LLVM IR) or .mlir file, or `-` for standard input.
    pub input: String,

    /// How to read the input.
    #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
    pub input_format: InputFormat,

    /// mlir-opt pass pipeline for MLIR input (an empty string only translates;
    /// default: the pipeline in mlir-tests/lib/pipelines.txt of --mlir-bin's MLIR version,
    /// .../llvm-N/bin, or MLIR 19's).
    #[arg(long, value_name = "PIPELINE")]
    pub pipeline: Option<String>,

    /// Directory with mlir-opt and mlir-translate (default: $LLVM_PREFIX/bin, else the bin
    /// directory of the LLVM this harness was built against).
    #[arg(long, value_name = "DIR", default_value_os_t = crate::toolchain::llvm_prefix().join("bin"))]
    pub mlir_bin: PathBuf,

    /// Run the pipeline's parallelizing passes (async-parallel-for) with the mlir-opt in DIR,
    /// e.g. another MLIR version's, and the rest with --mlir-bin's (the JIT reads LLVM 19's IR
    /// only, so this is how a newer MLIR's async-parallel-for is run and checked).
    #[arg(long, value_name = "DIR")]
    pub front_mlir_bin: Option<PathBuf>,

    /// Load this mlir-opt pass plugin (`--load-pass-plugin`) into the mlir-opt that runs the
    /// pipeline's parallelizing passes (--front-mlir-bin's, else --mlir-bin's); repeatable.
    #[arg(long = "pass-plugin", value_name = "PATH")]
    pub pass_plugins: Vec<PathBuf>,

    /// Run async-parallel-for with our patches (async-parallel-for-fixed, docs/lowering-bugs.md)
    /// instead of MLIR's: renames the pass in --pipeline and loads the plugin `make
    /// lowering-fixes` builds for the MLIR version of that mlir-opt (target/lowering-fixes/, beside
    /// this executable's target/release/; --pass-plugin replaces it).
    #[arg(long)]
    pub fixed_lowering: bool,

    /// Optimization level of the LLVM pass pipeline and code generation (0-3).
    #[arg(short = 'O', value_name = "LEVEL", default_value_t = 0, allow_negative_numbers = true,
          value_parser = parse_opt_level)]
    pub opt_level: u8,

    /// LLVM new-pass-manager pipeline instead of `default<O{LEVEL}>` (-O still sets code generation).
    #[arg(long, value_name = "PASSES")]
    pub llvm_passes: Option<String>,

    /// Async runtime library [default: libmlir_async_runtime.so next to this executable].
    #[arg(long, value_name = "PATH")]
    pub runtime: Option<PathBuf>,

    /// Another library to load and resolve symbols from (repeatable, or comma-separated).
    #[arg(long = "shared-lib", visible_alias = "shared-libs", value_name = "PATH", value_delimiter = ',')]
    pub shared_libs: Vec<PathBuf>,

    /// Entry point: a function `void NAME()` or `i32 NAME()` (an i32 result is
    /// appended to the run's output as a line, as mlir-cpu-runner prints it).
    #[arg(long, short = 'e', value_name = "NAME", default_value = "main")]
    pub entry: String,

    /// Number of runs in this process.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true,
          value_parser = parse_runs)]
    pub repeat: u64,

    /// Seconds one run, or the runtime's destroy hook after the last run, may take before
    /// the watchdog reports it as hung (0: no limit).
    #[arg(long, value_name = "SECS", default_value_t = 60.0, allow_negative_numbers = true,
          value_parser = parse_timeout)]
    pub timeout: f64,

    /// FileCheck file to check each run's standard output against, with LLVM 19's FileCheck
    /// (in-process; verdicts and messages are FileCheck's).
    #[arg(long, value_name = "FILE")]
    pub check: Option<PathBuf>,

    /// Skip the leak check even when the runtime supports it.
    #[arg(long)]
    pub no_leak_check: bool,

    /// Copy each run's output to standard output.
    #[arg(long)]
    pub echo: bool,

    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,

    /// Write a Chrome trace (Perfetto, chrome://tracing) of every task of every run to FILE
    /// (our runtime only: sets MLIR_ASYNC_RUNTIME_TRACE).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// Print the runtime's counters, summed over all runs, on standard error at the end
    /// (our runtime only: sets MLIR_ASYNC_RUNTIME_STATS=1).
    #[arg(long)]
    pub stats: bool,

    /// A label for the summary line (default: the input path).
    #[arg(long, value_name = "TEXT")]
    pub name: Option<String>,

    /// Write the output of the last run to FILE.
    #[arg(long, value_name = "FILE")]
    pub save_output: Option<PathBuf>,

    /// The program is expected to fail its check (lit's XFAIL); NOTE says why, e.g. `XFAIL:
    /// rust-runtime, see docs/lowering-bugs.md`. Runs that fail only their check are not
    /// described (no FileCheck dump) and the summary is one line, `expected failure: NAME: ...;
    /// NOTE`. A hang, a leak or a crash is still described in full. The exit status is the same.
    #[arg(long, value_name = "NOTE")]
    pub expect_failure: Option<String>,

    /// Describe failing runs in full (FileCheck's dump) even with --expect-failure.
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// The sequential reference, under its own heading.
    #[command(flatten)]
    pub reference: ReferenceFlags,

    /// Deterministic schedules, under their own heading.
    #[command(flatten)]
    pub schedules: ScheduleFlags,

    /// FileCheck's options, under their own heading (last, so that the
    /// heading applies to them only).
    #[command(flatten)]
    pub filecheck: FileCheckFlags,
}

/// The sequential reference (src/reference.rs).
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Sequential reference")]
pub struct ReferenceFlags {
    /// Compare every run's output (of --repeat, --explore, --replay; besides --check) with the
    /// program's sequential reference: for MLIR input, the program lowered again without the
    /// passes that make tasks out of loops (async-parallel-for), run once on a runtime that runs
    /// every task inline in program order (--reference-runtime). A run whose output differs
    /// fails, with the first differing line and both values. For LLVM IR input the reference
    /// runs the same IR on that runtime (it checks the runtime, not the lowering).
    #[arg(long)]
    pub reference: bool,

    /// The runtime of the reference run [default: the floor runtime, ../floor/libmlir_async_floor.so
    /// from this executable, as `make floor` builds it].
    #[arg(long, value_name = "PATH", requires = "reference")]
    pub reference_runtime: Option<PathBuf>,

    /// Leave the output lines that match REGEX out of the comparison, on both sides (repeatable;
    /// also read from `// REFERENCE-IGNORE: REGEX` lines of the input and the check file).
    #[arg(long, value_name = "REGEX", requires = "reference")]
    pub reference_ignore: Vec<String>,

    /// Write the reference output to FILE.
    #[arg(long, value_name = "FILE", requires = "reference")]
    pub save_reference: Option<PathBuf>,
}

/// Deterministic schedule exploration and replay (our runtime's
/// MLIR_ASYNC_RUNTIME_SCHEDULE, selected per run through its introspection ABI).
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Deterministic schedules (our runtime; docs/exploration.md)")]
pub struct ScheduleFlags {
    /// Run N deterministic schedules (seeds S, S+1, ...; see --seed), one run each on a fresh
    /// runtime instance in which one thread runs at a time, chosen from the seed; stop at the
    /// first failing run (check, leak, hang, crash, deadlock) and print its seed and the command
    /// that replays it.
    #[arg(long, value_name = "N", conflicts_with_all = ["replay", "repeat"], allow_negative_numbers = true,
          value_parser = parse_schedules)]
    pub explore: Option<u64>,

    /// Run the deterministic schedule of SEED: the same output and trace every time. With
    /// --repeat N, N times on fresh instances, each output compared with the first's.
    #[arg(long, value_name = "SEED", allow_negative_numbers = true, value_parser = parse_seed)]
    pub replay: Option<u64>,

    /// The first seed of --explore [default: 1].
    #[arg(long, value_name = "S", requires = "explore", allow_negative_numbers = true, value_parser = parse_seed)]
    pub seed: Option<u64>,

    /// How the next thread or task is chosen at each scheduling point [default: random].
    #[arg(long, value_enum, value_name = "STRATEGY")]
    pub strategy: Option<StrategyArg>,

    /// PCT's bug depth: a bug that needs D ordering constraints is found with probability at
    /// least 1/(n k^(D-1)) per run [default: 3].
    #[arg(long, value_name = "D", allow_negative_numbers = true, value_parser = parse_depth)]
    pub depth: Option<u32>,

    /// PCT's step bound k: the D-1 priority change points are drawn from steps 1..=K [default:
    /// the steps of one run of the first seed at depth 1, counted before exploring].
    #[arg(long, value_name = "K", allow_negative_numbers = true, value_parser = parse_steps)]
    pub steps: Option<u64>,
}

impl ScheduleFlags {
    /// True with --explore or --replay.
    pub fn active(&self) -> bool {
        self.explore.is_some() || self.replay.is_some()
    }

    pub fn strategy(&self) -> StrategyArg {
        self.strategy.unwrap_or(StrategyArg::Random)
    }
}

/// --explore: a whole number of schedules, at least 1.
fn parse_schedules(s: &str) -> std::result::Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("the number of schedules is a whole number >= 1, e.g. --explore 1000".to_string()),
    }
}

/// --seed, --replay: a decimal u64.
fn parse_seed(s: &str) -> std::result::Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("a seed is a whole number from 0 to {}, e.g. --replay 17", u64::MAX))
}

/// The largest --depth (the runtime's bound).
pub const MAX_DEPTH: u32 = 1000;

/// --depth: 1 to MAX_DEPTH.
fn parse_depth(s: &str) -> std::result::Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(d) if (1..=MAX_DEPTH).contains(&d) => Ok(d),
        _ => Err(format!("the depth is a whole number from 1 to {MAX_DEPTH}, e.g. --depth 3")),
    }
}

/// --steps: at least 1.
fn parse_steps(s: &str) -> std::result::Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(k) if k >= 1 => Ok(k),
        _ => Err("the step bound is a whole number >= 1, e.g. --steps 500".to_string()),
    }
}

/// The options of LLVM's `FileCheck` that --check honours, with its names.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "FileCheck options (as FileCheck takes them; need --check)")]
pub struct FileCheckFlags {
    /// Check prefixes (repeatable, or comma-separated) [default: CHECK].
    #[arg(long = "check-prefix", visible_alias = "check-prefixes", value_name = "PREFIX",
          value_delimiter = ',', requires = "check")]
    pub check_prefixes: Vec<String>,

    /// Comment prefixes (comma-separated) [default: COM,RUN].
    #[arg(long, value_name = "PREFIX", value_delimiter = ',', requires = "check")]
    pub comment_prefixes: Vec<String>,

    /// Add an implicit CHECK-NOT with this pattern to every positive check (repeatable).
    #[arg(long, value_name = "PATTERN", requires = "check")]
    pub implicit_check_not: Vec<String>,

    /// Require all positive matches to cover an entire input line.
    #[arg(long, requires = "check")]
    pub match_full_lines: bool,

    /// Do not treat all horizontal whitespace as equivalent.
    #[arg(long, requires = "check")]
    pub strict_whitespace: bool,

    /// Use case-insensitive matching.
    #[arg(long, requires = "check")]
    pub ignore_case: bool,

    /// Allow a run's output to be empty.
    #[arg(long, requires = "check")]
    pub allow_empty: bool,

    /// Allow prefixes that do not appear in the check file.
    #[arg(long, requires = "check")]
    pub allow_unused_prefixes: bool,

    /// Reset variables not starting with `$` at each CHECK-LABEL block.
    #[arg(long, requires = "check")]
    pub enable_var_scope: bool,
}

impl FileCheckFlags {
    pub fn options(&self) -> crate::filecheck::Options {
        crate::filecheck::Options {
            check_prefixes: self.check_prefixes.clone(),
            comment_prefixes: self.comment_prefixes.clone(),
            implicit_check_not: self.implicit_check_not.clone(),
            strict_whitespace: self.strict_whitespace,
            match_full_lines: self.match_full_lines,
            ignore_case: self.ignore_case,
            allow_empty: self.allow_empty,
            allow_unused_prefixes: self.allow_unused_prefixes,
            enable_var_scope: self.enable_var_scope,
        }
    }
}

/// The longest --timeout: about 31 years (longer is no limit; use 0).
pub const MAX_TIMEOUT_SECS: f64 = 1e9;

/// --repeat: a whole number of runs, at least 1. (Messages say what works:
/// clap's own suggestion for `-1`, `-- -1`, does not.)
fn parse_runs(s: &str) -> std::result::Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("the number of runs is a whole number >= 1, e.g. --repeat 1000".to_string()),
    }
}

/// --timeout: seconds, from 0 (no limit) to MAX_TIMEOUT_SECS.
fn parse_timeout(s: &str) -> std::result::Result<f64, String> {
    let what = || format!("the timeout is a number of seconds from 0 (no limit) to {MAX_TIMEOUT_SECS:e}, e.g. --timeout 30 or 0.5");
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=MAX_TIMEOUT_SECS).contains(&v) => Ok(v),
        _ => Err(what()),
    }
}

/// -O: 0, 1, 2 or 3.
fn parse_opt_level(s: &str) -> std::result::Result<u8, String> {
    match s.trim().parse::<u8>() {
        Ok(n) if n <= 3 => Ok(n),
        _ => Err("the optimization level is 0, 1, 2 or 3, e.g. -O2".to_string()),
    }
}

impl Cli {
    /// Conflicts clap cannot see (they depend on values).
    pub fn validate(&self) -> Result<()> {
        if self.pipeline.is_some() && self.input_format == InputFormat::Ll {
            return Err(Error::usage("--pipeline applies to MLIR input and conflicts with --input-format ll"));
        }
        if self.pipeline.is_some() && self.input_format == InputFormat::Auto && self.input.ends_with(".ll") {
            return Err(Error::usage(format!("--pipeline applies to MLIR input, but {} is LLVM IR", self.input)));
        }
        let ll_input = self.input_format == InputFormat::Ll || (self.input_format == InputFormat::Auto && self.input.ends_with(".ll"));
        for (given, flag) in [
            (self.front_mlir_bin.is_some(), "--front-mlir-bin"),
            (!self.pass_plugins.is_empty(), "--pass-plugin"),
            (self.fixed_lowering, "--fixed-lowering"),
        ] {
            if given && ll_input {
                return Err(Error::usage(format!("{flag} applies to MLIR input")));
            }
        }
        if self.entry.is_empty() {
            return Err(Error::usage("--entry must not be empty"));
        }
        let sched = &self.schedules;
        if !sched.active() {
            for (given, flag) in [(sched.strategy.is_some(), "--strategy"), (sched.depth.is_some(), "--depth"), (sched.steps.is_some(), "--steps")] {
                if given {
                    return Err(Error::usage(format!("{flag} applies to --explore N or --replay SEED")));
                }
            }
        }
        if sched.strategy() != StrategyArg::Pct {
            for (given, flag) in [(sched.depth.is_some(), "--depth"), (sched.steps.is_some(), "--steps")] {
                if given {
                    return Err(Error::usage(format!("{flag} applies to --strategy pct")));
                }
            }
        }
        if let Some(n) = sched.explore {
            let first = sched.seed.unwrap_or(1);
            if first.checked_add(n - 1).is_none() {
                return Err(Error::usage(format!("--seed {first} with --explore {n} runs past the largest seed {}", u64::MAX)));
            }
        }
        Ok(())
    }
}
