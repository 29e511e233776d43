//! The harness's FileCheck matcher against LLVM 19's FileCheck: the same
//! verdict on tricky cases and on real outputs of the corpus (and mutations
//! of them).

mod common;
use common::*;
use jit_harness::filecheck::CheckFile;
use std::path::Path;
use std::process::Command;

fn llvm_verdict(dir: &Path, check: &str, input: &str, prefix: &str) -> bool {
    let c = dir.join("case.check");
    let i = dir.join("case.in");
    std::fs::write(&c, check).unwrap();
    std::fs::write(&i, input).unwrap();
    let fc = format!("{LLVM}/bin/FileCheck");
    assert!(Path::new(&fc).exists(), "{fc} is missing (llvm-19-tools)");
    Command::new(fc)
        .arg(&c)
        .arg(format!("--input-file={}", i.display()))
        .arg(format!("--check-prefixes={prefix}"))
        .output()
        .unwrap()
        .status
        .success()
}

fn our_verdict(check: &str, input: &str, prefix: &str) -> Result<(), String> {
    let prefixes: Vec<String> = prefix.split(',').map(str::to_string).collect();
    let cf = CheckFile::parse("case.check", check, &prefixes)?;
    cf.check(input).map_err(|m| m.message)
}

fn compare(dir: &Path, check: &str, input: &str, prefix: &str) -> bool {
    let llvm = llvm_verdict(dir, check, input, prefix);
    let ours = our_verdict(check, input, prefix);
    assert_eq!(ours.is_ok(), llvm, "verdicts differ (LLVM FileCheck: {llvm}, ours: {ours:?})\n--- check\n{check}\n--- input\n{input}");
    llvm
}

