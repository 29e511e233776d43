//! The harness's checker (LLVM's FileCheck library through the shim) against
//! LLVM 19's `FileCheck` tool on the same check files, inputs and options:
//! the same exit code (0 pass, 1 fail, 2 error), and for failures and errors
//! the same diagnostics and the same input dump, byte for byte. Cases: the
//! ones where an earlier hand-written matcher was wrong, hand-picked tricky ones, 600 generated ones
//! (directives, regexes, variables, numeric expressions, whitespace,
//! prefixes, options; passing, failing and invalid), and real outputs of the
//! corpus with mutations of them.

mod common;
use common::*;
use jit_harness::filecheck::{CheckFile, MismatchKind, Options, INPUT_NAME};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a checker said about one case.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    code: i32,
    /// FileCheck's diagnostics, without the input dump (for codes 1 and 2).
    messages: String,
    /// The `Input was:` ... `>>>>>>` dump (code 1).
    dump: String,
}

struct Workdir {
    dir: PathBuf,
    check: PathBuf,
    input: PathBuf,
}

impl Workdir {
    fn new(tag: &str) -> Workdir {
        let dir = temp_dir(tag);
        Workdir { check: dir.join("case.check"), input: dir.join("case.in"), dir }
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn option_args(o: &Options) -> Vec<String> {
    let mut a = Vec::new();
    if !o.check_prefixes.is_empty() {
        a.push(format!("--check-prefixes={}", o.check_prefixes.join(",")));
    }
    if !o.comment_prefixes.is_empty() {
        a.push(format!("--comment-prefixes={}", o.comment_prefixes.join(",")));
    }
    for p in &o.implicit_check_not {
        a.push(format!("--implicit-check-not={p}"));
    }
    for (on, flag) in [
        (o.strict_whitespace, "--strict-whitespace"),
        (o.match_full_lines, "--match-full-lines"),
        (o.ignore_case, "--ignore-case"),
        (o.allow_empty, "--allow-empty"),
        (o.allow_unused_prefixes, "--allow-unused-prefixes"),
        (o.enable_var_scope, "--enable-var-scope"),
    ] {
        if on {
            a.push(flag.to_string());
        }
    }
    a
}

fn llvm(w: &Workdir, check: &str, input: &str, o: &Options) -> Outcome {
    std::fs::write(&w.check, check).unwrap();
    std::fs::write(&w.input, input).unwrap();
    let fc = format!("{LLVM}/bin/FileCheck");
    assert!(Path::new(&fc).exists(), "{fc} is missing (llvm-19-tools)");
    let out = Command::new(fc)
        .arg(&w.check)
        .arg("--input-file")
        .arg(&w.input)
        .args(option_args(o))
        .env_remove("FILECHECK_OPTS")
        .output()
        .unwrap();
    let code = out.status.code().expect("FileCheck was killed");
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&w.input.display().to_string(), INPUT_NAME);
    match code {
        1 => {
            let end = stderr.find("\nInput file: ").unwrap_or(stderr.len());
            let dump = stderr.find("Input was:").map_or(String::new(), |i| stderr[i..].to_string());
            Outcome { code, messages: stderr[..end].trim_end().to_string(), dump }
        }
        _ => Outcome { code, messages: stderr.trim_end().to_string(), dump: String::new() },
    }
}

fn ours(w: &Workdir, check: &str, input: &str, o: &Options) -> Outcome {
    let name = w.check.display().to_string();
    match CheckFile::parse(&name, check.as_bytes(), o) {
        Ok(mut cf) => ours_check(&mut cf, input),
        Err(e) => Outcome { code: 2, messages: e.messages.trim_end().to_string(), dump: String::new() },
    }
}

/// Checks one input with a parsed check file (which may have checked
/// others before).
fn ours_check(cf: &mut CheckFile, input: &str) -> Outcome {
    // What FileCheck prints while reading the check file comes first.
    let warnings = cf.warnings().to_string();
    match cf.check(input.as_bytes()) {
        Ok(()) => Outcome { code: 0, messages: warnings.trim_end().to_string(), dump: String::new() },
        Err(m) if m.kind == MismatchKind::EmptyInput => Outcome { code: 2, messages: String::new(), dump: String::new() },
        Err(m) => {
            let full = format!("{warnings}{}\n{}", m.headline, m.details);
            let at = full.find("Input was:").unwrap_or(full.len());
            Outcome { code: 1, messages: full[..at].trim_end().to_string(), dump: full[at..].to_string() }
        }
    }
}

/// Asserts that both give the same outcome; returns the exit code.
fn compare(w: &Workdir, check: &str, input: &str, o: &Options) -> i32 {
    let l = llvm(w, check, input, o);
    let r = ours(w, check, input, o);
    let context = || format!("options {:?}\n--- check\n{check}\n--- input\n{input}---", option_args(o));
    assert_eq!(r.code, l.code, "exit codes differ (LLVM FileCheck: {}, ours: {})\n{}\n--- LLVM says\n{}\n--- we say\n{}", l.code, r.code, context(), l.messages, r.messages);
    if l.code == 2 && input.is_empty() && !o.allow_empty {
        return 2; // the empty-input error: same code, our own words
    }
    assert_eq!(r.messages, l.messages, "diagnostics differ\n{}", context());
    assert_eq!(r.dump, l.dump, "input dumps differ\n{}", context());
    l.code
}

fn prefixes(p: &str) -> Options {
    Options { check_prefixes: p.split(',').map(str::to_string).collect(), ..Options::default() }
}

/// The cases where the harness's earlier hand-written matcher was wrong, with
/// LLVM FileCheck's verdict.
#[test]
fn issue_11_cases_agree_with_llvm_filecheck() {
    let w = Workdir::new("fc-issue");
    let d = Options::default();
    let cases: &[(&str, &str, &Options, i32)] = &[
        // Unsupported -NOT combinations: an error, not a pass.
        ("CHECK-DAG-NOT: x\n", "y\n", &d, 2),
        ("CHECK: a\nCHECK-NEXT-NOT: x\n", "a\ny\n", &d, 2),
        ("CHECK-SAME-NOT: x\n", "y\n", &d, 2),
        // A variable definition (or use) in CHECK-LABEL: an error.
        ("CHECK-LABEL: f [[N:[0-9]+]]\n", "f 1\n", &d, 2),
        ("CHECK: [[N:[0-9]+]]\nCHECK-LABEL: f [[N]]\n", "1\nf 1\n", &d, 2),
        // [^x] does not match a newline in FileCheck's regexes.
        ("CHECK: a{{[^x]*}}b\n", "a\nb\n", &d, 1),
        ("CHECK: a{{[^x]*}}b\n", "a yy b\n", &d, 0),
        // CHECK-COUNT-0 is an invalid count.
        ("CHECK-COUNT-0: x\n", "y\n", &d, 2),
        // Numeric variables and expressions.
        ("CHECK: n=[[#N:]]\nCHECK-NEXT: m=[[#N+1]]\n", "n=41\nm=42\n", &d, 0),
        ("CHECK: n=[[#N:]]\nCHECK-NEXT: m=[[#N+1]]\n", "n=41\nm=41\n", &d, 1),
        ("CHECK: [[#%x,A:]]\nCHECK-NEXT: [[#%x,mul(A,2)]]\n", "ff\n1fe\n", &d, 0),
        ("CHECK: [[#%x,A:]]\nCHECK-NEXT: [[#%x,mul(A,2)]]\n", "ff\n1ff\n", &d, 1),
        ("CHECK: [[#%x,A:]] [[#mul(A,2)]]\n", "ff 1fe\n", &d, 2),
        ("CHECK: [[#%X,A:]]\n", "ff\n", &d, 1),
        ("CHECK: [[#N]]\n", "1\n", &d, 1),
        ("CHECK: [[#N:]] [[#N]]\n", "3 3\n", &d, 2),
        ("CHECK: [[#]]\n", "1\n", &d, 0),
        // @LINE.
        ("\n\nCHECK: at [[@LINE]]\n", "at 3\n", &d, 0),
        ("CHECK: at [[@LINE+1]]\n", "at 1\n", &d, 1),
        ("CHECK: at [[#@LINE-1]]\nCHECK: [[@LINE]]\n", "at 0\n2\n", &d, 0),
        // CHECK-LABEL splits the input into blocks: a CHECK cannot match
        // across a label.
        ("CHECK-LABEL: f1\nCHECK: x\nCHECK-LABEL: f2\nCHECK: y\n", "f1\ny\nf2\nx\n", &d, 1),
        ("CHECK-LABEL: f1\nCHECK: x\nCHECK-LABEL: f2\nCHECK: y\n", "f1\nx\nf2\ny\n", &d, 0),
        ("CHECK-LABEL: f1\nCHECK-NOT: bad\nCHECK-LABEL: f2\n", "f1\nok\nf2\nbad\n", &d, 0),
        ("CHECK-LABEL: f1\nCHECK-NOT: bad\nCHECK-LABEL: f2\n", "f1\nbad\nf2\n", &d, 1),
        ("CHECK-LABEL: f1\nCHECK: a\nCHECK-LABEL: f2\nCHECK: b\n", "f1\nzz\nf2\nb\n", &d, 1),
        ("CHECK-LABEL: f1\nCHECK-DAG: b\nCHECK-DAG: a\nCHECK-LABEL: f2\n", "f1\na\nf2\nb\n", &d, 1),
        ("CHECK-LABEL: a\nCHECK-LABEL: a\n", "a\n", &d, 1),
        // printMemref prints two spaces; tests check one.
        ("// CHECK: [0, 0, 0, 0]\n", "[0,  0,  0,  0]\n", &d, 0),
        ("// CHECK: Unranked Memref base@ = {{.*}} rank = 1\n// CHECK-NEXT: [1,  2]\n", "Unranked Memref base@ = 0x55 rank = 1 offset = 0\n[1, 2]\n", &d, 0),
        ("// CHECK: [0, 0]\n", "[0,  0]\n", &Options { strict_whitespace: true, ..Options::default() }, 1),
    ];
    for (check, input, o, want) in cases {
        let got = compare(&w, check, input, o);
        assert_eq!(got, *want, "LLVM FileCheck's verdict on {check:?} / {input:?} is not the one this test expects");
    }
    // An unused prefix in --check-prefixes: an error, unless allowed.
    assert_eq!(compare(&w, "FOO: a\n", "a\n", &prefixes("FOO,BAR")), 2);
    let allowed = Options { allow_unused_prefixes: true, ..prefixes("FOO,BAR") };
    assert_eq!(compare(&w, "FOO: a\n", "a\n", &allowed), 0);
}

/// Hand-picked cases: whitespace, DAG groups, NOT ranges, variables,
/// regexes, NEXT/SAME/EMPTY/COUNT, prefixes, comments, options and bad check
/// files, with LLVM FileCheck's verdict.
#[test]
fn tricky_cases_agree_with_llvm_filecheck() {
    let w = Workdir::new("fc-tricky");
    let cases: &[(&str, &str, i32)] = &[
        ("CHECK: foo bar", "foo\t \tbar\n", 0),
        ("CHECK:    foo   bar   ", "xx foo bar\n", 0),
        ("CHECK: foo bar", "foobar\n", 1),
        ("CHECK: a\nCHECK-DAG: x\nCHECK-DAG: y\nCHECK: b", "a\ny\nx\nb\n", 0),
        ("CHECK: a\nCHECK-DAG: x\nCHECK-DAG: y\nCHECK: b", "a\nx\nb\ny\n", 1),
        ("CHECK: a\nCHECK-DAG: x\nCHECK-DAG: y\nCHECK: b", "y\na\nx\nb\n", 1),
        ("CHECK-DAG: x\nCHECK-DAG: y\nCHECK: b", "b\ny\nx\nb\n", 0),
        ("CHECK-DAG: a\nCHECK-DAG: b\nCHECK-NOT: c\nCHECK-DAG: d\nCHECK-DAG: e", "b\na\ne\nd\n", 0),
        ("CHECK-DAG: a\nCHECK-DAG: b\nCHECK-NOT: c\nCHECK-DAG: d\nCHECK-DAG: e", "a\nb\nc\nd\ne\n", 1),
        ("CHECK-DAG: a\nCHECK-DAG: b\nCHECK-NOT: c\nCHECK-DAG: d\nCHECK-DAG: e", "a\nc\nb\nd\ne\n", 0),
        ("CHECK-DAG: a\nCHECK-NOT: c\nCHECK-DAG: d", "d\na\nc\n", 1),
        ("CHECK-DAG: foo\nCHECK-DAG: foo", "foo\n", 1),
        ("CHECK-DAG: foo\nCHECK-DAG: foo", "foo foo\n", 0),
        ("CHECK-DAG: foobar\nCHECK-DAG: bar", "foobar\n", 1),
        ("CHECK-DAG: bar\nCHECK-DAG: foo", "foobar\n", 0),
        ("CHECK: a\nCHECK-NOT: x\nCHECK: b", "a x b\n", 1),
        ("CHECK: a\nCHECK-NOT: x\nCHECK: b", "x a b\n", 0),
        ("CHECK: a\nCHECK-NOT: z", "a\nz\n", 1),
        ("CHECK-NOT: z\nCHECK: a", "z a\n", 1),
        ("CHECK: id [[X:[0-9]+]]\nCHECK: end [[X]]", "id 42\nend 43\n", 1),
        ("CHECK: id [[X:[0-9]+]]\nCHECK: end [[X]]", "id 42\nend 420\n", 0),
        ("CHECK-DAG: b=[[B:[a-z]+]]\nCHECK-DAG: a=[[A:[a-z]+]]\nCHECK: [[A]]-[[B]]", "a=xy\nb=zw\nxy-zw\n", 0),
        ("CHECK: [[V:[[:alpha:]]+]] x\nCHECK: [[V]] y", "ab x\ncd y\n", 1),
        ("CHECK: [[A:a.]]\nCHECK-SAME: [[A]]", "a* a*\n", 0),
        ("CHECK: [[A:a.]] [[A]]", "ab ab\n", 0),
        ("CHECK: [[A]]", "a\n", 1),
        ("CHECK: a{{x|y}}b", "ab\n", 1),
        ("CHECK: {{^}}foo{{$}}", "xfoo\nfoo\n", 0),
        ("CHECK: a{{.*}}b", "a\nb\n", 1),
        ("CHECK: 1.5", "1x5\n", 1),
        ("CHECK: {{(}}", "x\n", 2),
        ("CHECK: a\nCHECK-NEXT: b", "a b\n", 1),
        ("CHECK: a\nCHECK-NEXT: b", "a\n\nb\n", 1),
        ("CHECK: a\nCHECK-SAME: b", "a\nb\n", 1),
        ("CHECK: a\nCHECK-EMPTY:\nCHECK-NEXT: b", "a\n\nb\n", 0),
        ("CHECK: a\nCHECK-EMPTY: x\n", "a\n\n", 2),
        ("CHECK-COUNT-3: x", "x x\n", 1),
        ("CHECK-COUNT-3: x", "x x\nx\n", 0),
        ("CHECK-NEXT: a", "a\n", 2),
        ("CHECK:", "a\n", 1),
        ("CHECK:\n", "a\n", 2),
        ("nothing here", "a\n", 2),
        ("XCHECK: nope\nCHECK: a", "a\n", 0),
        ("// COM: CHECK: nope\n// CHECK: a", "a\n", 0),
        ("// RUN: x | FileCheck %s\n// CHECK: a", "a\n", 0),
        ("CHECK-NXT: a\nCHECK: a", "a\n", 0),
        ("CHECK : a", "a\n", 2),
        ("CHECK-NOT: x", "", 2),
        ("CHECK: b\nCHECK: a", "a\nb\n", 1),
        ("CHECK: a\r\nCHECK-NEXT: b\r\n", "a\r\nb\r\n", 0),
        ("CHECK: \u{e9}t\u{e9}", "\u{e9}t\u{e9}\n", 0),
    ];
    let d = Options::default();
    for (check, input, want) in cases {
        let got = compare(&w, check, input, &d);
        assert_eq!(got, *want, "LLVM FileCheck's verdict on {check:?} / {input:?} is not the one this test expects");
    }
    let opts: &[(Options, &str, &str, i32)] = &[
        (prefixes("FOO,BAR"), "FOO: a\nBAR: b\nCHECK: z", "a\nb\n", 0),
        (prefixes("FOO,BAR"), "FOO: a\nBAR-NEXT: b", "a\nx\nb\n", 1),
        (prefixes("FOO,FOO"), "FOO: a", "a\n", 2),
        (prefixes("bad prefix"), "CHECK: a", "a\n", 2),
        (prefixes(""), "CHECK: a", "a\n", 2),
        (prefixes("COM"), "COM: a", "a\n", 2),
        (Options { comment_prefixes: vec!["NOTE".into()], ..Options::default() }, "NOTE: CHECK: x\nCHECK: a", "a\n", 0),
        (Options { implicit_check_not: vec!["warning".into()], ..Options::default() }, "CHECK: a\nCHECK: b", "a\nwarning\nb\n", 1),
        (Options { implicit_check_not: vec!["{{[0-9]+}}".into()], ..Options::default() }, "CHECK: a", "a\n", 0),
        // FileCheck reports the bad regex and goes on: it never matches.
        (Options { implicit_check_not: vec!["{{(}}".into()], ..Options::default() }, "CHECK: a", "a\n", 0),
        (Options { implicit_check_not: vec!["x".into()], ..prefixes("NOPE") }, "CHECK: a", "a\n", 2),
        (Options { implicit_check_not: vec!["x".into()], ..Options::default() }, "nothing", "a\n", 0),
        (Options { match_full_lines: true, ..Options::default() }, "CHECK: a b", "  a b  \n", 0),
        (Options { match_full_lines: true, ..Options::default() }, "CHECK: a", "a b\n", 1),
        (Options { match_full_lines: true, strict_whitespace: true, ..Options::default() }, "CHECK: a b", " a b\n", 0),
        (Options { match_full_lines: true, strict_whitespace: true, ..Options::default() }, "CHECK: a b", "a b\n", 1),
        (Options { ignore_case: true, ..Options::default() }, "CHECK: HeLLo", "hello\n", 0),
        (Options { allow_empty: true, ..Options::default() }, "CHECK-NOT: x", "", 0),
        (Options { allow_empty: true, ..Options::default() }, "CHECK: x", "", 1),
        (Options { enable_var_scope: true, ..Options::default() }, "CHECK-LABEL: f\nCHECK: [[V:[a-z]+]]\nCHECK-LABEL: g\nCHECK: [[V]]", "f\nab\ng\nab\n", 1),
        (Options { enable_var_scope: true, ..Options::default() }, "CHECK-LABEL: f\nCHECK: [[$V:[a-z]+]]\nCHECK-LABEL: g\nCHECK: [[$V]]", "f\nab\ng\nab\n", 0),
    ];
    for (o, check, input, want) in opts {
        let got = compare(&w, check, input, o);
        assert_eq!(got, *want, "LLVM FileCheck's verdict on {check:?} / {input:?} with {:?} is not the one this test expects", option_args(o));
    }
}

/// A small deterministic generator (SplitMix64), so the cases are the same
/// on every machine and run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn pick_str(&mut self, items: &[&'static str]) -> &'static str {
        items[self.below(items.len())]
    }
}

