//! A focused FileCheck matcher: the subset of LLVM 19's `FileCheck` that the
//! corpus uses, with the same semantics, compiled once and run on every
//! run's output.
//!
//! Supported: `CHECK:`, `-NEXT:`, `-SAME:`, `-NOT:`, `-DAG:`, `-EMPTY:`,
//! `-COUNT-<n>:`, `-LABEL:` (matched like `CHECK:`, without LLVM's
//! partitioning of the input into label blocks), `{{regex}}`,
//! `[[VAR:regex]]`, `[[VAR]]`, `COM:` and `RUN:` lines, several prefixes.
//! Like LLVM's FileCheck (without `--strict-whitespace`), runs of spaces and
//! tabs are folded to one space in both the check file and the output, and an
//! empty output fails. Regexes use the `regex` crate in multi-line mode
//! (`^`/`$` match at line ends, `.` never matches a newline), which is what
//! LLVM's `Regex::Newline` does for the patterns seen in practice; one known
//! difference is that a negated class such as `[^x]` can match a newline here.
//! Not supported (rejected with an error when the check file is loaded):
//! numeric variables `[[#...]]`, `[[@LINE]]`, using a variable in the same
//! pattern that defines it.

use regex::Regex;
use std::collections::HashMap;
use std::fmt;

/// Directive kinds, named as LLVM names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Plain,
    Next,
    Same,
    Not,
    Dag,
    Label,
    Empty,
    Count(usize),
    /// The implicit pattern after the last directive: holds trailing
    /// CHECK-DAG / CHECK-NOT directives and matches the end of the output.
    Eof,
}

impl Kind {
    fn suffix(self) -> String {
        match self {
            Kind::Plain => String::new(),
            Kind::Next => "-NEXT".into(),
            Kind::Same => "-SAME".into(),
            Kind::Not => "-NOT".into(),
            Kind::Dag => "-DAG".into(),
            Kind::Label => "-LABEL".into(),
            Kind::Empty => "-EMPTY".into(),
            Kind::Count(n) => format!("-COUNT-{n}"),
            Kind::Eof => "-EOF".into(),
        }
    }
}

#[derive(Debug, Clone)]
enum Piece {
    Literal(String),
    Regex(String),
    Def { name: String, regex: String },
    Use(String),
}

#[derive(Debug)]
enum Matcher {
    /// Literal text: plain substring search.
    Fixed(String),
    /// A regex with no variable uses, compiled once. `defs[i]` is the
    /// variable captured by the group named `v{i}`.
    Static { re: Regex, defs: Vec<String> },
    /// Uses variables: rebuilt when their values change (one-entry cache).
    Dynamic { cache: std::cell::RefCell<Option<(Vec<String>, Regex)>>, defs: Vec<String> },
    Empty,
    Eof,
}

#[derive(Debug)]
struct Pattern {
    kind: Kind,
    /// "CHECK-NEXT" etc., with the prefix that was used.
    directive: String,
    text: String,
    line: usize,
    pieces: Vec<Piece>,
    matcher: Matcher,
}

struct CheckString {
    pat: Pattern,
    dag_nots: Vec<Pattern>,
}

/// A parsed check file, reusable across runs.
pub struct CheckFile {
    name: String,
    strings: Vec<CheckString>,
}

/// Why an output did not satisfy the checks: one line, like FileCheck's
/// first diagnostic line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub message: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Folds runs of spaces and tabs to one space and drops the `\r` of `\r\n`,
/// as LLVM's FileCheck does to both of its inputs.
pub fn canonicalize(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\r' && i + 1 < bytes.len() && bytes[i + 1] == b'\n' {
            i += 1;
            continue;
        }
        if c == b' ' || c == b'\t' {
            out.push(b' ');
            while i + 1 < bytes.len() && (bytes[i + 1] == b' ' || bytes[i + 1] == b'\t') {
                i += 1;
            }
        } else {
            out.push(c);
        }
        i += 1;
    }
    // Only ASCII bytes were removed or replaced by ASCII: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Parses what follows a check prefix ("-NEXT:", ":", ...). Returns the kind
