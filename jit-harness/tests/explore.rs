//! --explore and --replay: the harness finds the failing schedule of a
//! racy program (mlir-tests/racy/) within a bound under both strategies,
//! prints the command that replays it, and that command reproduces the
//! failure with the same output and the same trace every time.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn racy(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../mlir-tests/racy").join(format!("{name}.mlir"))
}

/// Lowers a racy program to LLVM IR once (the replays then skip mlir-opt).
fn lowered(name: &str, dir: &Path) -> PathBuf {
    let out = dir.join(format!("{name}.ll"));
    lower_file(&racy(name), &out);
    out
}

/// Runs a replay command line as printed (`NAME=VALUE ... harness args`).
fn run_printed(command: &str, extra: &[&str]) -> Run {
    let mut line = command.to_string();
    for e in extra {
        line.push(' ');
        line.push_str(e);
    }
    let out = Command::new("sh").arg("-c").arg(&line).stdin(std::process::Stdio::null()).output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        signal: std::os::unix::process::ExitStatusExt::signal(&out.status),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The program's own output in an --echo run: the stdout lines before the
/// summary.
fn echoed(r: &Run) -> String {
    let lines: Vec<&str> = r.stdout.lines().collect();
    lines[..lines.len().saturating_sub(1)].join("\n")
}

/// Explores `name` with `flags`; asserts a failing schedule is found within
/// `bound` schedules and returns the summary's `schedule` part.
fn explore_finds(ll: &Path, name: &str, flags: &[&str], bound: u64) -> serde_json::Value {
    let (rt, check, utils) = (s(&our_runtime()), s(&racy(name)), c_runner_utils());
    let mut args = vec![ll.to_str().unwrap(), "--runtime", &rt, "--shared-lib", &utils, "--check", &check, "--json"];
    args.extend_from_slice(flags);
    let r = run(&args);
    assert_eq!(r.code, 1, "a failing schedule is exit 1; stderr: {}", r.stderr);
    assert!(r.stderr.contains("check failed"), "{}", r.stderr);
    let summary = summary(&r);
    let schedule = summary["schedule"].clone();
    let seed = schedule["failing_seed"].as_u64().unwrap_or_else(|| panic!("no failing seed: {summary}"));
    let ran = schedule["schedules"].as_u64().unwrap();
    assert!(ran <= bound, "{name} {flags:?}: {ran} schedules, more than {bound}");
    assert_eq!(summary["failed"], 1, "it stops at the first failure: {summary}");
    assert!(schedule["replay"].as_str().unwrap().contains(&format!("--replay {seed}")), "{schedule}");
    schedule
}

/// Runs the printed replay command `times` times with --echo and --trace:
/// every run fails its check the same way, prints the same bytes and
/// writes the same trace.
fn replays_identically(schedule: &serde_json::Value, dir: &Path, times: usize) {
    let command = schedule["replay"].as_str().unwrap();
    let mut first: Option<(String, Vec<u8>)> = None;
    for i in 0..times {
        let trace = dir.join(format!("replay-{i}.json"));
        let r = run_printed(command, &["--echo", "--trace", &s(&trace)]);
        assert_eq!(r.code, 1, "the replay fails again: {}\n{}", r.stdout, r.stderr);
        let out = echoed(&r);
        let trace = std::fs::read(&trace).unwrap();
        match &first {
            None => first = Some((out, trace)),
            Some((o, t)) => {
                assert_eq!(&out, o, "replay {i}: another output");
                assert!(&trace == t, "replay {i}: another trace");
            }
        }
    }
}

#[test]
fn explore_finds_a_write_write_race_and_its_replay_reproduces_it() {
    let dir = temp_dir("explore-store");
    let ll = lowered("store-store", &dir);
    for (flags, bound) in [(vec!["--explore", "50"], 20), (vec!["--explore", "50", "--strategy", "pct", "--depth", "2"], 20)] {
        let schedule = explore_finds(&ll, "store-store", &flags, bound);
        replays_identically(&schedule, &dir, 3);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn explore_finds_a_lost_update_under_both_strategies() {
    let dir = temp_dir("explore-lost");
    let ll = lowered("lost-update", &dir);
    let schedule = explore_finds(&ll, "lost-update", &["--explore", "100", "--seed", "1000"], 50);
    assert!(schedule["failing_seed"].as_u64().unwrap() >= 1000);
    let pct = explore_finds(&ll, "lost-update", &["--explore", "100", "--strategy", "pct"], 50);
    assert!(pct["steps"].as_u64().unwrap() > 1, "PCT counted the steps first: {pct}");
    replays_identically(&pct, &dir, 2);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_runtime_variable_replays_the_same_schedule_under_mlir_cpu_runner() {
    let dir = temp_dir("explore-runner");
    let ll = lowered("group-print", &dir);
    let schedule = explore_finds(&ll, "group-print", &["--explore", "50"], 20);
    let harness = run_printed(schedule["replay"].as_str().unwrap(), &["--echo"]);
    let env = schedule["replay_env"].as_str().unwrap();
    assert!(env.contains("MLIR_ASYNC_RUNTIME_SCHEDULE=random:"), "{env}");
    let pipeline = default_pipeline();
    let runner = run_printed(
        &format!(
            "{LLVM}/bin/mlir-opt '{}' --pass-pipeline='{pipeline}' | env {env} {LLVM}/bin/mlir-cpu-runner -e main \
             -entry-point-result=void -O0 -shared-libs={},{}",
            s(&racy("group-print")),
            c_runner_utils(),
            s(&our_runtime())
        ),
        &[],
    );
    assert_eq!(runner.code, 0, "{}", runner.stderr);
    assert_eq!(runner.stdout.trim_end(), echoed(&harness).trim_end(), "the runner replays the harness's schedule");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_passing_program_passes_every_schedule_and_replays_with_repeat() {
    let (rt, prog, check, utils) = (s(&our_runtime()), s(&data("hello.mlir")), s(&data("hello.check")), c_runner_utils());
    for strategy in ["random", "pct"] {
        let r = run(&[&prog, "--runtime", &rt, "--shared-lib", &utils, "--check", &check, "--explore", "20", "--strategy", strategy, "--json"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let summary = summary(&r);
        assert_eq!(summary["passed"], summary["runs"]);
        assert!(summary["schedule"]["failing_seed"].is_null(), "{summary}");
        assert!(summary["schedule"]["schedules"].as_u64().unwrap() >= 20, "{summary}");
    }
    let r = run(&[&prog, "--runtime", &rt, "--shared-lib", &utils, "--check", &check, "--replay", "7", "--repeat", "10"]);
    assert_eq!(r.code, 0, "ten replays, one output: {}", r.stderr);
    assert!(r.stdout.contains("10 runs, 10 passed") && r.stdout.contains("replayed random schedule seed 7: passed"), "{}", r.stdout);
}

#[test]
fn a_deadlock_names_its_schedule_instead_of_hanging() {
    let (rt, prog, utils) = (s(&our_runtime()), s(&data("deadlock.mlir")), c_runner_utils());
    let r = run(&[&prog, "--runtime", &rt, "--shared-lib", &utils, "--explore", "5", "--json", "--timeout", "30"]);
    assert_eq!(r.signal, Some(libc::SIGABRT), "{}", r.stderr);
    assert!(r.stderr.contains("deadlock") && r.stderr.contains("MLIR_ASYNC_RUNTIME_SCHEDULE=random:1"), "{}", r.stderr);
    assert!(r.stderr.contains("run 1 crashed: SIGABRT"), "{}", r.stderr);
    let summary = summary(&r);
    assert_eq!(summary["schedule"]["failing_seed"], 1, "{summary}");
    assert_eq!(summary["first_failure"], "run 1 crashed: SIGABRT", "{summary}");
    assert!(summary["schedule"]["replay"].as_str().unwrap().contains("--replay 1"));
}

#[test]
fn a_hang_names_its_schedule() {
    let (rt, prog) = (s(&our_runtime()), s(&data("hang.ll")));
    let r = run(&[&prog, "--runtime", &rt, "--explore", "3", "--seed", "40", "--timeout", "1", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("run 1 of 3 hung"), "{}", r.stderr);
    let summary = summary(&r);
    assert_eq!(summary["hung"], 1, "{summary}");
    assert_eq!(summary["schedule"]["failing_seed"], 40, "{summary}");
    assert!(summary["schedule"]["replay"].as_str().unwrap().ends_with("--replay 40"), "{summary}");
}

#[test]
fn bad_exploration_flags_get_one_line_and_exit_2() {
    let (rt, prog) = (s(&our_runtime()), s(&data("hello.mlir")));
    let cxx = s(&cxx_runtime());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--explore", "0"], "--explore 1000"),
        (vec!["--explore", "-3"], "whole number >= 1"),
        (vec!["--explore", "5", "--repeat", "2"], "cannot be used with"),
        (vec!["--explore", "5", "--replay", "2"], "cannot be used with"),
        (vec!["--seed", "4"], "--explore"),
        (vec!["--strategy", "pct"], "applies to --explore N or --replay SEED"),
        (vec!["--explore", "5", "--depth", "2"], "applies to --strategy pct"),
        (vec!["--explore", "5", "--strategy", "pct", "--depth", "0"], "from 1 to 1000"),
        (vec!["--explore", "5", "--strategy", "pct", "--steps", "0"], "--steps 500"),
        (vec!["--replay", "x"], "a seed is a whole number"),
        (vec!["--explore", "5", "--seed", "18446744073709551615"], "past the largest seed"),
        (vec!["--explore", "5", "--runtime", &cxx], "need our runtime"),
    ];
    for (flags, expected) in cases {
        let mut args = vec![prog.as_str()];
        if !flags.contains(&"--runtime") {
            args.extend_from_slice(&["--runtime", &rt]);
        }
        args.extend_from_slice(&flags);
        let r = run(&args);
        assert_eq!(r.code, 2, "{flags:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{flags:?}: {}", r.stderr);
        assert!(r.stderr.contains(expected), "{flags:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{flags:?}");
    }
}
