//! jit-harness: runs an MLIR async program many times in one process with
//! an ORC LLJIT, checking each run's output (FileCheck directives) and the
//! runtime's live objects, with a watchdog for hung runs.
//!
//! Stages, one module each: [`input`] (load), [`lower`] (MLIR to LLVM IR),
//! [`jit`] (LLVM passes and ORC), [`resolve`] (libraries and symbols),
//! [`run`] (runs, capture in [`capture`], watchdog), [`explore`]
//! (deterministic schedules: --explore, --replay), [`filecheck`] (check,
//! with LLVM's FileCheck library), [`report`] (summary and progress).

pub mod capture;
pub mod cli;
pub mod crash;
pub mod error;
pub mod explore;
pub mod filecheck;
pub mod input;
pub mod jit;
pub mod lower;
pub mod reference;
pub mod report;
pub mod resolve;
pub mod run;
pub mod tally;
pub mod text;
pub mod toolchain;
pub mod watchdog;

use clap::error::ErrorKind;
use clap::Parser;
use cli::Cli;
use error::{Error, Result};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

/// Reads the check file once, before anything runs: FileCheck's verdict on
/// it (exit code 2 for a bad one) is reported here, once.
fn read_check_file(path: &std::path::Path, options: &filecheck::Options) -> Result<filecheck::CheckFile> {
    let text = std::fs::read(path)
        .map_err(|e| Error::usage(format!("cannot read check file {}: {}", path.display(), input::io_reason(&e))))?;
    let file = filecheck::CheckFile::parse(&path.display().to_string(), &text, options)
        .map_err(|e| Error::usage(format!("FileCheck rejects the check file: {}", e.headline)))?;
    if let Some(first) = file.warnings().lines().next() {
        eprintln!("jit-harness: warning: FileCheck reads the check file despite: {first}");
    }
    Ok(file)
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

/// --reference: lowers the program without its parallelizing passes (MLIR
/// input), runs it once on the reference runtime, and returns the output to
/// compare every run with.
fn sequential_reference(
    cli: &Cli,
    input: &input::Input,
    ir: &[u8],
    pipeline: &str,
    check: Option<&filecheck::CheckFile>,
) -> Result<reference::Reference> {
    let flags = &cli.reference;
    let mut sources: Vec<(&str, &[u8])> = vec![(&input.name, &input.text)];
    let check_text = match (&cli.check, check) {
        (Some(path), Some(_)) => Some((path.display().to_string(), std::fs::read(path).unwrap_or_default())),
        _ => None,
    };
    if let Some((name, text)) = &check_text {
        sources.push((name, text));
    }
    let ignore = reference::Ignore::new(&flags.reference_ignore, &sources)?;
    let sequential_ir = match input.format {
        input::Format::LlvmIr => ir.to_vec(),
        input::Format::Mlir => {
            let sequential = reference::sequential_pipeline(pipeline);
            lower::mlir_to_llvm_ir(input, &cli.mlir_bin, &sequential, &[])?
        }
    };
    let runtime = match &flags.reference_runtime {
        Some(p) => p.clone(),
        None => reference::default_runtime()?,
    };
    let output = reference::Run {
        ir: &sequential_ir,
        runtime: &runtime,
        shared_libs: &cli.shared_libs,
        entry: &cli.entry,
        opt_level: cli.opt_level,
        llvm_passes: cli.llvm_passes.as_deref(),
        timeout: cli.timeout,
    }
    .output()?;
    if let Some(path) = &flags.save_reference {
        std::fs::write(path, &output)
            .map_err(|e| Error::usage(format!("cannot write the reference output to {}: {}", path.display(), input::io_reason(&e))))?;
    }
    Ok(reference::Reference::new(output, ignore))
}

fn run_cli(cli: &Cli, args: &[std::ffi::OsString]) -> Result<i32> {
    cli.validate()?;
    if let Some(path) = &cli.trace {
        check_writable(path)?;
    }
    let mut check = match &cli.check {
        Some(path) => Some(read_check_file(path, &cli.filecheck.options())?),
        None => None,
    };
    let runtime = match &cli.runtime {
        Some(p) => p.clone(),
        None => resolve::default_runtime()?,
    };
    let input = input::load(&cli.input, cli.input_format)?;
    let pipeline = match &cli.pipeline {
        Some(p) => p.clone(),
        None => lower::default_pipeline(&cli.mlir_bin)?,
    };
    // The mlir-opt that runs the parallelizing passes, and its plugins.
    let front_bin = cli.front_mlir_bin.as_ref().unwrap_or(&cli.mlir_bin);
    let (pipeline, plugins) = if cli.fixed_lowering && input.format == input::Format::Mlir {
        lower::fixed_lowering(&pipeline, front_bin, &cli.pass_plugins)?
    } else {
        (pipeline, cli.pass_plugins.clone())
    };
    lower::check_plugins(&plugins, front_bin)?;
    let ir = match input.format {
        input::Format::LlvmIr => input.text.clone(),
        input::Format::Mlir => match &cli.front_mlir_bin {
            Some(front_bin) => lower::mlir_to_llvm_ir_split(
                &input,
                front_bin,
                &reference::parallelizing_pipeline(&pipeline),
                &plugins,
                &cli.mlir_bin,
                &reference::sequential_pipeline(&pipeline),
            )?,
            None => lower::mlir_to_llvm_ir(&input, &cli.mlir_bin, &pipeline, &plugins)?,
        },
    };
    // Before the runtime under test is loaded: the reference runs in a
    // child process of its own.
    let reference = if cli.reference.reference {
        Some(sequential_reference(cli, &input, &ir, &pipeline, check.as_ref())?)
    } else {
        None
    };
    // Our runtime reads these once, at its first call: set them before it
    // is loaded. It writes the trace and prints the counters at destroy,
    // which comes once, after all runs.
    if let Some(path) = &cli.trace {
        std::env::set_var("MLIR_ASYNC_RUNTIME_TRACE", path);
    }
    if cli.stats {
        std::env::set_var("MLIR_ASYNC_RUNTIME_STATS", "1");
    }
    let mut libs = resolve::Libraries::load(&runtime, &cli.shared_libs)?;
    if (cli.trace.is_some() || cli.stats) && libs.introspection.is_none() {
        eprintln!("jit-harness: warning: --trace and --stats need our runtime; {} records nothing", runtime.display());
    }
    let plan = explore::Plan::from_cli(cli);
    let schedules = libs.introspection.and_then(|i| i.schedules());
    if plan.is_some() && schedules.is_none() {
        libs.destroy();
        return Err(Error::usage(format!(
            "--explore and --replay need our runtime's deterministic schedules; {} has no \
             rust_mlir_async_runtime_select_schedule",
            runtime.display()
        )));
    }
    let built = jit::Jit::build(&ir, &input.name, cli.opt_level, cli.llvm_passes.as_deref(), &cli.entry, |prep| {
        let names: Vec<String> = prep.externals.iter().map(|(n, _)| n.clone()).collect();
        let resolved = libs.resolve(&names)?;
        Ok(resolved.into_iter().zip(prep.externals.iter()).map(|((n, a), (_, is_fn))| (n, a, *is_fn)).collect())
    });
    let (jit, entry, kind) = match built {
        Ok(x) => x,
        Err(e) => {
            libs.destroy();
            return Err(e);
        }
    };

    let leak_check = !cli.no_leak_check && libs.introspection.is_some();
    let note = if cli.no_leak_check {
        Some("disabled by --no-leak-check".to_string())
    } else if libs.introspection.is_none() {
        Some("the runtime has no rust_mlir_async_runtime_stats".to_string())
    } else {
        None
    };
    let summary = report::Summary {
        name: cli.name.clone().unwrap_or_else(|| input.name.clone()),
        runtime: runtime.display().to_string(),
        leak_check,
        leak_check_note: note,
        ..Default::default()
    };
    let tally = Arc::new(Mutex::new(tally::Tally { summary, times: tally::Histogram::new() }));
    let capture = capture::Capture::new()?;
    let runs = plan.as_ref().map_or(cli.repeat, explore::Plan::max_runs);
    let pb = match &plan {
        Some(p) if !p.replay => report::progress_of(p.count, "schedules"),
        _ => report::progress(runs),
    };
    let cfg = run::RunConfig {
        entry,
        kind,
        repeat: cli.repeat,
        introspection: libs.introspection,
        leak_check,
        echo: cli.echo,
        json: cli.json,
        reference,
        save_output: cli.save_output.clone(),
    };
    // The parser bounds the timeout (cli::MAX_TIMEOUT_SECS).
    let timeout = (cli.timeout > 0.0).then(|| Duration::from_secs_f64(cli.timeout));
    let watchdog = watchdog::Watchdog::start(
        timeout,
        watchdog::Context {
            repeat: runs,
            introspection: libs.introspection,
            tally: tally.clone(),
            stdout_fd: capture.saved_stdout(),
            json: cli.json,
            progress: pb.clone(),
        },
    );
    crash::install();
    let summary = match (plan, schedules) {
        (Some(plan), Some(schedules)) => {
            let exploration = explore::Exploration {
                plan,
                schedules,
                libs: &libs,
                args,
                stdout_fd: capture.saved_stdout(),
                json: cli.json,
            };
            exploration.run(&cfg, check.as_mut(), &capture, &watchdog, &tally, &pb)
        }
        _ => run::run_all(&cfg, check.as_mut(), &capture, &watchdog, tally, &pb),
    };
    // Destroy hooks wait for the runtime's tasks (the C++ runtime's can
    // hang on a task that never ends: the watchdog covers it); only then is
    // the JIT'd code freed. The capture lives on for the watchdog's output.
    watchdog.destroy_started();
    libs.destroy();
    watchdog.idle();
    drop(capture);
    drop(jit);
    println!("{}", summary.render(cli.json));
    let all_ran = match &summary.schedule {
        // An exploration that found nothing ran every schedule.
        Some(s) => s.failing_seed.is_none(),
        None => summary.runs == cli.repeat,
    };
    Ok(if summary.passed == summary.runs && all_ran { 0 } else { 1 })
}
