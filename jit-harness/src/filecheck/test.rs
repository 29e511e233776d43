use super::*;

fn parse(checks: &str, options: &Options) -> Result<CheckFile, CheckFileError> {
    CheckFile::parse("t.check", checks.as_bytes(), options)
}

fn run(checks: &str, output: &str) -> Result<(), String> {
    let mut cf = parse(checks, &Options::default()).map_err(|e| e.headline)?;
    cf.check(output.as_bytes()).map_err(|m| m.headline)
}

#[test]
fn folds_spaces_like_filecheck() {
    assert!(run("// CHECK: [0, 0, 0]", "[0,  0,\t0]\n").is_ok());
    let strict = Options { strict_whitespace: true, ..Options::default() };
    let mut cf = parse("CHECK: [0, 0]", &strict).unwrap();
    assert!(cf.check(b"[0,  0]\n").is_err());
    assert!(cf.check(b"[0, 0]\n").is_ok());
}

#[test]
fn failure_names_the_directive_and_dumps_the_input() {
    let m = run("CHECK: a\nCHECK-NEXT: c\n", "a\nb\n").unwrap_err();
    assert_eq!(m, "t.check:2:13: error: CHECK-NEXT: expected string not found in input");
    let mut cf = parse("CHECK: a\nCHECK-NEXT: c\n", &Options::default()).unwrap();
    let m = cf.check(b"a\nb\n").unwrap_err();
    assert_eq!(m.kind, MismatchKind::Failed);
    assert!(m.details.contains("<stdout>:1:2: note: scanning from here"), "{}", m.details);
    assert!(m.details.contains("Input was:\n<<<<<<\n"), "{}", m.details);
    assert!(m.details.contains("next:2"), "{}", m.details);
}

#[test]
fn each_check_starts_without_the_variables_of_the_last() {
    // After a failure in the first CHECK-LABEL block, FileCheck goes on with
    // the next block, where V and N get defined. Had the next output seen
    // them, its first block would pass: it must fail like the first output.
    for checks in [
        "CHECK: [[V]]\nCHECK-LABEL: lbl\nCHECK: v=[[V:[a-z]+]]\n",
        "CHECK: [[#N+1]]\nCHECK-LABEL: lbl\nCHECK: n=[[#N:]]\n",
        "CHECK: [[$V]]\nCHECK-LABEL: lbl\nCHECK: v=[[$V:[a-z]+]]\n",
    ] {
        let mut cf = parse(checks, &Options::default()).unwrap();
        for _ in 0..3 {
            let m = cf.check(b"abc\n5\nlbl\nv=abc\nn=4\n").unwrap_err();
            assert!(m.headline.contains("undefined variable"), "{checks}: {}", m.headline);
        }
    }
    // An ordinary definition and use pass on every output, each with its value.
    let mut cf = parse("CHECK: x [[V:[0-9]+]]\nCHECK: y [[V]]\n", &Options::default()).unwrap();
    assert!(cf.check(b"x 1\ny 1\n").is_ok());
    assert!(cf.check(b"x 2\ny 2\n").is_ok());
    assert!(cf.check(b"x 2\ny 1\n").is_err());
}

#[test]
fn numeric_variables_and_line_numbers() {
    assert!(run("CHECK: n=[[#N:]]\nCHECK-NEXT: m=[[#N+1]]\n", "n=41\nm=42\n").is_ok());
    assert!(run("CHECK: n=[[#N:]]\nCHECK-NEXT: m=[[#N+1]]\n", "n=41\nm=43\n").is_err());
    assert!(run("\nCHECK: line [[#@LINE]]\n", "line 2\n").is_ok());
}

#[test]
fn rejects_bad_check_files_with_filecheck_words() {
    let e = |c: &str| run(c, "x\n").unwrap_err();
    assert_eq!(e("nothing here"), "error: no check strings found with prefix 'CHECK:'");
    assert!(e("CHECK-NEXT: a").contains("found 'CHECK-NEXT' without previous 'CHECK: line"));
    assert!(e("CHECK: {{(}}").contains("invalid regex"));
    assert!(e("CHECK-DAG-NOT: a").contains("unsupported -NOT combo on prefix 'CHECK'"));
    let bad = Options { check_prefixes: vec!["A".into(), "B".into()], ..Options::default() };
    let err = parse("A: x\n", &bad).err().unwrap();
    assert_eq!(err.headline, "error: no check strings found with prefix 'B:'");
    let bad = Options { check_prefixes: vec!["bad prefix".into()], ..Options::default() };
    assert!(parse("CHECK: x", &bad).err().unwrap().headline.contains("supplied check prefix must start with a letter"));
}

#[test]
fn empty_output_is_its_own_verdict() {
    let mut cf = parse("CHECK-NOT: x", &Options::default()).unwrap();
    assert_eq!(cf.check(b"").unwrap_err().kind, MismatchKind::EmptyInput);
    let mut cf = parse("CHECK-NOT: x", &Options { allow_empty: true, ..Options::default() }).unwrap();
    assert!(cf.check(b"").is_ok());
}

#[test]
fn implicit_check_not_and_full_lines() {
    let o = Options { implicit_check_not: vec!["error".into()], ..Options::default() };
    let mut cf = parse("CHECK: a\nCHECK: b\n", &o).unwrap();
    assert!(cf.check(b"a\nb\n").is_ok());
    let m = cf.check(b"a\nerror\nb\n").unwrap_err();
    assert!(m.headline.contains("command line:1:22: error: IMPLICIT-CHECK-NOT: excluded string found"), "{}", m.headline);
    assert!(m.details.contains("not:imp1"), "{}", m.details);
    let o = Options { match_full_lines: true, ..Options::default() };
    let mut cf = parse("CHECK: a b\n", &o).unwrap();
    assert!(cf.check(b"a b\n").is_ok());
    assert!(cf.check(b"a b c\n").is_err());
}

#[test]
fn a_huge_check_line_is_cut_in_messages() {
    let checks = format!("CHECK: {}\n", "x".repeat(1_000_000));
    let mut cf = parse(&checks, &Options::default()).unwrap();
    let m = cf.check(b"hello\n").unwrap_err();
    assert!(m.headline.len() < 400, "{}", m.headline.len());
    assert!(m.details.len() < 10_000, "{}", m.details.len());
    assert!(m.details.contains("more bytes]"), "{}", m.details);
}

#[test]
fn nothing_reaches_stderr_and_messages_keep_their_order() {
    // A pattern error found while matching is written by LLVM to errs()
    // directly; it must come first in the messages, before the notes.
    let mut cf = parse("CHECK: [[U]]\n", &Options::default()).unwrap();
    let m = cf.check(b"x\n").unwrap_err();
    assert_eq!(m.headline, "t.check:1:10: error: undefined variable: U");
    assert!(m.details.contains("check:1'1        undefined variable: U"), "{}", m.details);
}


