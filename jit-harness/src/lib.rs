//! jit-harness: runs an MLIR async program many times in one process with
//! an ORC LLJIT, checking each run's output (FileCheck directives) and the
//! runtime's live objects, with a watchdog for hung runs.
//!
//! One run is a pipeline of stages, a module each with one way in, in the
//! order of [`run_cli`]: [`input`] (read the program), [`lower`] (MLIR to
//! LLVM IR, with the pipelines that [`pipeline`] builds for the run and
//! for the [`reference`]), [`resolve`] (load the libraries: their destroy
//! hooks run when they are dropped), [`jit`] (LLVM passes and ORC; with
//! the load, [`load`]), [`run`] (the runs, fd 1 captured by [`capture`],
//! under the [`watchdog`]; or [`explore`]'s deterministic schedules; both
//! set up and torn down by [`session`]), [`filecheck`] (check each run's
//! output with LLVM's FileCheck library), [`report`] (the summary line and
//! the exit status).

pub mod capture;
pub mod cli;
pub mod crash;
pub mod error;
pub mod explore;
pub mod filecheck;
pub mod input;
pub mod jit;
pub mod load;
pub mod lower;
pub mod pipeline;
pub mod reference;
pub mod report;
pub mod resolve;
pub mod run;
pub mod session;
pub mod tally;
pub mod text;
pub mod toolchain;
pub mod watchdog;

use clap::error::ErrorKind;
use clap::Parser;
use cli::Cli;
use error::{Error, Result};

/// Parses the command line, runs, and returns the process exit code:
/// 0 when every run passed, 1 when a run failed or hung or the destroy
/// hook hung, 2 for bad input or usage (see `--help`).
pub fn main_with_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    install_panic_hook();
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                let _ = e.print();
                return 0;
            }
            _ => {
                // clap's message is several lines; keep those before "Usage:".
                let text = e.render().to_string();
                let lines: Vec<&str> = text
                    .lines()
                    .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                let msg = error::one_line(lines.join(" "));
                let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
                eprintln!("jit-harness: {msg} (see --help)");
                return 2;
            }
        },
    };
    match run_cli(&cli, &args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("jit-harness: {e}");
            e.exit_code()
        }
    }
}

/// No panic message or backtrace reaches the user: one line, exit 1.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".to_string());
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        let line = format!("jit-harness: internal error: {}{at}\n", error::one_line(msg));
        capture::write_fd(2, line.as_bytes());
        // SAFETY: ends the process without running exit handlers (runtime
        // threads may be in any state).
        unsafe { libc::_exit(1) };
    }));
}

/// Fails unless `path` can be written, without leaving a file behind: the
/// runtime writes the trace only at the end, and a trace that cannot be
/// written must stop the harness before it runs, not warn after.
fn check_writable(path: &std::path::Path) -> Result<()> {
    let existed = path.exists();
    if path.is_dir() {
        return Err(Error::usage(format!("cannot write the trace to {}: it is a directory", path.display())));
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| Error::usage(format!("cannot write the trace to {}: {}", path.display(), input::io_reason(&e))))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// One harness run, stage by stage (each stage's module has one way in).
fn run_cli(cli: &Cli, args: &[std::ffi::OsString]) -> Result<i32> {
    cli.validate()?;
    if let Some(path) = &cli.trace {
        check_writable(path)?;
    }
    let check = filecheck::CheckFile::from_cli(cli)?;
    let runtime = match &cli.runtime {
        Some(p) => p.clone(),
        None => resolve::default_runtime()?,
    };
    let input = input::load(&cli.input, cli.input_format)?;
    let pipelines = pipeline::Pipelines::from_cli(cli, input.format)?;
    let ir = lower::to_llvm_ir(&input, &pipelines.main())?;
    // Before the runtime under test is loaded: the reference runs in a
    // child process of its own.
    let reference = reference::prepare(cli, &input, &ir, &pipelines)?;
    let program = load::Program::load(cli, &runtime, &ir, &input.name)?;
    let name = cli.name.clone().unwrap_or_else(|| input.name.clone());
    let session = session::Session { cli, args, runtime: &runtime, name };
    let summary = session.run(program, check, reference)?;
    Ok(report::finish(summary, cli))
}