/// and the length of the suffix including the colon.
fn parse_suffix(rest: &str) -> Option<(Kind, usize)> {
    if rest.starts_with(':') {
        return Some((Kind::Plain, 1));
    }
    let rest = rest.strip_prefix('-')?;
    for (name, kind) in [
        ("NEXT:", Kind::Next),
        ("SAME:", Kind::Same),
        ("NOT:", Kind::Not),
        ("DAG:", Kind::Dag),
        ("LABEL:", Kind::Label),
        ("EMPTY:", Kind::Empty),
    ] {
        if rest.starts_with(name) {
            return Some((kind, 1 + name.len()));
        }
    }
    if let Some(count) = rest.strip_prefix("COUNT-") {
        let digits: String = count.chars().take_while(|c| c.is_ascii_digit()).collect();
        if !digits.is_empty() && count[digits.len()..].starts_with(':') {
            let n: usize = digits.parse().ok()?;
            if n == 0 {
                return None;
            }
            return Some((Kind::Count(n), 1 + "COUNT-".len() + digits.len() + 1));
        }
    }
    None
}

/// Finds the end of a `[[...]]` body like LLVM's `FindRegexVarEnd`: the
/// first `]]` outside brackets, skipping backslash escapes.
fn find_var_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut depth = 0usize;
    while i < b.len() {
        if depth == 0 && b[i..].starts_with(b"]]") {
            return Some(i);
        }
        match b[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            b'[' => depth += 1,
            b']' => {
                if depth == 0 {
                    return None;
                }
                depth -= 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn valid_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn parse_pieces(text: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("{{") {
            let end = after.find("}}").ok_or("found start of regex string with no end '}}'")?;
            if !lit.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut lit)));
            }
            let re = &after[..end];
            if re.is_empty() {
                return Err("found empty regex '{{}}'".into());
            }
            pieces.push(Piece::Regex(re.to_string()));
            rest = &after[end + 2..];
            continue;
        }
        if let Some(after) = rest.strip_prefix("[[") {
            let end = find_var_end(after).ok_or("invalid variable definition or use: missing ']]'")?;
            let body = &after[..end];
            if body.starts_with('#') {
                return Err("numeric variables ([[#...]]) are not supported by this matcher".into());
            }
            if body.starts_with('@') {
                return Err("pseudo variables ([[@LINE]]) are not supported by this matcher".into());
            }
            if !lit.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut lit)));
            }
            match body.split_once(':') {
                Some((name, re)) => {
                    if !valid_var_name(name) {
                        return Err(format!("invalid variable name '{name}'"));
                    }
                    if re.is_empty() {
                        return Err(format!("empty regex for variable '{name}'"));
                    }
                    pieces.push(Piece::Def { name: name.to_string(), regex: re.to_string() });
                }
                None => {
                    if !valid_var_name(body) {
                        return Err(format!("invalid variable name '{body}'"));
                    }
                    pieces.push(Piece::Use(body.to_string()));
                }
            }
            rest = &after[end + 2..];
            continue;
        }
        let c = rest.chars().next().unwrap_or(' ');
        lit.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if !lit.is_empty() {
        pieces.push(Piece::Literal(lit));
    }
    // A variable used in the pattern that defines it would need a regex
    // backreference, which the regex crate does not have.
    let defs: Vec<&str> =
        pieces.iter().filter_map(|p| if let Piece::Def { name, .. } = p { Some(name.as_str()) } else { None }).collect();
    for p in &pieces {
        if let Piece::Use(n) = p {
            if defs.contains(&n.as_str()) {
                return Err(format!("variable '{n}' is used in the pattern that defines it (not supported)"));
            }
        }
    }
    Ok(pieces)
}

/// Builds the regex source for the pieces; variable uses take their values
/// from `vars`.
fn regex_source(pieces: &[Piece], vars: &dyn Fn(&str) -> Option<String>) -> Result<(String, Vec<String>), String> {
    let mut src = String::from("(?m)");
    let mut defs = Vec::new();
    for p in pieces {
        match p {
            Piece::Literal(s) => src.push_str(&regex::escape(s)),
            Piece::Regex(r) => {
                src.push_str("(?:");
                src.push_str(r);
                src.push(')');
            }
            Piece::Def { name, regex } => {
                src.push_str(&format!("(?P<v{}>", defs.len()));
                src.push_str(regex);
                src.push(')');
                defs.push(name.clone());
            }
            Piece::Use(name) => {
                let v = vars(name).ok_or_else(|| format!("undefined variable: {name}"))?;
                src.push_str(&regex::escape(&v));
            }
        }
    }
    Ok((src, defs))
}

fn compile(src: &str) -> Result<Regex, String> {
    Regex::new(src).map_err(|e| {
        let msg = e.to_string();
        let last = msg.lines().filter(|l| !l.trim().is_empty()).last().unwrap_or("").trim().to_string();
        format!("invalid regex: {last}")
    })
}