#[test]
fn tricky_cases_agree_with_llvm_filecheck() {
    let dir = temp_dir("fc");
    let cases: &[(&str, &str, bool)] = &[
        // Space folding: printMemref prints two spaces, tests check one.
        ("// CHECK: [0, 0, 0, 0]", "[0,  0,  0,  0]\n", true),
        ("CHECK: foo bar", "foo\t \tbar\n", true),
        ("CHECK:    foo   bar   ", "xx foo bar\n", true),
        ("CHECK: foo bar", "foobar\n", false),
        // CHECK-DAG groups bounded by CHECK.
        ("CHECK: a\nCHECK-DAG: x\nCHECK-DAG: y\nCHECK: b", "a\ny\nx\nb\n", true),
        ("CHECK: a\nCHECK-DAG: x\nCHECK-DAG: y\nCHECK: b", "a\nx\nb\ny\n", false),
        ("CHECK: a\nCHECK-DAG: x\nCHECK-DAG: y\nCHECK: b", "y\na\nx\nb\n", false),
        ("CHECK-DAG: x\nCHECK-DAG: y\nCHECK: b", "b\ny\nx\nb\n", true),
        // CHECK-DAG groups bounded by CHECK-NOT.
        ("CHECK-DAG: a\nCHECK-DAG: b\nCHECK-NOT: c\nCHECK-DAG: d\nCHECK-DAG: e", "b\na\ne\nd\n", true),
        ("CHECK-DAG: a\nCHECK-DAG: b\nCHECK-NOT: c\nCHECK-DAG: d\nCHECK-DAG: e", "a\nb\nc\nd\ne\n", false),
        ("CHECK-DAG: a\nCHECK-DAG: b\nCHECK-NOT: c\nCHECK-DAG: d\nCHECK-DAG: e", "a\nc\nb\nd\ne\n", true),
        ("CHECK-DAG: a\nCHECK-DAG: b\nCHECK-NOT: c\nCHECK-DAG: d\nCHECK-DAG: e", "a\nb\nd\nc\ne\n", true),
        ("CHECK-DAG: a\nCHECK-NOT: c\nCHECK-DAG: d", "d\na\nc\n", false),
        // CHECK-DAG matches do not overlap.
        ("CHECK-DAG: foo\nCHECK-DAG: foo", "foo\n", false),
        ("CHECK-DAG: foo\nCHECK-DAG: foo", "foo foo\n", true),
        ("CHECK-DAG: foobar\nCHECK-DAG: bar", "foobar\n", false),
        ("CHECK-DAG: bar\nCHECK-DAG: foo", "foobar\n", true),
        // CHECK-NOT between matches, before the first, after the last.
        ("CHECK: a\nCHECK-NOT: x\nCHECK: b", "a x b\n", false),
        ("CHECK: a\nCHECK-NOT: x\nCHECK: b", "x a b\n", true),
        ("CHECK: a\nCHECK-NOT: x\nCHECK: b", "a b x\n", true),
        ("CHECK: a\nCHECK-NOT: z", "a\nz\n", false),
        ("CHECK-NOT: z\nCHECK: a", "z a\n", false),
        ("CHECK-NOT: {{[0-9]+}}\nCHECK: a", "x a 1\n", true),
        // Variables.
        ("CHECK: id [[X:[0-9]+]]\nCHECK: end [[X]]", "id 42\nend 42\n", true),
        ("CHECK: id [[X:[0-9]+]]\nCHECK: end [[X]]", "id 42\nend 43\n", false),
        ("CHECK: id [[X:[0-9]+]]\nCHECK: end [[X]]", "id 42\nend 420\n", true),
        ("CHECK-DAG: b=[[B:[a-z]+]]\nCHECK-DAG: a=[[A:[a-z]+]]\nCHECK: [[A]]-[[B]]", "a=xy\nb=zw\nxy-zw\n", true),
        ("CHECK-DAG: b=[[B:[a-z]+]]\nCHECK-DAG: a=[[A:[a-z]+]]\nCHECK: [[A]]-[[B]]", "a=xy\nb=zw\nzw-xy\n", false),
        ("CHECK: [[V:[[:alpha:]]+]] x\nCHECK: [[V]] y", "ab x\nab y\n", true),
        ("CHECK: [[V:[[:alpha:]]+]] x\nCHECK: [[V]] y", "ab x\ncd y\n", false),
        ("CHECK: [[A:a.]]\nCHECK-SAME: [[A]]", "a* a*\n", true),
        ("CHECK: [[A:a.]]\nCHECK-SAME: [[A]]", "a* ab\n", false),
        // Regexes.
        ("CHECK: a{{x|y}}b", "ayb\n", true),
        ("CHECK: a{{x|y}}b", "ab\n", false),
        ("CHECK: {{^}}foo{{$}}", "xfoo\nfoo\n", true),
        ("CHECK: {{^}}foo{{$}}", "xfoo\nfoox\n", false),
        ("CHECK: a{{.*}}b", "a\nb\n", false),
        ("CHECK: a{{.*}}b", "a 123 b\n", true),
        ("CHECK: value {{[0-9]+}}.{{[0-9]+}}", "value 3.25\n", true),
        ("CHECK: 1.5", "1x5\n", false),
        ("CHECK: [1, 2]", "[1, 2]\n", true),
        // NEXT, SAME, EMPTY, COUNT.
        ("CHECK: a\nCHECK-NEXT: b", "a b\n", false),
        ("CHECK: a\nCHECK-NEXT: b", "a\nb\n", true),
        ("CHECK: a\nCHECK-NEXT: b", "a\n\nb\n", false),
        ("CHECK: a\nCHECK-NEXT: b\nCHECK-NEXT: c", "a\nb\nc\n", true),
        ("CHECK: a\nCHECK-SAME: b", "a b\n", true),
        ("CHECK: a\nCHECK-SAME: b", "a\nb\n", false),
        ("CHECK: a\nCHECK-EMPTY:\nCHECK-NEXT: b", "a\n\nb\n", true),
        ("CHECK: a\nCHECK-EMPTY:\n", "a\nb\n", false),
        ("CHECK: a\nCHECK-EMPTY:\n", "a\n\n", true),
        ("CHECK-COUNT-3: x", "x x\nx\n", true),
        ("CHECK-COUNT-3: x", "x x\n", false),
        ("CHECK: s\nCHECK-COUNT-2: {{^}}tick{{$}}\nCHECK-NEXT: e", "s\ntick\ntick\ne\n", true),
        // Prefixes, comments, directives inside words.
        ("XCHECK: nope\nCHECK: a", "a\n", true),
        ("// COM: CHECK: nope\n// CHECK: a", "a\n", true),
        ("// RUN: x | FileCheck %s\n// CHECK: a", "a\n", true),
        ("CHECK:a", "a\n", true),
        ("CHECK-NOT: b\nCHECK: a", "a b\n", true),
        // Empty input and order.
        ("CHECK-NOT: x", "", false),
        ("CHECK: b\nCHECK: a", "a\nb\n", false),
        ("CHECK: a\nCHECK: a", "a\n", false),
    ];
    for (check, input, expect) in cases {
        let llvm = compare(&dir, check, input, "CHECK");
        assert_eq!(llvm, *expect, "LLVM FileCheck's verdict on {check:?} / {input:?} is not the one this test expects");
    }
    // Several prefixes.
    assert!(compare(&dir, "FOO: a\nBAR: b\nCHECK: z", "a\nb\n", "FOO,BAR"));
    assert!(!compare(&dir, "FOO: a\nBAR-NEXT: b", "a\nx\nb\n", "FOO,BAR"));
    let _ = std::fs::remove_dir_all(dir);
}

