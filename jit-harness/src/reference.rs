//! --reference: the program's sequential reference and the comparison of
//! every run's output with it.
//!
//! The reference is the same program lowered without the passes that make
//! tasks out of loops ([`Pipelines::sequential`]: `scf.parallel` becomes
//! plain loops), run once, in a child harness process, on a runtime that runs
//! every task inline in program order when it is queued (the floor runtime,
//! bench/floor). Lines that legitimately depend on the schedule are left out
//! of the comparison on both sides ([`Ignore`]: `// REFERENCE-IGNORE: regex`
//! lines of the program or check file, and `--reference-ignore`), and so
//! are heap addresses (`base@ = 0x...`, [`crate::text::mask_addresses`]).

use crate::cli::Cli;
use crate::error::{Error, Result};
use crate::input::{Format, Input};
use crate::pipeline::Pipelines;
use regex::bytes::Regex;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The directive that marks schedule-dependent output lines.
pub const IGNORE_DIRECTIVE: &str = "REFERENCE-IGNORE:";

/// --reference's one way in: None without it; else the program lowered
/// without its parallelizing passes (MLIR input; LLVM IR input as it is),
/// run once on the reference runtime in a child process (before the
/// runtime under test is loaded), and its output, to compare every run's
/// with.
pub fn prepare(cli: &Cli, input: &Input, ir: &[u8], pipelines: &Pipelines) -> Result<Option<Reference>> {
    let flags = &cli.reference;
    if !flags.reference {
        return Ok(None);
    }
    let check_text = cli.check.as_ref().map(|path| (path.display().to_string(), std::fs::read(path).unwrap_or_default()));
    let mut sources: Vec<(&str, &[u8])> = vec![(&input.name, &input.text)];
    if let Some((name, text)) = &check_text {
        sources.push((name, text));
    }
    let ignore = Ignore::new(&flags.reference_ignore, &sources)?;
    let sequential_ir = match input.format {
        Format::LlvmIr => ir.to_vec(),
        Format::Mlir => crate::lower::to_llvm_ir(input, &pipelines.sequential())?,
    };
    let runtime = match &flags.reference_runtime {
        Some(p) => p.clone(),
        None => default_runtime()?,
    };
    let output = Run {
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
            .map_err(|e| Error::usage(format!("cannot write the reference output to {}: {}", path.display(), crate::input::io_reason(&e))))?;
    }
    Ok(Some(Reference::new(output, ignore)))
}

/// Output lines that the comparison leaves out.
#[derive(Default)]
pub struct Ignore {
    patterns: Vec<Regex>,
}

impl Ignore {
    /// The patterns given with `--reference-ignore` and the
    /// `// REFERENCE-IGNORE: regex` lines of `sources` (name, text).
    pub fn new(flags: &[String], sources: &[(&str, &[u8])]) -> Result<Ignore> {
        let mut patterns = Vec::new();
        let mut add = |pattern: &str, origin: &str| -> Result<()> {
            let re = Regex::new(pattern)
                .map_err(|e| Error::usage(format!("{origin}: bad REFERENCE-IGNORE regex `{pattern}`: {}", crate::error::one_line(e.to_string()))))?;
            patterns.push(re);
            Ok(())
        };
        for f in flags {
            add(f, "--reference-ignore")?;
        }
        for (name, text) in sources {
            for (n, line) in String::from_utf8_lossy(text).lines().enumerate() {
                let Some(at) = line.find(IGNORE_DIRECTIVE) else { continue };
                let before = line[..at].trim();
                // Only as a comment: `// REFERENCE-IGNORE:` (MLIR) or `; ...` (LLVM IR).
                if !(before.ends_with("//") || before.ends_with(';')) {
                    continue;
                }
                let pattern = line[at + IGNORE_DIRECTIVE.len()..].trim();
                if pattern.is_empty() {
                    return Err(Error::usage(format!("{name}:{}: REFERENCE-IGNORE: needs a regex", n + 1)));
                }
                add(pattern, &format!("{name}:{}", n + 1))?;
            }
        }
        Ok(Ignore { patterns })
    }

    fn ignores(&self, line: &[u8]) -> bool {
        self.patterns.iter().any(|p| p.is_match(line))
    }
}

/// The reference output, split into the lines that are compared.
pub struct Reference {
    /// The whole output, addresses masked.
    output: Vec<u8>,
    ignore: Ignore,
}

/// Lines of `text` (1-based line numbers), without a final empty line.
fn lines(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let empty = text.is_empty();
    body.split(|&b| b == b'\n').enumerate().filter(move |_| !empty).map(|(i, l)| (i + 1, l))
}