impl Pattern {
    fn new(kind: Kind, directive: String, text: &str, line: usize) -> Result<Pattern, String> {
        let (pieces, matcher) = match kind {
            Kind::Empty => (Vec::new(), Matcher::Empty),
            Kind::Eof => (Vec::new(), Matcher::Eof),
            _ => {
                let pieces = parse_pieces(text)?;
                let matcher = if pieces.iter().all(|p| matches!(p, Piece::Literal(_))) {
                    Matcher::Fixed(text.to_string())
                } else if pieces.iter().any(|p| matches!(p, Piece::Use(_))) {
                    let defs = pieces
                        .iter()
                        .filter_map(|p| if let Piece::Def { name, .. } = p { Some(name.clone()) } else { None })
                        .collect();
                    // Validate the regex syntax now, with placeholder values.
                    let (src, _) = regex_source(&pieces, &|_| Some(String::new()))?;
                    compile(&src)?;
                    Matcher::Dynamic { cache: std::cell::RefCell::new(None), defs }
                } else {
                    let (src, defs) = regex_source(&pieces, &|_| None)?;
                    Matcher::Static { re: compile(&src)?, defs }
                };
                (pieces, matcher)
            }
        };
        Ok(Pattern { kind, directive, text: text.to_string(), line, pieces, matcher })
    }

    /// Finds the first match in `buf`; returns (start, len) relative to
    /// `buf` and the variables it defines.
    fn find(&self, buf: &str, vars: &HashMap<String, String>) -> Result<Option<(usize, usize, Vec<(String, String)>)>, String> {
        let with_defs = |re: &Regex, defs: &[String]| {
            if defs.is_empty() {
                return re.find(buf).map(|m| (m.start(), m.len(), Vec::new()));
            }
            re.captures(buf).map(|c| {
                let m = c.get(0).expect("group 0 always exists");
                let vals = defs
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.clone(), c.name(&format!("v{i}")).map_or("", |g| g.as_str()).to_string()))
                    .collect();
                (m.start(), m.len(), vals)
            })
        };
        Ok(match &self.matcher {
            Matcher::Fixed(s) => buf.find(s.as_str()).map(|p| (p, s.len(), Vec::new())),
            Matcher::Static { re, defs } => with_defs(re, defs),
            Matcher::Dynamic { cache, defs } => {
                let mut values = Vec::new();
                for p in &self.pieces {
                    if let Piece::Use(n) = p {
                        values.push(vars.get(n).cloned().ok_or_else(|| format!("undefined variable: {n}"))?);
                    }
                }
                let mut cache = cache.borrow_mut();
                let fresh = !matches!(&*cache, Some((v, _)) if *v == values);
                if fresh {
                    let (src, _) = regex_source(&self.pieces, &|n| vars.get(n).cloned())?;
                    *cache = Some((values, compile(&src)?));
                }
                let (_, re) = cache.as_ref().expect("cache was just filled");
                with_defs(re, defs)
            }
            // "\n$" in multi-line mode; the match starts after the newline
            // (LLVM's MatchStartSkip), so the skipped region holds it.
            Matcher::Empty => {
                let b = buf.as_bytes();
                (0..b.len())
                    .find(|&i| b[i] == b'\n' && (i + 1 == b.len() || b[i + 1] == b'\n'))
                    .map(|i| (i + 1, 0, Vec::new()))
            }
            Matcher::Eof => Some((buf.len(), 0, Vec::new())),
        })
    }

    fn describe(&self, file: &str) -> String {
        format!("{file}:{}: {}: {}", self.line, self.directive, self.text)
    }
}

