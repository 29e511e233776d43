//! Stage 6, check: each run's output against a FileCheck file, with LLVM
//! 19's own FileCheck library (libLLVM-19, the code behind the `FileCheck`
//! tool) called in-process through a small C++ shim (shim/filecheck_shim.h).
//! Verdicts are therefore FileCheck's: every directive, regex, variable,
//! numeric expression and option behaves as in `FileCheck`, and
//! tests/filecheck_vs_llvm.rs compares the two on the same files.
//!
//! The check file is read once ([`CheckFile::parse`]); [`CheckFile::check`]
//! then checks one output at a time, each from a clean state (no variable
//! from an earlier output is visible). Because of that, FileCheck's verdict
//! and messages are a function of the output's bytes alone, so the verdicts
//! of the last few distinct outputs are kept and an identical output (the
//! common case over thousands of runs) costs a comparison of bytes instead
//! of a FileCheck run (tens to hundreds of microseconds for the corpus). Diagnostics never reach stderr
//! directly: a failure comes back as a [`Mismatch`] with FileCheck's
//! messages and a `--dump-input=fail`-style dump, lines cut to
//! [`crate::text::MAX_LINE`].
//!
//! Exit-code equivalence with `FileCheck CHECKS --input-file OUTPUT`:
//! 2 (bad check file or prefixes) = `parse` fails; 2 (empty input without
//! --allow-empty) = [`MismatchKind::EmptyInput`]; 1 = [`MismatchKind::Failed`];
//! 0 = `Ok(())`.

mod dump;
mod ffi;

use crate::text::{cut_line, cut_lines, strip_ansi, MAX_LINE};
pub use dump::Diag;
use std::collections::VecDeque;
use std::fmt;
use std::ptr::NonNull;

/// Distinct outputs whose verdicts are remembered.
const RECENT_OUTPUTS: usize = 8;
/// Outputs longer than this are always checked afresh (bounds the memory
/// the remembered outputs take to RECENT_OUTPUTS times this).
const MAX_REMEMBERED_OUTPUT: usize = 1 << 20;

/// How the output is named in diagnostics (`<stdout>:3:1: note: ...`).
pub const INPUT_NAME: &str = "<stdout>";

/// FileCheck's options, by their FileCheck names.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// --check-prefixes (empty: FileCheck's default, CHECK).
    pub check_prefixes: Vec<String>,
    /// --comment-prefixes (empty: FileCheck's default, COM and RUN).
    pub comment_prefixes: Vec<String>,
    /// --implicit-check-not, each.
    pub implicit_check_not: Vec<String>,
    pub strict_whitespace: bool,
    pub match_full_lines: bool,
    pub ignore_case: bool,
    pub allow_empty: bool,
    pub allow_unused_prefixes: bool,
    pub enable_var_scope: bool,
}

/// A check file that FileCheck rejects (its exit code 2).
#[derive(Debug, Clone)]
pub struct CheckFileError {
    /// FileCheck's first diagnostic line, e.g.
    /// `t.check:3:8: error: found empty check string with prefix 'CHECK:'`.
    pub headline: String,
    /// All of FileCheck's diagnostics (lines cut).
    pub messages: String,
}

impl fmt::Display for CheckFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.headline)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MismatchKind {
    /// The output does not satisfy the checks (FileCheck's exit code 1).
    Failed,
    /// The output is empty and --allow-empty is off (FileCheck's exit code 2).
    EmptyInput,
}

/// Why an output failed its check.
#[derive(Debug, Clone)]
pub struct Mismatch {
    pub kind: MismatchKind,
    /// One line: FileCheck's first diagnostic, e.g.
    /// `t.check:3:16: error: CHECK-NEXT: expected string not found in input`.
    pub headline: String,
    /// The rest of FileCheck's diagnostics (the directive and input lines
    /// with carets, notes) and the input dump; may be empty. Lines cut.
    pub details: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.headline)
    }
}