const WORDS: &[&str] = &[
    "foo", "bar", "baz", "qux", "id", "thread", "done", "start", "end", "value", "error", "warning", "Memref", "rank",
    "a=b", "x", "X", "[1,", "2]", "[0,", "0]", "(", ")", "*", "+", ".", "{", "}", "$",
];

fn token(r: &mut Rng) -> String {
    match r.below(10) {
        0..=5 => r.pick(WORDS).to_string(),
        6 | 7 => r.below(1000).to_string(),
        8 => format!("0x{:x}", r.below(100_000)),
        _ => format!("{}.{}", r.below(10), r.below(100)),
    }
}

fn separator(r: &mut Rng) -> &'static str {
    r.pick_str(&[" ", " ", " ", "  ", "\t", " \t "])
}

/// An output: lines of tokens with varied spacing, some empty lines.
fn gen_output(r: &mut Rng) -> Vec<String> {
    let n = r.below(9);
    (0..n)
        .map(|_| {
            if r.chance(10) {
                return String::new();
            }
            let mut line = String::new();
            if r.chance(15) {
                line.push_str(separator(r));
            }
            let k = 1 + r.below(5);
            for i in 0..k {
                if i > 0 {
                    line.push_str(separator(r));
                }
                line.push_str(&token(r));
            }
            if r.chance(10) {
                line.push_str(separator(r));
            }
            line
        })
        .collect()
}

