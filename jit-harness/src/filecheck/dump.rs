//! The input dump of a failed check, as `FileCheck --dump-input=fail` prints
//! it (the tool's default): the input lines near each error, numbered, with
//! annotation lines under them that point at what FileCheck found or looked
//! for. The tool's dump code is not in LLVM's FileCheck library, so this is
//! a port of it (llvm/utils/FileCheck/FileCheck.cpp: BuildInputAnnotations,
//! DumpAnnotatedInput, filter `error`, context 5, no colours) working on the
//! library's structured diagnostics; tests/filecheck_vs_llvm.rs compares its
//! output with the tool's byte for byte.
//!
//! ```text
//! <<<<<<
//!            1: 40
//!            2: 41
//!            3: 42
//! next:3'0     X~~ error: no match found
//! next:3'1     ?   possible intended match
//! >>>>>>
//! ```
//! `X~~` no match in this range, `!~~` a match that is an error (a CHECK-NOT
//! match, a CHECK-NEXT on the wrong line), `?` a possible intended match. A
//! label is `KIND:LINE` (the directive's line in the check file) or
//! `KIND:impN` (the N-th --implicit-check-not), with `'I` when a directive has
//! several annotations. Input lines far from every error are elided as `.`.
//!
//! One difference: input lines longer than [`MAX_COLUMNS`] bytes are cut.

use super::ffi::match_type as mt;
use crate::text::cut_line;
use std::collections::HashMap;

/// Input lines shown before and after a line with an error (FileCheck's
/// default --dump-input-context).
pub const CONTEXT: usize = 5;

/// Widest input line shown, in bytes.
pub const MAX_COLUMNS: usize = 200;

/// One FileCheck diagnostic (`llvm::FileCheckDiag`), owned.
#[derive(Debug, Clone)]
pub struct Diag {
    /// Equal for the diagnostics of one directive.
    pub check_id: usize,
    pub check_abbrev: String,
    pub check_line: u32,
    pub implicit_index: u32,
    pub match_type: i32,
    /// (line, column) of the input range, 1-based, end exclusive.
    pub start: (u32, u32),
    pub end: (u32, u32),
    pub note: String,
}

#[derive(Clone)]
struct Annotation {
    diag_index: usize,
    label: String,
    first_line: bool,
    line: usize,
    /// 1-based columns, end exclusive; `usize::MAX` = to the line's end.
    start_col: usize,
    end_col: usize,
    lead: u8,
    note: String,
    filters_as_error: bool,
}

/// Lead character, default note and whether it selects its line for the
/// dump (FileCheck's GetMarker).
fn marker(match_type: i32) -> (u8, &'static str, bool) {
    match match_type {
        mt::FOUND_AND_EXPECTED => (b'^', "", false),
        mt::FOUND_BUT_EXCLUDED => (b'!', "error: no match expected", true),
        mt::FOUND_BUT_WRONG_LINE => (b'!', "error: match on wrong line", true),
        mt::FOUND_BUT_DISCARDED => (b'!', "discard: overlaps earlier match", false),
        mt::FOUND_ERROR_NOTE => (b'!', "error: unknown error after match", true),
        mt::NONE_AND_EXCLUDED => (b'X', "", false),
        mt::NONE_BUT_EXPECTED => (b'X', "error: no match found", true),
        mt::NONE_FOR_INVALID_PATTERN => (b'X', "error: match failed for invalid pattern", true),
        mt::FUZZY => (b'?', "possible intended match", true),
        _ => (b'?', "", false),
    }
}

/// The marker and note of a diagnostic: lead character, note and whether
/// it selects its line for the dump.
fn lead_and_note(d: &Diag) -> (u8, String, bool) {
    let (mut lead, note, filters_as_error) = marker(d.match_type);
    let mut note = note.to_string();
    if !d.note.is_empty() {
        note = d.note.clone();
        // A note without a range of its own gets no marker.
        if d.start == d.end {
            lead = b' ';
        }
    }
    if d.match_type == mt::FOUND_ERROR_NOTE {
        note = format!("error: {note}");
    }
    (lead, note, filters_as_error)
}

