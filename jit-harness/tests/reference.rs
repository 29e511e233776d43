//! --reference: every run's output compared with the program's sequential
//! reference (lowered without async-parallel-for, run on the floor
//! runtime). It catches MLIR's async-parallel-for miscompile of 2-D loops
//! (docs/lowering-bugs.md) with the first differing line and both values,
//! passes a correct program, and works with --repeat, --explore and --check.

mod common;

use common::*;

/// The options under which async-parallel-for visits the 2x2 matrix twice.
const MISCOMPILING: &str = "async-parallel-for{num-workers=1 min-task-size=3}";
/// The same loop, correctly split (block size 1 is below the inner trip count).
const CORRECT: &str = "async-parallel-for{num-workers=1 min-task-size=1}";

fn args_for(program: &str, front: &str, extra: &[&str]) -> Vec<String> {
    let mut v = vec![
        s(&data(program)),
        "--pipeline".to_string(),
        pipeline_with_front(front),
        "--runtime".to_string(),
        s(&our_runtime()),
        "--shared-lib".to_string(),
        format!("{},{LLVM}/lib/libmlir_runner_utils.so", c_runner_utils()),
        "--reference".to_string(),
        "--reference-runtime".to_string(),
        s(&floor_runtime()),
        "--json".to_string(),
    ];
    v.extend(extra.iter().map(|x| x.to_string()));
    v
}

fn s(p: &std::path::Path) -> String {
    p.display().to_string()
}

fn harness_run(args: &[String]) -> Run {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&refs)
}

const FIRST_DIFFERENCE: &str =
    "output differs from the sequential reference at line 2: got `[[2,   2], `, reference `[[1,   1], `";

#[test]
fn the_2d_miscompile_fails_every_run_with_the_first_differing_line() {
    let r = harness_run(&args_for("increment-2d.mlir", MISCOMPILING, &["--repeat", "3"]));
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    assert!(r.stderr.contains(&format!("run 1: {FIRST_DIFFERENCE}")), "stderr: {}", r.stderr);
    let j = summary(&r);
    assert_eq!((j["runs"].as_u64(), j["failed"].as_u64()), (Some(3), Some(3)), "{j}");
}

#[test]
fn a_correct_split_passes_repeated_explored_and_checked() {
    for extra in [&["--repeat", "5"][..], &["--explore", "3"], &["--check", &s(&data("increment-2d.mlir")), "--repeat", "2"]] {
        let r = harness_run(&args_for("increment-2d.mlir", CORRECT, extra));
        assert_eq!(r.code, 0, "{extra:?}: stderr: {}", r.stderr);
        let j = summary(&r);
        assert_eq!(j["failed"].as_u64(), Some(0), "{extra:?}: {j}");
    }
}

#[test]
fn every_explored_schedule_is_compared() {
    let r = harness_run(&args_for("increment-2d.mlir", MISCOMPILING, &["--explore", "4"]));
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    assert!(r.stderr.contains(FIRST_DIFFERENCE), "stderr: {}", r.stderr);
    let j = summary(&r);
    assert_eq!(j["schedule"]["failing_seed"].as_u64(), Some(1), "{j}");
}

#[test]
fn check_and_reference_failures_are_both_reported() {
    let check = s(&data("increment-2d.mlir"));
    let r = harness_run(&args_for("increment-2d.mlir", MISCOMPILING, &["--check", &check]));
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    assert!(r.stderr.contains("check failed"), "stderr: {}", r.stderr);
    assert!(r.stderr.contains(FIRST_DIFFERENCE), "stderr: {}", r.stderr);
}

#[test]
fn schedule_dependent_lines_fail_unless_ignored() {
    let with_workers = |program: &str, extra: &[&str]| {
        let mut args = args_for(program, CORRECT, extra);
        args[2] = default_pipeline();
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = std::process::Command::new(harness());
        cmd.args(&refs).env("MLIR_ASYNC_RUNTIME_WORKERS", "3");
        let out = cmd.output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = with_workers("workers.mlir", &[]);
    assert_eq!(code, Some(1), "stderr: {err}");
    assert!(err.contains("at line 1: got `workers: 3`, reference `workers: 1`"), "stderr: {err}");
    let (code, err) = with_workers("workers.mlir", &["--reference-ignore", "^workers: "]);
    assert_eq!(code, Some(0), "stderr: {err}");
    let (code, err) = with_workers("workers-ignored.mlir", &["--repeat", "3"]);
    assert_eq!(code, Some(0), "stderr: {err}");
}

#[test]
fn a_bad_ignore_regex_is_a_usage_error() {
    let r = harness_run(&args_for("increment-2d.mlir", CORRECT, &["--reference-ignore", "("]));
    assert_eq!(r.code, 2, "stderr: {}", r.stderr);
    assert!(r.stderr.contains("bad REFERENCE-IGNORE regex `(`"), "stderr: {}", r.stderr);
}

#[test]
fn the_reference_flags_need_reference() {
    let r = run(&[&s(&data("increment-2d.mlir")), "--reference-ignore", "x"]);
    assert_eq!(r.code, 2, "stderr: {}", r.stderr);
}
