use super::*;

fn run(checks: &str, output: &str) -> Result<(), String> {
    let cf = CheckFile::parse("t", checks, &["CHECK".to_string()])?;
    cf.check(output).map_err(|m| m.message)
}

#[test]
fn folds_spaces() {
    assert!(run("// CHECK: [0, 0, 0]", "[0,  0,\t0]\n").is_ok());
}

#[test]
fn next_same_not() {
    let c = "CHECK: a\nCHECK-NEXT: b\nCHECK-SAME: c\nCHECK-NOT: x\nCHECK: d\n";
    assert!(run(c, "a\nb c\nd\n").is_ok());
    assert!(run(c, "a\n\nb c\nd\n").unwrap_err().contains("not on the line after"));
    assert!(run(c, "a\nb\nc\nd\n").unwrap_err().contains("not on the same line"));
    assert!(run(c, "a\nb c\nx\nd\n").unwrap_err().contains("excluded string"));
}

#[test]
fn dag_any_order_no_overlap() {
    let c = "CHECK: start\nCHECK-DAG: x\nCHECK-DAG: x\nCHECK-DAG: y\nCHECK: end\n";
    assert!(run(c, "start\ny\nx\nx\nend\n").is_ok());
    assert!(run(c, "start\ny\nx\nend\n").is_err());
}

#[test]
fn variables() {
    let c = "CHECK: id [[ID:[0-9]+]]\nCHECK: again [[ID]]\n";
    assert!(run(c, "id 12\nagain 12\n").is_ok());
    assert!(run(c, "id 12\nagain 13\n").is_err());
}

#[test]
fn regex_and_count_and_empty() {
    assert!(run("CHECK-COUNT-3: {{[a-c]}}x", "ax bx cx\n").is_ok());
    assert!(run("CHECK: a\nCHECK-EMPTY:\nCHECK-NEXT: b", "a\n\nb\n").is_ok());
    assert!(run("CHECK: a\nCHECK-EMPTY:", "a\nb\n").is_err());
}

#[test]
fn rejects_bad_files() {
    assert!(run("nothing here", "x").unwrap_err().contains("no check strings"));
    assert!(run("CHECK-NEXT: a", "a").unwrap_err().contains("without previous"));
    assert!(run("CHECK: [[#N]]", "a").is_err());
    assert!(run("CHECK: {{(}}", "a").unwrap_err().contains("invalid regex"));
    assert!(run("CHECK: a", "").unwrap_err().contains("empty"));
}

#[test]
fn comment_and_run_lines_are_not_directives() {
    let c = "// RUN: x | FileCheck %s\n// COM: CHECK: nope\n// CHECK: yes\n";
    assert!(run(c, "yes\n").is_ok());
}