/// A parsed check file, ready to check any number of outputs.
pub struct CheckFile {
    raw: NonNull<ffi::FcsChecker>,
    allow_empty: bool,
    warnings: String,
    /// Recently checked outputs and their verdicts, most recent first.
    recent: VecDeque<(Vec<u8>, Result<(), Mismatch>)>,
}

/// FileCheck's text as the harness prints it: no colours, no long lines.
fn clean(bytes: &[u8]) -> String {
    cut_lines(&strip_ansi(&String::from_utf8_lossy(bytes)), MAX_LINE)
}

fn split_headline(text: &str) -> (String, String) {
    let text = text.trim_end_matches('\n');
    match text.split_once('\n') {
        Some((h, rest)) => (h.to_string(), format!("{rest}\n")),
        None => (text.to_string(), String::new()),
    }
}

impl CheckFile {
    /// Reads a check file as `FileCheck NAME` would (`name` appears in
    /// diagnostics); fails where FileCheck exits with code 2 before reading
    /// its input.
    pub fn parse(name: &str, text: &[u8], options: &Options) -> Result<CheckFile, CheckFileError> {
        let strs = |v: &[String]| v.iter().map(|s| ffi::FcsStr::new(s.as_bytes())).collect::<Vec<_>>();
        let (check, comment, implicit) =
            (strs(&options.check_prefixes), strs(&options.comment_prefixes), strs(&options.implicit_check_not));
        let opts = ffi::FcsOptions {
            check_prefixes: check.as_ptr(),
            check_prefix_count: check.len(),
            comment_prefixes: comment.as_ptr(),
            comment_prefix_count: comment.len(),
            implicit_check_not: implicit.as_ptr(),
            implicit_check_not_count: implicit.len(),
            strict_whitespace: options.strict_whitespace as i32,
            match_full_lines: options.match_full_lines as i32,
            ignore_case: options.ignore_case as i32,
            allow_unused_prefixes: options.allow_unused_prefixes as i32,
            enable_var_scope: options.enable_var_scope as i32,
            allow_empty: options.allow_empty as i32,
        };
        // SAFETY: every pointer in `opts` and both strings live across the
        // call; the shim copies what it keeps and never returns null.
        let raw = unsafe { ffi::fcs_parse(&opts, ffi::FcsStr::new(name.as_bytes()), ffi::FcsStr::new(text)) };
        let raw = NonNull::new(raw).expect("fcs_parse never returns null");
        let mut file = CheckFile { raw, allow_empty: options.allow_empty, warnings: String::new(), recent: VecDeque::new() };
        // SAFETY: a live checker.
        if unsafe { ffi::fcs_is_valid(file.raw.as_ptr()) } == 1 {
            file.warnings = clean(file.messages());
            return Ok(file);
        }
        let messages = clean(file.messages());
        let (headline, _) = split_headline(&messages);
        let headline = if headline.is_empty() { "FileCheck rejects the check file".to_string() } else { headline };
        Err(CheckFileError { headline, messages })
    }

    /// Stage 6's way in at the start: --check's file read once, before
    /// anything runs (FileCheck's verdict on it, exit code 2 for a bad one,
    /// reported here, once); None without --check.
    pub fn from_cli(cli: &crate::cli::Cli) -> crate::error::Result<Option<CheckFile>> {
        use crate::error::Error;
        let Some(path) = &cli.check else { return Ok(None) };
        let text = std::fs::read(path)
            .map_err(|e| Error::usage(format!("cannot read check file {}: {}", path.display(), crate::input::io_reason(&e))))?;
        let file = CheckFile::parse(&path.display().to_string(), &text, &cli.filecheck.options())
            .map_err(|e| Error::usage(format!("FileCheck rejects the check file: {}", e.headline)))?;
        if let Some(first) = file.warnings().lines().next() {
            eprintln!("jit-harness: warning: FileCheck reads the check file despite: {first}");
        }
        Ok(Some(file))
    }

    /// What FileCheck printed while reading a check file it accepted (it
    /// goes on after some errors, e.g. an invalid --implicit-check-not
    /// regex, which then never matches); usually empty.
    pub fn warnings(&self) -> &str {
        &self.warnings
    }