/// A pattern that matches `text` (a piece of an output line), written with
/// literal text, regexes, variable definitions and uses, numeric variables
/// and expressions; or, now and then, one that does not quite.
fn gen_pattern(r: &mut Rng, text: &str, vars: &mut Vec<(String, String)>, nums: &mut Vec<(String, u64)>) -> String {
    let mut out = String::new();
    for (i, tok) in text.split([' ', '\t']).filter(|t| !t.is_empty()).enumerate() {
        if i > 0 {
            out.push_str(r.pick_str(&[" ", " ", "  ", "\t"]));
        }
        let is_num = tok.bytes().all(|b| b.is_ascii_digit()) && tok.len() < 10;
        if is_num && r.chance(50) {
            let want: u64 = tok.parse().unwrap();
            if nums.is_empty() || r.chance(40) {
                let name = format!("N{}", nums.len());
                out.push_str(&format!("[[#{name}:]]"));
                nums.push((name, want));
            } else {
                // An expression over an earlier numeric variable, right or not.
                let (name, v) = r.pick(nums).clone();
                if want >= v && r.chance(80) {
                    out.push_str(&format!("[[#{name}+{}]]", want - v));
                } else if want < v && r.chance(80) {
                    out.push_str(&format!("[[#{name}-{}]]", v - want));
                } else {
                    out.push_str(&format!("[[#{name}]]"));
                }
            }
            continue;
        }
        match r.below(20) {
            2 if is_num => out.push_str("{{[0-9]+}}"),
            3 => out.push_str("{{.*}}"),
            4 => out.push_str(&format!("{{{{[^{}]*}}}}", r.pick(&["x", "z", "\\n"]))),
            5 => {
                let name = format!("V{}", vars.len());
                let re = if is_num { "[0-9]+" } else { ".+" };
                out.push_str(&format!("[[{name}:{re}]]"));
                vars.push((name, tok.to_string()));
            }
            6 if !vars.is_empty() => {
                let (name, value) = r.pick(vars).clone();
                if value == tok || r.chance(40) {
                    out.push_str(&format!("[[{name}]]"));
                } else {
                    out.push_str(tok);
                }
            }
            7 => out.push_str("{{^}}"),
            8 => {
                out.push_str(tok);
                out.push_str("{{$}}");
            }
            9 if r.chance(60) => out.push_str(&format!("[[@LINE{}]]", r.pick_str(&["", "+1", "-1"]))),
            10 if r.chance(30) => out.push_str(&tok.to_uppercase()),
            _ => out.push_str(tok),
        }
    }
    out
}