/// Where two lines first differ, 0-based (the shorter's length if one is a
/// prefix of the other).
fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A differing value begins this far into long lines: from there on it is
/// shown, from a little before.
const EXCERPT_AFTER: usize = 60;

/// A line as the message quotes it: whole when short, from just before
/// byte `at` when the difference lies further in.
fn show(line: Option<(usize, &[u8])>, at: usize) -> String {
    match line {
        Some((_, l)) if at > EXCERPT_AFTER => {
            let mut from = at - 20;
            let text = String::from_utf8_lossy(l);
            while !text.is_char_boundary(from) {
                from -= 1;
            }
            format!("`...{}`", crate::text::cut_line(&text[from..], 120))
        }
        Some((_, l)) => format!("`{}`", crate::text::cut_line(&String::from_utf8_lossy(l), 120)),
        None => "the end of the output".to_string(),
    }
}

/// How a run differs from the reference.
pub struct Mismatch {
    /// One line: where, and both values.
    pub headline: String,
    /// The lines around it on both sides.
    pub details: String,
}

impl Reference {
    pub fn new(output: Vec<u8>, ignore: Ignore) -> Reference {
        Reference { output: crate::text::mask_addresses(&output), ignore }
    }

    /// None if `out` matches the reference line for line (ignored lines
    /// left out on both sides); else the first differing line.
    pub fn compare(&self, out: &[u8]) -> Option<Mismatch> {
        let out = &crate::text::mask_addresses(out)[..];
        let keep = |&(_, l): &(usize, &[u8])| !self.ignore.ignores(l);
        let mut got = lines(out).filter(keep);
        let mut want = lines(&self.output).filter(keep);
        let mut context: Vec<(usize, &[u8])> = Vec::new();
        loop {
            let (g, w) = (got.next(), want.next());
            match (g, w) {
                (None, None) => return None,
                (Some(a), Some(b)) if a.1 == b.1 => {
                    context.push(a);
                    if context.len() > 3 {
                        context.remove(0);
                    }
                }
                _ => {
                    let column = match (g, w) {
                        (Some((_, a)), Some((_, b))) => first_difference(a, b),
                        _ => 0,
                    };
                    let at = match (g, w) {
                        (Some((n, _)), Some(_)) if column > EXCERPT_AFTER => format!("line {n}, column {}", column + 1),
                        (Some((n, _)), _) => format!("line {n}"),
                        (None, Some((n, _))) => format!("line {} (reference line {n})", lines(out).count() + 1),
                        (None, None) => unreachable!(),
                    };
                    let headline = format!(
                        "output differs from the sequential reference at {at}: got {}, reference {}",
                        show(g, column),
                        show(w, column)
                    );
                    let mut details = String::from("same as the reference:\n");
                    for (n, l) in &context {
                        details.push_str(&format!("  {n:>6} | {}\n", crate::text::cut_line(&String::from_utf8_lossy(l), 120)));
                    }
                    if let Some((n, l)) = g {
                        details.push_str(&format!("got:\n  {n:>6} | {}\n", crate::text::cut_line(&String::from_utf8_lossy(l), 120)));
                    } else {
                        details.push_str("got: (end of output)\n");
                    }
                    if let Some((n, l)) = w {
                        details.push_str(&format!("reference:\n  {n:>6} | {}\n", crate::text::cut_line(&String::from_utf8_lossy(l), 120)));
                    } else {
                        details.push_str("reference: (end of output)\n");
                    }
                    let more = got.count() + g.is_some() as usize;
                    details.push_str(&format!("({more} more line(s) of the run's output from here)"));
                    return Some(Mismatch { headline, details });
                }
            }
        }
    }
}

/// Where the reference runtime is when --reference-runtime is not given:
/// the floor as `make floor` builds it (target/floor, next to
/// target/release), or next to the harness, or in ../lib.
pub fn default_runtime() -> Result<PathBuf> {
    crate::resolve::beside_harness(
        &["../floor/libmlir_async_floor.so", "libmlir_async_floor.so", "../lib/libmlir_async_floor.so"],
        "reference runtime",
        "build it with `make floor`, or pass --reference-runtime PATH",
    )
}

/// How the reference runs: the sequential program's LLVM IR, on `runtime`,
/// with the libraries, entry point, LLVM passes and time limit of the run
/// under test.
pub struct Run<'a> {
    pub ir: &'a [u8],
    pub runtime: &'a Path,
    pub shared_libs: &'a [PathBuf],
    pub entry: &'a str,
    pub opt_level: u8,
    pub llvm_passes: Option<&'a str>,
    pub timeout: f64,
}