fn line_of(buf: &str, pos: usize) -> usize {
    buf.as_bytes()[..pos.min(buf.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

fn snippet(buf: &str, pos: usize) -> String {
    let pos = pos.min(buf.len());
    let start = buf[..pos].rfind('\n').map_or(0, |p| p + 1);
    let end = buf[pos..].find('\n').map_or(buf.len(), |p| pos + p);
    let mut s: String = buf[start..end].chars().take(80).collect();
    if end - start > 80 {
        s.push_str("...");
    }
    s
}

impl CheckFile {
    /// Parses check directives from `text` with the given prefixes.
    pub fn parse(name: &str, text: &str, prefixes: &[String]) -> Result<CheckFile, String> {
        for p in prefixes {
            if p.is_empty() || !p.bytes().all(is_word_byte) || !p.as_bytes()[0].is_ascii_alphabetic() {
                return Err(format!("invalid check prefix '{p}'"));
            }
        }
        let canon = canonicalize(text);
        let mut strings = Vec::new();
        let mut pending: Vec<Pattern> = Vec::new();
        let comments = ["COM".to_string(), "RUN".to_string()];
        for (idx, line) in canon.split('\n').enumerate() {
            let lineno = idx + 1;
            // The earliest prefix occurrence that forms a directive wins;
            // a comment directive hides the rest of its line.
            let mut best: Option<(usize, bool, &str, Kind, usize)> = None;
            for (is_comment, pfx) in prefixes.iter().map(|p| (false, p)).chain(comments.iter().map(|p| (true, p))) {
                let mut from = 0;
                while let Some(off) = line[from..].find(pfx.as_str()) {
                    let at = from + off;
                    from = at + 1;
                    if at > 0 && is_word_byte(line.as_bytes()[at - 1]) {
                        continue;
                    }
                    let after = &line[at + pfx.len()..];
                    let parsed = if is_comment {
                        after.starts_with(':').then_some((Kind::Plain, 1))
                    } else {
                        parse_suffix(after)
                    };
                    if let Some((kind, len)) = parsed {
                        if best.map_or(true, |b| at < b.0) {
                            best = Some((at, is_comment, pfx.as_str(), kind, at + pfx.len() + len));
                        }
                        break;
                    }
                }
            }
            let Some((_, is_comment, pfx, kind, body_at)) = best else { continue };
            if is_comment {
                continue;
            }
            let body = line[body_at..].trim_matches(|c| c == ' ' || c == '\t');
            let directive = format!("{pfx}{}", kind.suffix());
            if body.is_empty() && kind != Kind::Empty {
                return Err(format!("{name}:{lineno}: found empty check string with prefix '{directive}:'"));
            }
            if kind == Kind::Empty && !body.is_empty() {
                return Err(format!("{name}:{lineno}: found non-empty check string for empty check with prefix '{directive}:'"));
            }
            let pat = Pattern::new(kind, directive.clone(), body, lineno).map_err(|e| format!("{name}:{lineno}: {e}"))?;
            if matches!(kind, Kind::Next | Kind::Same | Kind::Empty) && strings.is_empty() && pending.is_empty() {
                return Err(format!("{name}:{lineno}: found '{directive}' without previous '{pfx}: line"));
            }
            if matches!(kind, Kind::Not | Kind::Dag) {
                if kind == Kind::Not && pat.pieces.iter().any(|p| matches!(p, Piece::Def { .. })) {
                    return Err(format!("{name}:{lineno}: {directive} cannot define variables"));
                }
                pending.push(pat);
            } else {
                strings.push(CheckString { pat, dag_nots: std::mem::take(&mut pending) });
            }
        }
        let have_any = !strings.is_empty() || !pending.is_empty();
        if !have_any {
            let list: Vec<String> = prefixes.iter().map(|p| format!("'{p}:'")).collect();
            return Err(format!("{name}: no check strings found with prefix{} {}", if list.len() > 1 { "es" } else { "" }, list.join(", ")));
        }
        let eof = Pattern::new(Kind::Eof, "EOF".into(), "", 0)?;
        strings.push(CheckString { pat: eof, dag_nots: pending });
        Ok(CheckFile { name: name.to_string(), strings })
    }

    /// Checks one output. The output is canonicalized here.
    pub fn check(&self, output: &str) -> Result<(), Mismatch> {
        let buf = canonicalize(output);
        if buf.is_empty() {
            return Err(Mismatch { message: "the output is empty (FileCheck rejects an empty input)".into() });
        }
        let mut vars: HashMap<String, String> = HashMap::new();
        let mut pos = 0usize;
        for cs in &self.strings {
            let (start, len) = self.check_string(cs, &buf, pos, &mut vars)?;
            pos = start + len;
        }
        Ok(())
    }

    fn fail(&self, pat: &Pattern, msg: &str, buf: &str, at: usize) -> Mismatch {
        // Searching from the end of a line: show the line after it.
        let at = if buf.as_bytes().get(at) == Some(&b'\n') && at + 1 < buf.len() { at + 1 } else { at };
        Mismatch {
            message: format!(
                "{}: {msg} (output line {}: \"{}\")",
                pat.describe(&self.name),
                line_of(buf, at),
                snippet(buf, at)
            ),
        }
    }

    /// LLVM's `FileCheckString::Check`: returns the absolute start and
    /// length of the positive match.
    fn check_string(&self, cs: &CheckString, full: &str, from: usize, vars: &mut HashMap<String, String>) -> Result<(usize, usize), Mismatch> {
        let buf = &full[from..];
        let mut nots: Vec<&Pattern> = Vec::new();
        let last = self.check_dag(cs, buf, from, full, &mut nots, vars)?;
        let count = if let Kind::Count(n) = cs.pat.kind { n } else { 1 };
        let mut end = last;
        let mut first = 0;
        for i in 0..count {
            let found = cs.pat.find(&buf[end..], vars).map_err(|e| self.fail(&cs.pat, &e, full, from + end))?;
            let Some((p, l, defs)) = found else {
                let what = if count > 1 { format!("expected string not found in input (match {} of {count})", i + 1) } else { "expected string not found in input".to_string() };
                return Err(self.fail(&cs.pat, &what, full, from + end));
            };
            if i == 0 {
                first = end + p;
            }
            end += p + l;
            vars.extend(defs);
        }
        let skipped = &buf[last..first];
        let newlines = skipped.bytes().filter(|&b| b == b'\n').count();
        match cs.pat.kind {
            Kind::Next | Kind::Empty => {
                if newlines == 0 {
                    return Err(self.fail(&cs.pat, "is on the same line as previous match", full, from + first));
                }
                if newlines != 1 {
                    return Err(self.fail(&cs.pat, "is not on the line after the previous match", full, from + first));
                }
            }
            Kind::Same if newlines != 0 => {
                return Err(self.fail(&cs.pat, "is not on the same line as the previous match", full, from + first));
            }
            _ => {}
        }
        self.check_not(&nots, skipped, from + last, full, vars)?;
        Ok((from + first, end - first))
    }

    fn check_not(&self, nots: &[&Pattern], region: &str, region_at: usize, full: &str, vars: &HashMap<String, String>) -> Result<(), Mismatch> {
        for pat in nots {
            let found = pat.find(region, vars).map_err(|e| self.fail(pat, &e, full, region_at))?;
            if let Some((p, _, _)) = found {
                return Err(self.fail(pat, "excluded string found in input", full, region_at + p));
            }
        }
        Ok(())
    }

    /// LLVM's `FileCheckString::CheckDag`: matches the CHECK-DAG groups in
    /// any order without overlap, checks the CHECK-NOTs between groups,
    /// and leaves the CHECK-NOTs after the last group in `nots`. Returns the
    /// position (relative to `buf`) where the positive pattern search starts.
    fn check_dag<'a>(
        &self,
        cs: &'a CheckString,
        buf: &str,
        from: usize,
        full: &str,
        nots: &mut Vec<&'a Pattern>,
        vars: &mut HashMap<String, String>,
    ) -> Result<usize, Mismatch> {
        let mut start = 0usize;
        // Sorted, non-overlapping (pos, end) of this group's matches.
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        let n = cs.dag_nots.len();
        for (i, pat) in cs.dag_nots.iter().enumerate() {
            if pat.kind == Kind::Not {
                nots.push(pat);
                continue;
            }
            let mut at = start;
            loop {
                let found = pat.find(&buf[at..], vars).map_err(|e| self.fail(pat, &e, full, from + at))?;
                let Some((p, l, defs)) = found else {
                    return Err(self.fail(pat, "expected string not found in input", full, from + start));
                };
                let m = (at + p, at + p + l);
                // First old match that ends after the new one starts.
                let idx = ranges.iter().position(|r| m.0 < r.1);
                let overlap = match idx {
                    Some(k) => ranges[k].0 < m.1,
                    None => false,
                };
                if !overlap {
                    ranges.insert(idx.unwrap_or(ranges.len()), m);
                    vars.extend(defs);
                    break;
                }
                // Try again after the match it overlaps.
                let k = idx.expect("overlap implies a range");
                at = ranges[k].1.max(m.0 + 1);
                if at > buf.len() {
                    return Err(self.fail(pat, "expected string not found in input", full, from + start));
                }
            }
            let group_ends = i + 1 == n || cs.dag_nots[i + 1].kind == Kind::Not;
            if group_ends {
                if !nots.is_empty() {
                    let first = ranges.first().map_or(start, |r| r.0);
                    self.check_not(nots, &buf[start..first], from + start, full, vars)?;
                    nots.clear();
                }
                start = ranges.iter().map(|r| r.1).max().unwrap_or(start);
                ranges.clear();
            }
        }
        Ok(start)
    }
}

#[cfg(test)]
mod test;