/// Invalid check files, one broken thing each.
fn gen_bad_line(r: &mut Rng, p: &str) -> String {
    match r.below(12) {
        0 => format!("{p}-DAG-NOT: x"),
        1 => format!("{p}-NEXT-NOT: x"),
        2 => format!("{p}-COUNT-0: x"),
        3 => format!("{p}-LABEL: f [[L:[0-9]+]]"),
        4 => format!("{p}: {{{{(}}}}"),
        5 => format!("{p}:"),
        6 => format!("{p}-EMPTY: x"),
        7 => format!("{p}: [[#]]"),
        8 => format!("{p}: [[#N:]] [[#N]]"),
        9 => format!("{p}: [[V:x]] [[#V:]]"),
        10 => format!("{p}-NEXT: first"),
        _ => format!("{p}: [[bad name:x]]"),
    }
}

struct Generated {
    check: String,
    input: String,
    options: Options,
}

fn generate(seed: u64) -> Generated {
    let mut r = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d).wrapping_add(seed));
    let mut options = Options::default();
    let prefix: &str = match r.below(10) {
        0 => {
            options.check_prefixes = vec!["FOO".into()];
            "FOO"
        }
        1 => {
            options.check_prefixes = vec!["A".into(), "B".into()];
            if r.chance(30) {
                options.allow_unused_prefixes = true;
            }
            r.pick_str(&["A", "B"])
        }
        _ => "CHECK",
    };
    options.strict_whitespace = r.chance(10);
    options.match_full_lines = r.chance(8);
    options.ignore_case = r.chance(5);
    options.allow_empty = r.chance(5);
    options.enable_var_scope = r.chance(5);
    if r.chance(10) {
        options.implicit_check_not = vec![r.pick(&["error", "warning", "{{[0-9]+}}", "foo"]).to_string()];
    }

    let lines = gen_output(&mut r);
    let mut checks: Vec<String> = Vec::new();
    if r.chance(30) {
        checks.push(format!("// RUN: prog | FileCheck %s --check-prefix={prefix}"));
    }
    let mut vars = Vec::new();
    let mut nums = Vec::new();
    let mut last: Option<usize> = None;
    for (i, line) in lines.iter().enumerate() {
        if !r.chance(60) {
            continue;
        }
        let words: Vec<&str> = line.split([' ', '\t']).filter(|t| !t.is_empty()).collect();
        if words.is_empty() {
            let kind = if last.is_some() && r.chance(70) { "-EMPTY" } else { "" };
            if !kind.is_empty() {
                checks.push(format!("{prefix}{kind}:"));
                last = Some(i);
            }
            continue;
        }
        let from = r.below(words.len());
        let to = from + 1 + r.below(words.len() - from);
        let piece = words[from..to].join(" ");
        let pattern = gen_pattern(&mut r, &piece, &mut vars, &mut nums);
        let kind = match r.below(14) {
            0 | 1 if last == Some(i.wrapping_sub(1)) => "-NEXT",
            0 | 1 if last.is_some() => "-NEXT",
            2 if last == Some(i) || last.is_some() => "-SAME",
            3 | 4 => "-DAG",
            5 => "-NOT",
            6 if !pattern.contains("[[") => "-LABEL",
            7 => "-COUNT-1",
            8 if r.chance(30) => "-COUNT-2",
            9 if r.chance(30) => "{LITERAL}",
            _ => "",
        };
        let not_word = if kind == "-NOT" && r.chance(50) { format!("{pattern}zz") } else { pattern };
        let space = r.pick_str(&[" ", " ", "  ", "\t", ""]);
        let comment = r.pick_str(&["", "", "// ", "; ", "# "]);
        checks.push(format!("{comment}{prefix}{kind}:{space}{not_word}"));
        if kind != "-NOT" && kind != "-DAG" {
            last = Some(i);
        }
    }
    if r.chance(15) {
        checks.push(format!("{prefix}-NOT: {}", token(&mut r)));
    }
    if !checks.iter().any(|c| c.contains(prefix)) && r.chance(80) {
        let word = lines.iter().flat_map(|l| l.split_whitespace()).next().map_or_else(|| token(&mut r), str::to_string);
        checks.push(format!("{prefix}: {word}"));
    }
    if r.chance(8) {
        let at = r.below(checks.len() + 1);
        let bad = gen_bad_line(&mut r, prefix);
        checks.insert(at, bad);
    }
    if r.chance(5) {
        checks.push(format!("COM: {prefix}: never checked"));
    }
    // Mutate the output now and then, for failures.
    let mut out = lines.clone();
    if r.chance(35) && !out.is_empty() {
        let i = r.below(out.len());
        match r.below(6) {
            0 => {
                out.remove(i);
            }
            1 if out.len() > 1 => {
                let j = (i + 1) % out.len();
                out.swap(i, j)
            }
            2 => out[i] = out[i].replace(|c: char| c.is_ascii_digit(), "7"),
            3 => out.insert(i, token(&mut r)),
            4 => out[i] = out[i].replace(' ', "  "),
            _ => out[i] = out[i].to_uppercase(),
        }
    }
    let mut input: String = out.iter().map(|l| format!("{l}\n")).collect();
    if r.chance(5) && !input.is_empty() {
        input.pop(); // no newline at the end
    }
    let mut check = checks.join("\n");
    if r.chance(80) {
        check.push('\n');
    }
    Generated { check, input, options }
}