impl Run<'_> {
    /// Runs the reference once in a child harness (so that neither its
    /// runtime nor a crash of it shares the process with the run under
    /// test); returns its output.
    pub fn output(&self) -> Result<Vec<u8>> {
        let exe = std::env::current_exe().map_err(|e| Error::usage(format!("cannot find the harness executable: {e}")))?;
        let out_file = std::env::temp_dir().join(format!("jit-harness-reference-{}.out", std::process::id()));
        let mut args: Vec<OsString> = vec!["-".into(), "--input-format".into(), "ll".into(), "--runtime".into(), self.runtime.into()];
        for lib in self.shared_libs {
            args.push("--shared-lib".into());
            args.push(lib.into());
        }
        args.extend(["--entry", self.entry, "--repeat", "1", "--no-leak-check", "--name", "reference"].map(OsString::from));
        args.push(format!("-O{}", self.opt_level).into());
        if let Some(p) = self.llvm_passes {
            args.push("--llvm-passes".into());
            args.push(p.into());
        }
        args.push("--timeout".into());
        args.push(self.timeout.to_string().into());
        args.push("--save-output".into());
        args.push(out_file.clone().into());
        let mut child = Command::new(&exe)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // The schedule and trace settings are for the run under test.
            .env_remove("MLIR_ASYNC_RUNTIME_SCHEDULE")
            .env_remove("MLIR_ASYNC_RUNTIME_TRACE")
            .env_remove("MLIR_ASYNC_RUNTIME_STATS")
            .spawn()
            .map_err(|e| Error::usage(format!("cannot start the reference run: {}", crate::input::io_reason(&e))))?;
        let mut pipe = child.stdin.take().expect("stdin was piped");
        let data = self.ir.to_vec();
        let writer = std::thread::spawn(move || {
            let _ = pipe.write_all(&data);
        });
        let done = child.wait_with_output().map_err(|e| Error::usage(format!("the reference run: {}", crate::input::io_reason(&e))));
        let _ = writer.join();
        let done = done?;
        let output = std::fs::read(&out_file);
        let _ = std::fs::remove_file(&out_file);
        if !done.status.success() {
            let err = String::from_utf8_lossy(&done.stderr);
            let why = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message").to_string();
            let status = match done.status.code() {
                Some(c) => format!("exit {c}"),
                None => "killed by a signal".to_string(),
            };
            return Err(Error::failed(format!("the sequential reference run failed ({status}): {why}")));
        }
        output.map_err(|e| Error::failed(format!("the sequential reference run left no output: {}", crate::input::io_reason(&e))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(text: &str, ignore: &[&str]) -> Reference {
        let flags: Vec<String> = ignore.iter().map(|s| s.to_string()).collect();
        Reference::new(text.as_bytes().to_vec(), Ignore::new(&flags, &[]).unwrap())
    }

    #[test]
    fn the_first_differing_line_is_named_with_both_values() {
        let r = reference("a\nb\n1\n", &[]);
        assert!(r.compare(b"a\nb\n1\n").is_none());
        let m = r.compare(b"a\nb\n2\n").unwrap();
        assert_eq!(m.headline, "output differs from the sequential reference at line 3: got `2`, reference `1`");
        let m = r.compare(b"a\nb\n").unwrap();
        assert_eq!(m.headline, "output differs from the sequential reference at line 3 (reference line 3): got the end of the output, reference `1`");
        let m = r.compare(b"a\nb\n1\nx\n").unwrap();
        assert!(m.headline.ends_with("at line 4: got `x`, reference the end of the output"), "{}", m.headline);
    }

    #[test]
    fn a_difference_far_into_a_long_line_is_shown_with_its_column() {
        let prefix = "x".repeat(100);
        let r = reference(&format!("{prefix}1 tail\n"), &[]);
        let m = r.compare(format!("{prefix}2 tail\n").as_bytes()).unwrap();
        let tail = "x".repeat(20);
        assert_eq!(
            m.headline,
            format!("output differs from the sequential reference at line 1, column 101: got `...{tail}2 tail`, reference `...{tail}1 tail`")
        );
    }

    #[test]
    fn ignored_lines_are_left_out_on_both_sides() {
        let r = reference("thread 1\nx\nthread 1\n", &["^thread "]);
        assert!(r.compare(b"x\nthread 7\nthread 3\n").is_none());
        assert!(r.compare(b"y\n").is_some());
    }

    #[test]
    fn directives_are_read_from_comments_only() {
        let src = b"// REFERENCE-IGNORE: ^id \nfoo REFERENCE-IGNORE: nope\n; REFERENCE-IGNORE: ^t\n";
        let i = Ignore::new(&[], &[("p.mlir", src)]).unwrap();
        assert_eq!(i.patterns.len(), 2);
        assert!(Ignore::new(&[], &[("p.mlir", b"// REFERENCE-IGNORE: (")]).is_err());
    }
}