/// FileCheck's BuildInputAnnotations; returns the annotations and the
/// widest label.
fn annotations(diags: &[Diag]) -> (Vec<Annotation>, usize) {
    let mut count_per_check: HashMap<usize, usize> = HashMap::new();
    for d in diags {
        *count_per_check.entry(d.check_id).or_default() += 1;
    }
    let mut index_per_check: HashMap<usize, usize> = HashMap::new();
    let mut label_width = 0;
    let mut out = Vec::new();
    for (diag_index, d) in diags.iter().enumerate() {
        let mut label = if d.implicit_index > 0 {
            format!("{}:imp{}", d.check_abbrev, d.implicit_index)
        } else {
            format!("{}:{}", d.check_abbrev, d.check_line)
        };
        if count_per_check[&d.check_id] > 1 {
            let i = index_per_check.entry(d.check_id).or_default();
            label.push_str(&format!("'{i}"));
            *i += 1;
        }
        label_width = label_width.max(label.len());
        let (lead, note, filters_as_error) = lead_and_note(d);
        let (start_line, start_col) = (d.start.0 as usize, d.start.1 as usize);
        let (end_line, end_col) = (d.end.0 as usize, d.end.1 as usize);
        let end_col_first = if start_line == end_line { (start_col + 1).max(end_col) } else { usize::MAX };
        let first = Annotation { diag_index, label, first_line: true, line: start_line, start_col, end_col: end_col_first, lead, note, filters_as_error };
        // A range over several lines: `~` from the start of each further
        // line, to its end (the last line's: to the range's end).
        let further = Annotation { first_line: false, start_col: 1, lead: b'~', note: String::new(), ..first.clone() };
        out.push(first);
        for line in start_line + 1..=end_line {
            if end_col == 1 && line == end_line {
                break;
            }
            let end_col = if line != end_line { usize::MAX } else { end_col };
            out.push(Annotation { line, end_col, ..further.clone() });
        }
    }
    (out, label_width)
}

/// `input`'s line count, a last line without a newline included.
fn line_count(input: &[u8]) -> usize {
    let mut n = input.iter().filter(|&&b| b == b'\n').count();
    if input.last().is_some_and(|&b| b != b'\n') {
        n += 1;
    }
    n
}

/// Moves the elided lines to `out`: as they are when there are at most 3,
/// else as three lines of `.`.
fn flush_elided(out: &mut Vec<u8>, elided: &mut Vec<u8>, width: usize) {
    if elided.is_empty() {
        return;
    }
    if elided.iter().filter(|&&b| b == b'\n').count() > 3 {
        for _ in 0..3 {
            out.extend_from_slice(format!("{:>width$}\n", ".").as_bytes());
        }
    } else {
        out.extend_from_slice(elided);
    }
    elided.clear();
}

/// Writes input line `line` (from `*pos`, which it advances) to `sink`,
/// its newline shown as a space; returns its width on screen.
fn write_input_line(sink: &mut Vec<u8>, input: &[u8], pos: &mut usize, line: usize, width: usize) -> usize {
    let end = input[*pos..].iter().position(|&b| b == b'\n').map_or(input.len(), |i| *pos + i + 1);
    let raw = &input[*pos..end];
    *pos = end;
    let (text, newline) = match raw.strip_suffix(b"\n") {
        Some(t) => (t, true),
        None => (raw, false),
    };
    let shown = if text.len() > MAX_COLUMNS {
        cut_line(&String::from_utf8_lossy(text), MAX_COLUMNS).into_bytes()
    } else {
        text.to_vec()
    };
    sink.extend_from_slice(format!("{line:>width$}: ").as_bytes());
    sink.extend_from_slice(&shown);
    if newline {
        sink.push(b' ');
    }
    sink.push(b'\n');
    shown.len() + newline as usize
}

/// Writes one annotation line under an input line `line_width` wide.
fn write_annotation(sink: &mut Vec<u8>, a: &Annotation, width: usize, line_width: usize) {
    sink.extend_from_slice(format!("{:<width$}  ", a.label).as_bytes());
    let mut col = 1;
    while col < a.start_col.min(line_width + 1) {
        sink.push(b' ');
        col += 1;
    }
    sink.push(a.lead);
    col += 1;
    while col < a.end_col && col <= line_width {
        sink.push(b'~');
        col += 1;
    }
    if !a.note.is_empty() {
        while col <= line_width {
            sink.push(b' ');
            col += 1;
        }
        sink.push(b' ');
        sink.extend_from_slice(a.note.as_bytes());
    }
    sink.push(b'\n');
}

