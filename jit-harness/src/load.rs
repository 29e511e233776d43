//! Stages 3 and 4 as one step, load and JIT: the runtime and the other
//! libraries loaded and initialized ([`crate::resolve`]), the program
//! parsed and optimized ([`Parsed`]), its external names resolved in those
//! libraries, and the program compiled ([`Jit`]). The result, a
//! [`Program`], tears itself down in the one safe order.

use crate::cli::Cli;
use crate::error::{Error, Result};
use crate::jit::{EntryKind, Jit, Parsed};
use crate::resolve::Libraries;
use std::path::Path;

/// A program ready to run, with the libraries it runs against.
pub struct Program {
    /// Declared first, so dropped first: the destroy hooks, which wait for
    /// the runtime's tasks, run before the JIT's code is freed.
    pub libs: Libraries,
    pub jit: Jit,
    /// The entry point's address and signature.
    pub entry: usize,
    pub kind: EntryKind,
}

impl Program {
    /// Loads `runtime` and --shared-lib's libraries, then parses and
    /// compiles `ir` (named `name` in messages) against them. On an error
    /// after the load, the libraries' destroy hooks run (their Drop).
    pub fn load(cli: &Cli, runtime: &Path, ir: &[u8], name: &str) -> Result<Program> {
        // Our runtime reads these once, at its first call: set them before
        // it is loaded. It writes the trace and prints the counters at
        // destroy, which comes once, after all runs.
        if let Some(path) = &cli.trace {
            std::env::set_var("MLIR_ASYNC_RUNTIME_TRACE", path);
        }
        if cli.stats {
            std::env::set_var("MLIR_ASYNC_RUNTIME_STATS", "1");
        }
        let libs = Libraries::load(runtime, &cli.shared_libs)?;
        if (cli.trace.is_some() || cli.stats) && libs.introspection.is_none() {
            eprintln!("jit-harness: warning: --trace and --stats need our runtime; {} records nothing", runtime.display());
        }
        if cli.schedules.active() && libs.introspection.and_then(|i| i.schedules()).is_none() {
            return Err(Error::usage(format!(
                "--explore and --replay need our runtime's deterministic schedules; {} has no \
                 rust_mlir_async_runtime_select_schedule",
                runtime.display()
            )));
        }
        let parsed = Parsed::new(ir, name, cli.opt_level, cli.llvm_passes.as_deref(), &cli.entry)?;
        let names: Vec<String> = parsed.externals.iter().map(|(n, _)| n.clone()).collect();
        let symbols: Vec<(String, usize, bool)> = libs
            .resolve(&names)?
            .into_iter()
            .zip(&parsed.externals)
            .map(|((n, addr), (_, is_fn))| (n, addr, *is_fn))
            .collect();
        let kind = parsed.entry_kind;
        let (jit, entry) = Jit::compile(parsed, &symbols, &cli.entry)?;
        Ok(Program { libs, jit, entry, kind })
    }
}