/// Real outputs: every corpus program's output (one run each, through the
/// harness against our runtime) and mutations of it.
#[test]
fn corpus_outputs_agree_with_llvm_filecheck() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = temp_dir("corpus");
    let status = Command::new("python3")
        .arg(root.join("mlir-tests/lib/corpus.py"))
        .args(["lower", "--out"])
        .arg(&dir)
        .output()
        .expect("python3 is needed to lower the corpus");
    assert!(status.status.success(), "lowering the corpus failed: {}", String::from_utf8_lossy(&status.stderr));
    let manifest = std::fs::read_to_string(dir.join("manifest.tsv")).unwrap();
    let rt = our_runtime();
    let libs = format!("{LLVM}/lib/libmlir_c_runner_utils.so,{LLVM}/lib/libmlir_runner_utils.so");
    let mut programs = 0;
    for line in manifest.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (name, ll, check, prefix, entry, env, requires) = (cols[0], cols[1], cols[2], cols[3], cols[4], cols[6], cols[7]);
        if requires != "-" && !requires.contains("rust-runtime") {
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
        let prefix = if prefix == "-" { "CHECK" } else { prefix };
        assert!(compare(&dir, &checks, output, prefix), "{name}: LLVM FileCheck rejects the real output");
        // Mutations: drop a line, swap two lines, change a digit, double the
        // spaces. The verdicts must still agree (whatever they are).
        let lines: Vec<&str> = output.lines().collect();
        for i in 0..lines.len().min(8) {
            let mut m = lines.clone();
            m.remove(i);
            compare(&dir, &checks, &(m.join("\n") + "\n"), prefix);
            if i + 1 < lines.len() {
                let mut m = lines.clone();
                m.swap(i, i + 1);
                compare(&dir, &checks, &(m.join("\n") + "\n"), prefix);
            }
        }
        if let Some(p) = output.find(|c: char| c.is_ascii_digit()) {
            let mut bytes = output.as_bytes().to_vec();
            bytes[p] = b'0' + (bytes[p] - b'0' + 1) % 10;
            compare(&dir, &checks, &String::from_utf8(bytes).unwrap(), prefix);
        }
        compare(&dir, &checks, &output.replace(' ', "  "), prefix);
        programs += 1;
    }
    assert!(programs >= 3, "only {programs} corpus programs were compared");
    let _ = std::fs::remove_dir_all(dir);
}
