//! Command-line flags (clap derive) and the checks clap cannot express.

use crate::error::{Error, Result};
use clap::{Parser, ValueEnum};
use std::path::PathBuf;

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
#[command(name = "jit-harness", version, about, max_term_width = 100)]
pub struct Cli {
    /// Input program: a .ll (LLVM IR) or .mlir file, or `-` for standard input.
    pub input: String,

    /// How to read the input.
    #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
    pub input_format: InputFormat,

    /// mlir-opt pass pipeline for MLIR input (an empty string only translates;
    /// default: MLIR 19's pipeline in mlir-tests/lib/pipelines.txt).
    #[arg(long, value_name = "PIPELINE")]
    pub pipeline: Option<String>,

    /// Directory with mlir-opt and mlir-translate.
    #[arg(long, value_name = "DIR", default_value = "/usr/lib/llvm-19/bin")]
    pub mlir_bin: PathBuf,

    /// Optimization level of the LLVM pass pipeline and code generation (0-3).
    #[arg(short = 'O', value_name = "LEVEL", default_value_t = 0,
          value_parser = clap::value_parser!(u8).range(0..=3))]
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
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub repeat: u64,

    /// Seconds one run may take before the watchdog reports it as hung (0: no limit).
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub timeout: f64,

    /// FileCheck directives to check each run's standard output against.
    #[arg(long, value_name = "FILE")]
    pub check: Option<PathBuf>,

    /// Check prefix (repeatable) [default: CHECK].
    #[arg(long = "check-prefix", visible_alias = "check-prefixes", value_name = "PREFIX",
          value_delimiter = ',', requires = "check")]
    pub check_prefixes: Vec<String>,

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
        if !self.timeout.is_finite() || self.timeout < 0.0 {
            return Err(Error::usage(format!("--timeout must be a number of seconds >= 0, not {}", self.timeout)));
        }
        if self.entry.is_empty() {
            return Err(Error::usage("--entry must not be empty"));
        }
        Ok(())
    }

    pub fn prefixes(&self) -> Vec<String> {
        if self.check_prefixes.is_empty() {
            vec!["CHECK".to_string()]
        } else {
            self.check_prefixes.clone()
        }
    }
}