    /// The shim's messages of the last call.
    fn messages(&self) -> &[u8] {
        // SAFETY: the string lives until the next call on this checker,
        // which needs `&mut self` while the returned borrow of `self` lives.
        unsafe { ffi::fcs_messages(self.raw.as_ptr()).bytes() }
    }

    /// Checks one output (the bytes a run printed) as `FileCheck ... <
    /// OUTPUT` would; an output identical to one of the last few checked
    /// gets that one's verdict without running FileCheck again.
    pub fn check(&mut self, output: &[u8]) -> Result<(), Mismatch> {
        if let Some(i) = self.recent.iter().position(|(o, _)| o.as_slice() == output) {
            let entry = self.recent.remove(i).expect("index from position");
            let verdict = entry.1.clone();
            self.recent.push_front(entry);
            return verdict;
        }
        let verdict = self.check_afresh(output);
        if output.len() <= MAX_REMEMBERED_OUTPUT {
            if self.recent.len() == RECENT_OUTPUTS {
                self.recent.pop_back();
            }
            self.recent.push_front((output.to_vec(), verdict.clone()));
        }
        verdict
    }

    /// Checks one output with FileCheck, whatever was checked before (what
    /// [`check`](Self::check) does for an output it has not seen lately).
    pub fn check_afresh(&mut self, output: &[u8]) -> Result<(), Mismatch> {
        if output.is_empty() && !self.allow_empty {
            return Err(Mismatch {
                kind: MismatchKind::EmptyInput,
                headline: "the output is empty (FileCheck rejects an empty input; --allow-empty accepts it)".to_string(),
                details: String::new(),
            });
        }
        let name = ffi::FcsStr::new(INPUT_NAME.as_bytes());
        // SAFETY: a live, valid checker (parse returned it only if valid);
        // `output` lives across the call.
        let verdict = unsafe { ffi::fcs_check(self.raw.as_ptr(), name, ffi::FcsStr::new(output)) };
        match verdict {
            1 => Ok(()),
            0 => Err(self.mismatch()),
            _ => Err(Mismatch {
                kind: MismatchKind::Failed,
                headline: format!("FileCheck could not check the output: {}", cut_line(&clean(self.messages()), MAX_LINE)),
                details: String::new(),
            }),
        }
    }

    /// The diagnostics of the last (failed) check, with the input dump.
    fn mismatch(&self) -> Mismatch {
        let messages = clean(self.messages());
        let (headline, mut details) = split_headline(&messages);
        let diags = self.diags();
        // SAFETY: the input lives until the next call on this checker.
        let input = unsafe { ffi::fcs_canonical_input(self.raw.as_ptr()).bytes() };
        details.push_str(&cut_lines(&dump::render(input, &diags), MAX_LINE));
        let headline = if headline.is_empty() { "the output does not match the checks".to_string() } else { headline };
        Mismatch { kind: MismatchKind::Failed, headline, details }
    }

    /// The structured diagnostics of the last check.
    pub fn diags(&self) -> Vec<Diag> {
        // SAFETY: a live checker; indices below the count; strings copied
        // before the next call.
        unsafe {
            let n = ffi::fcs_diag_count(self.raw.as_ptr());
            (0..n)
                .map(|i| {
                    let d = ffi::fcs_get_diag(self.raw.as_ptr(), i);
                    Diag {
                        check_id: d.check_id,
                        check_abbrev: String::from_utf8_lossy(d.check_abbrev.bytes()).into_owned(),
                        check_line: d.check_line,
                        implicit_index: d.implicit_index,
                        match_type: d.match_type,
                        start: (d.input_start_line, d.input_start_col),
                        end: (d.input_end_line, d.input_end_col),
                        note: String::from_utf8_lossy(d.note.bytes()).into_owned(),
                    }
                })
                .collect()
        }
    }
}

impl Drop for CheckFile {
    fn drop(&mut self) {
        // SAFETY: the checker is ours and freed once.
        unsafe { ffi::fcs_free(self.raw.as_ptr()) };
    }
}

#[cfg(test)]
mod test;