#[test]
fn generated_cases_agree_with_llvm_filecheck() {
    let w = Workdir::new("fc-gen");
    let mut by_code = [0usize; 3];
    // Cases whose check file or options use each feature.
    type Feature = (&'static str, fn(&Generated) -> bool);
    let features: &[Feature] = &[
        ("CHECK-NEXT", |g| g.check.contains("-NEXT:")),
        ("CHECK-SAME", |g| g.check.contains("-SAME:")),
        ("CHECK-NOT", |g| g.check.contains("-NOT:")),
        ("CHECK-DAG", |g| g.check.contains("-DAG:")),
        ("CHECK-LABEL", |g| g.check.contains("-LABEL:")),
        ("CHECK-EMPTY", |g| g.check.contains("-EMPTY:")),
        ("CHECK-COUNT", |g| g.check.contains("-COUNT-")),
        ("{LITERAL}", |g| g.check.contains("{LITERAL}")),
        ("{{regex}}", |g| g.check.contains("{{")),
        ("[[VAR:def]]", |g| g.check.contains("[[V") && g.check.contains(':')),
        ("[[#NUM:]]", |g| g.check.contains("[[#N")),
        ("[[#NUM+k]]", |g| g.check.contains("[[#N") && (g.check.contains('+') || g.check.contains("]-"))),
        ("[[@LINE]]", |g| g.check.contains("[[@LINE")),
        ("tab or double space in a check", |g| g.check.contains('\t') || g.check.contains("  ")),
        ("custom prefixes", |g| !g.options.check_prefixes.is_empty()),
        ("--strict-whitespace", |g| g.options.strict_whitespace),
        ("--match-full-lines", |g| g.options.match_full_lines),
        ("--implicit-check-not", |g| !g.options.implicit_check_not.is_empty()),
        ("--ignore-case", |g| g.options.ignore_case),
        ("--enable-var-scope", |g| g.options.enable_var_scope),
    ];
    let mut seen = vec![0usize; features.len()];
    const CASES: u64 = 600;
    for seed in 0..CASES {
        let g = generate(seed);
        let code = compare(&w, &g.check, &g.input, &g.options);
        by_code[code as usize] += 1;
        for (i, (_, has)) in features.iter().enumerate() {
            seen[i] += has(&g) as usize;
        }
    }
    eprintln!("generated cases: {} pass, {} fail, {} error (exit code 2)", by_code[0], by_code[1], by_code[2]);
    // The generator must exercise every verdict and every feature, often.
    for (code, n) in by_code.iter().enumerate() {
        assert!(*n >= 60, "only {n} generated cases with exit code {code}: {by_code:?}");
    }
    for ((name, _), n) in features.iter().zip(&seen) {
        eprintln!("  {n:4} cases use {name}");
        assert!(*n >= 10, "only {n} generated cases use {name}");
    }
}

/// The harness parses a check file once and checks thousands of outputs
/// with it: each check must come out as a fresh `FileCheck` process's,
/// whatever the outputs checked before (variables, numeric variables, `$`
/// variables, failures half-way).
#[test]
fn a_reused_checker_agrees_with_fresh_filecheck() {
    let w = Workdir::new("fc-reuse");
    let mut checked = 0;
    let mut run = |check: &str, options: &Options, inputs: &[&str]| {
        let name = w.check.display().to_string();
        let Ok(mut cf) = CheckFile::parse(&name, check.as_bytes(), options) else { return };
        let want: Vec<Outcome> = inputs.iter().map(|i| llvm(&w, check, i, options)).collect();
        for round in 0..2 {
            for (input, want) in inputs.iter().zip(&want) {
                let got = ours_check(&mut cf, input);
                let context = || format!("round {round}\n--- check\n{check}\n--- input\n{input}");
                assert_eq!(got.code, want.code, "{}", context());
                if want.code != 2 {
                    assert_eq!(got, *want, "{}", context());
                }
                checked += 1;
            }
        }
    };
    // Variables that a failing first CHECK-LABEL block leaves undefined and
    // the next block defines: an earlier output's values must not leak in.
    let defined_late = "abc\n5\nlbl\nv=abc\nn=4\n";
    let scope = Options { enable_var_scope: true, ..Options::default() };
    for (check, options) in [
        ("CHECK: [[V]]\nCHECK-LABEL: lbl\nCHECK: v=[[V:[a-z]+]]\n", &Options::default()),
        ("CHECK: [[#N+1]]\nCHECK-LABEL: lbl\nCHECK: n=[[#N:]]\n", &Options::default()),
        ("CHECK: [[$V]]\nCHECK-LABEL: lbl\nCHECK: v=[[$V:[a-z]+]]\n", &Options::default()),
        ("CHECK: [[#$N+1]]\nCHECK-LABEL: lbl\nCHECK: n=[[#$N:]]\n", &Options::default()),
        ("CHECK: [[V]]\nCHECK-LABEL: lbl\nCHECK: v=[[V:[a-z]+]]\n", &scope),
        ("CHECK: [[#N+1]]\nCHECK-LABEL: lbl\nCHECK: n=[[#N:]]\n", &scope),
    ] {
        run(check, options, &[defined_late, "x\nlbl\nv=x\nn=0\n", defined_late]);
    }
    for seed in 0..300 {
        let g = generate(seed);
        // This case's input, another case's, and this one's with a line less.
        let other = generate(seed + 10_000).input;
        let fewer: String = g.input.lines().skip(1).map(|l| format!("{l}\n")).collect();
        run(&g.check, &g.options, &[g.input.as_str(), other.as_str(), fewer.as_str()]);
    }
    eprintln!("reused checkers: {checked} checks");
    assert!(checked >= 800, "{checked}");
}

/// Real outputs: every corpus program's output (one run each, through the
/// harness against our runtime) and mutations of it.
#[test]
fn corpus_outputs_agree_with_llvm_filecheck() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let w = Workdir::new("fc-corpus");
    let status = Command::new("python3")
        .arg(root.join("mlir-tests/lib/corpus.py"))
        .args(["lower", "--out"])
        .arg(&w.dir)
        .output()
        .expect("python3 is needed to lower the corpus");
    assert!(status.status.success(), "lowering the corpus failed: {}", String::from_utf8_lossy(&status.stderr));
    // The rows with lit's expectation on our runtime (the one skip rule,
    // mlir-tests/lib/rules.py, through manifest.py).
    let rows = Command::new("python3")
        .arg(root.join("mlir-tests/lib/manifest.py"))
        .args(["rows"])
        .arg(w.dir.join("manifest.tsv"))
        .args(["--runtime-kind", "rust", "--columns", "name,ll,check_file,check_prefix,entry,env"])
        .output()
        .expect("python3 runs manifest.py");
    assert!(rows.status.success(), "manifest.py rows failed: {}", String::from_utf8_lossy(&rows.stderr));
    let rows = String::from_utf8(rows.stdout).unwrap();
    let rt = our_runtime();
    let libs = format!("{LLVM}/lib/libmlir_c_runner_utils.so,{LLVM}/lib/libmlir_runner_utils.so");
    let (mut programs, mut cases) = (0, 0);
    for line in rows.lines().filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (expected, name, ll, check, prefix, entry, env) = (cols[0], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7]);
        // Unsupported on our runtime, or expected to fail there (a known
        // MLIR miscompile: FileCheck rightly rejects its output).
        if expected != "pass" {
            continue;
        }
        let mut cmd = Command::new(harness());
        cmd.args([ll, "--runtime", rt.to_str().unwrap(), "--shared-lib", &libs, "--entry", entry, "--echo", "--json"]);
        if env != "-" {
            for kv in env.split_whitespace() {
                if let Some((k, v)) = kv.split_once('=') {
                    cmd.env(k, v);
                }
            }
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // The last line is the harness's summary.
        let output = &text[..text.trim_end().rfind('\n').map_or(0, |p| p + 1)];
        let checks = std::fs::read_to_string(check).unwrap();
        let o = if prefix == "-" { Options::default() } else { prefixes(prefix) };
        assert_eq!(compare(&w, &checks, output, &o), 0, "{name}: LLVM FileCheck rejects the real output");
        cases += 1;
        // Mutations: drop a line, swap two lines, change a digit, double the
        // spaces. The outcomes must still agree (whatever they are).
        let lines: Vec<&str> = output.lines().collect();
        for i in 0..lines.len().min(8) {
            let mut m = lines.clone();
            m.remove(i);
            compare(&w, &checks, &(m.join("\n") + "\n"), &o);
            if i + 1 < lines.len() {
                let mut m = lines.clone();
                m.swap(i, i + 1);
                compare(&w, &checks, &(m.join("\n") + "\n"), &o);
                cases += 1;
            }
            cases += 1;
        }
        if let Some(p) = output.find(|c: char| c.is_ascii_digit()) {
            let mut bytes = output.as_bytes().to_vec();
            bytes[p] = b'0' + (bytes[p] - b'0' + 1) % 10;
            compare(&w, &checks, &String::from_utf8(bytes).unwrap(), &o);
            cases += 1;
        }
        compare(&w, &checks, &output.replace(' ', "  "), &o);
        cases += 1;
        programs += 1;
    }
    eprintln!("corpus: {programs} programs, {cases} outputs compared");
    assert!(programs >= 10, "only {programs} corpus programs were compared");
}