/// The dump of `input` (the canonical input FileCheck matched), from
/// `Input was:` to `>>>>>>`.
pub fn render(input: &[u8], diags: &[Diag]) -> String {
    let (mut annotations, label_width) = annotations(diags);
    annotations.sort_by_key(|a| (a.line, a.diag_index));
    let width = label_width.max(line_count(input).max(1).to_string().len()) + 3;
    let mut out = Vec::<u8>::new();
    out.extend_from_slice(b"Input was:\n<<<<<<\n");
    let mut elided = Vec::<u8>::new();
    let mut pos = 0; // into input
    let mut next_annotation = 0; // into annotations
    let mut prev_in_filter = 0usize; // 0: none so far
    let mut next_in_filter = 0usize; // 0: not computed, usize::MAX: none
    let mut line = 1usize;
    while pos < input.len() || next_annotation < annotations.len() {
        if next_in_filter < line {
            next_in_filter = annotations[next_annotation..]
                .iter()
                .find(|a| a.first_line && a.filters_as_error)
                .map_or(usize::MAX, |a| a.line);
        }
        if next_in_filter == line {
            prev_in_filter = line;
        }
        let elide = (prev_in_filter == 0 || prev_in_filter + CONTEXT < line)
            && (next_in_filter == usize::MAX || line + CONTEXT < next_in_filter);
        if !elide {
            flush_elided(&mut out, &mut elided, width);
        }
        let sink = if elide { &mut elided } else { &mut out };
        let line_width = write_input_line(sink, input, &mut pos, line, width);
        while next_annotation < annotations.len() && annotations[next_annotation].line == line {
            write_annotation(sink, &annotations[next_annotation], width, line_width);
            next_annotation += 1;
        }
        line += 1;
    }
    flush_elided(&mut out, &mut elided, width);
    out.extend_from_slice(b">>>>>>\n");
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod test {
    use super::*;

    fn diag(id: usize, abbrev: &str, check_line: u32, match_type: i32, start: (u32, u32), end: (u32, u32)) -> Diag {
        Diag {
            check_id: id,
            check_abbrev: abbrev.into(),
            check_line,
            implicit_index: 0,
            match_type,
            start,
            end,
            note: String::new(),
        }
    }

    #[test]
    fn same_as_filecheck_for_a_missing_next_line() {
        // `FileCheck` 19's dump for CHECK: 40 / CHECK-NEXT: 41 / CHECK-NEXT: 43
        // on "40\n41\n42\n", and the diagnostics its library reports.
        let diags = [
            diag(1, "next", 3, mt::NONE_BUT_EXPECTED, (2, 3), (4, 1)),
            diag(1, "next", 3, mt::FUZZY, (3, 1), (3, 1)),
        ];
        assert_eq!(
            render(b"40\n41\n42\n", &diags),
            "Input was:\n<<<<<<\n\
             \x20         1: 40 \n\
             \x20         2: 41 \n\
             next:3'0       X error: no match found\n\
             \x20         3: 42 \n\
             next:3'0     ~~~\n\
             next:3'1     ?   possible intended match\n\
             >>>>>>\n"
        );
    }

    #[test]
    fn elides_lines_far_from_errors_like_filecheck() {
        // CHECK: line 19 / CHECK: nope on "line 1" .. "line 30".
        let input: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let diags = [
            diag(2, "check", 2, mt::NONE_BUT_EXPECTED, (19, 8), (31, 1)),
            diag(2, "check", 2, mt::FUZZY, (20, 1), (20, 1)),
        ];
        let mut want = String::from("Input was:\n<<<<<<\n           .\n           .\n           .\n");
        for i in 14..=19 {
            want.push_str(&format!("          {i}: line {i} \n"));
        }
        want.push_str("check:2'0            X error: no match found\n");
        for i in 20..=25 {
            want.push_str(&format!("          {i}: line {i} \ncheck:2'0     ~~~~~~~~\n"));
            if i == 20 {
                want.push_str("check:2'1     ?        possible intended match\n");
            }
        }
        want.push_str("           .\n           .\n           .\n>>>>>>\n");
        assert_eq!(render(input.as_bytes(), &diags), want);
    }

    #[test]
    fn cuts_a_long_input_line() {
        let input = format!("{}\n", "y".repeat(100_000));
        let dump = render(input.as_bytes(), &[diag(1, "not", 1, mt::FOUND_BUT_EXCLUDED, (1, 1), (1, 100_001))]);
        assert!(dump.len() < 1000, "{}", dump.len());
        assert!(dump.contains("more bytes]"));
    }
}
