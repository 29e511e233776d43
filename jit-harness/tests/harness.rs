//! Integration tests that run the built jit-harness binary.

mod common;
use common::*;
use std::process::{Command, Stdio};

fn s(p: &std::path::Path) -> String {
    p.display().to_string()
}

#[test]
fn passing_mlir_program_under_our_runtime() {
    let (rt, check) = (s(&our_runtime()), s(&data("hello.check")));
    let utils = c_runner_utils();
    let r = run(&[&s(&data("hello.mlir")), "--runtime", &rt, "--shared-lib", &utils, "--check", &check, "--echo"]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert!(r.stdout.starts_with("40\n41\n42\n"), "echoed output: {:?}", r.stdout);
    assert!(r.stdout.contains("1 runs, 1 passed, 0 failed, 0 hung, 0 leaked"), "{}", r.stdout);
    assert!(!r.stdout.contains("leak check off"), "our runtime has the leak check: {}", r.stdout);
}

#[test]
fn default_runtime_is_next_to_the_harness() {
    // target/release/jit-harness finds target/release/libmlir_async_runtime.so.
    our_runtime();
    let r = run(&[&s(&data("ret.ll")), "--json"]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    let j = summary(&r);
    assert!(j["runtime"].as_str().unwrap().ends_with("target/release/libmlir_async_runtime.so"), "{j}");
    assert_eq!(j["leak_check"], true);
}

#[test]
fn repeated_runs_are_all_checked() {
    let (rt, check) = (s(&our_runtime()), s(&data("hello.check")));
    let utils = c_runner_utils();
    let r = run(&[&s(&data("hello.mlir")), "--runtime", &rt, "--shared-lib", &utils, "--check", &check, "--repeat", "500", "--json"]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    let j = summary(&r);
    assert_eq!(j["runs"], 500);
    assert_eq!(j["passed"], 500);
    assert_eq!(j["failed"], 0);
    assert!(j["median_us"].as_f64().unwrap() > 0.0);
    assert!(j["p99_us"].as_f64().unwrap() >= j["median_us"].as_f64().unwrap());
}

#[test]
fn ll_file_and_standard_input() {
    let dir = temp_dir("ll");
    let ll = lower_to_ll("hello", &dir);
    let (rt, check) = (s(&our_runtime()), s(&data("hello.check")));
    let utils = c_runner_utils();
    let args = ["--runtime", &rt, "--shared-lib", &utils, "--check", &check, "--repeat", "20", "--json"];
    let mut a = vec![ll.to_str().unwrap()];
    a.extend_from_slice(&args);
    let r = run(&a);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert_eq!(summary(&r)["passed"], 20);
    // `-` reads standard input: LLVM IR, and MLIR in a pipe after mlir-opt.
    let text = std::fs::read(&ll).unwrap();
    let mut a = vec!["-"];
    a.extend_from_slice(&args);
    let r = run_with_stdin(&a, Some(&text));
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert_eq!(summary(&r)["passed"], 20);
    let mlir = std::fs::read(data("hello.mlir")).unwrap();
    let r = run_with_stdin(&a, Some(&mlir));
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert_eq!(summary(&r)["passed"], 20);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn same_program_passes_against_both_runtimes() {
    let utils = c_runner_utils();
    let check = s(&data("hello.check"));
    for rt in [our_runtime(), cxx_runtime()] {
        let rt = s(&rt);
        let r = run(&[&s(&data("hello.mlir")), "--runtime", &rt, "--shared-lib", &utils, "--check", &check, "--repeat", "100", "--json"]);
        assert_eq!(r.code, 0, "{rt}: stderr: {}", r.stderr);
        let j = summary(&r);
        assert_eq!(j["passed"], 100, "{rt}: {j}");
    }
}

#[test]
fn cxx_runtime_runs_without_leak_check_and_says_so() {
    let rt = s(&cxx_runtime());
    let r = run(&[&s(&data("leak.ll")), "--runtime", &rt, "--repeat", "3"]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert!(r.stdout.contains("leak check off: the runtime has no rust_mlir_async_runtime_stats"), "{}", r.stdout);
}

#[test]
fn wrong_output_fails_every_run() {
    let (rt, check) = (s(&our_runtime()), s(&data("wrong.check")));
    let utils = c_runner_utils();
    let r = run(&[&s(&data("hello.mlir")), "--runtime", &rt, "--shared-lib", &utils, "--check", &check, "--repeat", "4", "--json"]);
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    let j = summary(&r);
    assert_eq!((j["runs"].as_u64(), j["failed"].as_u64(), j["passed"].as_u64()), (Some(4), Some(4), Some(0)), "{j}");
    for i in 1..=4 {
        assert!(r.stderr.contains(&format!("run {i}: check failed")), "{}", r.stderr);
    }
    assert!(r.stderr.contains("wrong.check:3:16: error: CHECK-NEXT: expected string not found in input"), "{}", r.stderr);
    // FileCheck's diagnostics and input dump, once for a repeated failure.
    assert_eq!(r.stderr.matches("Input was:").count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("  next:3'0     ~~~\n  next:3'1     ?   possible intended match\n"), "{}", r.stderr);
    assert!(r.stderr.contains("<stdout>:3:1: note: possible intended match here"), "{}", r.stderr);
    assert!(j["first_failure"].as_str().unwrap().ends_with("CHECK-NEXT: expected string not found in input"), "{j}");
}

/// The loaded libraries are a value whose Drop runs the destroy hooks:
/// once after the runs, and once on an error after the load (our runtime
/// prints its --stats counters at destroy, so they show each call).
#[test]
fn the_destroy_hook_runs_once_on_every_path() {
    let rt = s(&our_runtime());
    let counters = "counters since process start";
    let r = run(&[&s(&data("ret.ll")), "--runtime", &rt, "--repeat", "3", "--stats"]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert_eq!(r.stderr.matches(counters).count(), 1, "{}", r.stderr);
    let r = run(&[&s(&data("unresolved.ll")), "--runtime", &rt, "--stats"]);
    assert_eq!(r.code, 2, "stderr: {}", r.stderr);
    assert_eq!(r.stderr.matches(counters).count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("unresolved symbol `no_such_function_anywhere`"), "{}", r.stderr);
}

/// An expected failure (lit's XFAIL, --expect-failure) is one line and no
/// FileCheck dump; --verbose brings the dump back; a leak is never hidden.
#[test]
fn an_expected_failure_is_one_line() {
    let (rt, check) = (s(&our_runtime()), s(&data("wrong.check")));
    let (hello, utils) = (s(&data("hello.mlir")), c_runner_utils());
    let note = "XFAIL: rust-runtime, see docs/lowering-bugs.md";
    let base = [hello.as_str(), "--runtime", &rt, "--shared-lib", &utils, "--check", &check, "--repeat", "4", "--name", "hello"];
    let r = run(&[&base[..], &["--expect-failure", note]].concat());
    assert_eq!(r.code, 1, "the exit status is unchanged; stderr: {}", r.stderr);
    assert_eq!(r.stdout, format!("expected failure: hello: 4 of 4 runs failed their check; {note}\n"));
    assert_eq!(r.stderr, "", "no run described, no dump");
    let r = run(&[&base[..], &["--expect-failure", note, "--verbose"]].concat());
    assert_eq!(r.stderr.matches("Input was:").count(), 1, "{}", r.stderr);
    assert!(r.stdout.starts_with("expected failure: hello: 4 of 4 runs"), "{}", r.stdout);
    let r = run(&[&base[..], &["--expect-failure", note, "--json"]].concat());
    assert_eq!(summary(&r)["expected_failure"].as_str(), Some(note));
    // A program that passes though expected to fail says so, in its usual line.
    let r = run(&[hello.as_str(), "--runtime", &rt, "--shared-lib", &utils, "--check", &s(&data("hello.check")), "--expect-failure", note]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert!(r.stdout.contains("1 passed") && r.stdout.ends_with(&format!("(passed, though expected to fail: {note})\n")), "{}", r.stdout);
    // A leak is not what was expected: described, and the usual summary.
    let r = run(&[&s(&data("leak.ll")), "--runtime", &rt, "--repeat", "2", "--expect-failure", note]);
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    assert!(r.stderr.contains("run 1 leaked 1 runtime objects"), "{}", r.stderr);
    assert!(r.stdout.contains("2 leaked") && !r.stdout.contains("expected failure"), "{}", r.stdout);
}

#[test]
fn filecheck_options_reach_filecheck() {
    let dir = temp_dir("fcopts");
    let check = dir.join("c.check");
    std::fs::write(&check, "CHECK: 40\nCHECK: 42\n").unwrap();
    let (rt, check) = (s(&our_runtime()), s(&check));
    let (hello, utils) = (s(&data("hello.mlir")), c_runner_utils());
    let base = [hello.as_str(), "--runtime", &rt, "--shared-lib", &utils, "--check", &check];
    let run_with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        run(&a)
    };
    assert_eq!(run_with(&[]).code, 0);
    let r = run_with(&["--implicit-check-not", "41"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("command line:1:22: error: IMPLICIT-CHECK-NOT: excluded string found in input"), "{}", r.stderr);
    let r = run_with(&["--check-prefixes", "CHECK,OTHER"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("FileCheck rejects the check file: error: no check strings found with prefix 'OTHER:'"), "{}", r.stderr);
    assert_eq!(run_with(&["--check-prefixes", "CHECK,OTHER", "--allow-unused-prefixes"]).code, 0);
    std::fs::write(&check, "CHECK: {{^}}41\n").unwrap();
    assert_eq!(run_with(&["--match-full-lines"]).code, 0);
    std::fs::write(&check, "CHECK: {{^}}4\n").unwrap();
    assert_eq!(run_with(&[]).code, 0);
    assert_eq!(run_with(&["--match-full-lines"]).code, 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn i32_entry_result_is_checked_like_mlir_cpu_runner_prints_it() {
    let dir = temp_dir("ret");
    let check = dir.join("ret.check");
    std::fs::write(&check, "CHECK: {{^}}7{{$}}\n").unwrap();
    let rt = s(&our_runtime());
    let r = run(&[&s(&data("ret.ll")), "--runtime", &rt, "--check", check.to_str().unwrap(), "--repeat", "3"]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    std::fs::write(&check, "CHECK: 8\n").unwrap();
    let r = run(&[&s(&data("ret.ll")), "--runtime", &rt, "--check", check.to_str().unwrap()]);
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn hung_run_is_reported_by_the_watchdog() {
    let rt = s(&our_runtime());
    let t = std::time::Instant::now();
    let r = run(&[&s(&data("hang.ll")), "--runtime", &rt, "--repeat", "3", "--timeout", "0.5", "--json"]);
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    assert!(t.elapsed().as_secs_f64() < 20.0);
    assert!(r.stderr.contains("run 1 of 3 hung: no result after 0.5 s"), "{}", r.stderr);
    assert!(r.stderr.contains("1 live tokens, 0 live values, 0 live groups, 0 tasks in flight"), "{}", r.stderr);
    let j = summary(&r);
    assert_eq!((j["hung"].as_u64(), j["runs"].as_u64(), j["passed"].as_u64()), (Some(1), Some(1), Some(0)), "{j}");
    // The C++ runtime hangs the same way; it has no counts to show.
    let rt = s(&cxx_runtime());
    let r = run(&[&s(&data("hang.ll")), "--runtime", &rt, "--timeout", "0.5"]);
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    assert!(r.stderr.contains("run 1 of 1 hung") && r.stderr.contains("counts unavailable"), "{}", r.stderr);
    assert!(r.stdout.contains("1 hung"), "{}", r.stdout);
}

#[test]
fn leaking_program_is_reported_under_our_runtime() {
    let rt = s(&our_runtime());
    let r = run(&[&s(&data("leak.ll")), "--runtime", &rt, "--repeat", "3", "--json"]);
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    let j = summary(&r);
    assert_eq!((j["leaked"].as_u64(), j["passed"].as_u64()), (Some(3), Some(0)), "{j}");
    assert!(r.stderr.contains("run 1 leaked 1 runtime objects (live tokens 0 -> 1"), "{}", r.stderr);
    assert!(r.stderr.contains("run 3 leaked 1 runtime objects (live tokens 2 -> 3"), "{}", r.stderr);
    // --no-leak-check turns it off, and says so.
    let r = run(&[&s(&data("leak.ll")), "--runtime", &rt, "--no-leak-check"]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert!(r.stdout.contains("leak check off: disabled by --no-leak-check"), "{}", r.stdout);
}

/// Every bad input: its message, one line on stderr, its exit code, and no
/// panic or backtrace.
#[test]
fn bad_inputs_give_one_line_and_their_exit_code() {
    let rt = s(&our_runtime());
    let utils = c_runner_utils();
    let dir = temp_dir("bad");
    let empty_check = dir.join("empty.check");
    std::fs::write(&empty_check, "no directives here\n").unwrap();
    let dag_not = dir.join("dag-not.check");
    std::fs::write(&dag_not, "CHECK: 40\nCHECK-DAG-NOT: 41\n").unwrap();
    let hello = s(&data("hello.mlir"));
    let hello_ll = lower_to_ll("hello", &dir);
    let hello_ll = s(&hello_ll);
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (vec!["/nonexistent/prog.ll".into()], 2, "cannot read /nonexistent/prog.ll: No such file or directory"),
        (vec![s(&data("bad.ll"))], 2, "bad.ll:2:11: error: expected value token (in `ret i32 oops`)"),
        (vec![hello_ll.clone(), "--shared-lib".into(), utils.clone(), "--entry".into(), "nope".into()], 2, "entry point `nope` not found"),
        (vec![s(&data("typed.ll"))], 2, "entry point `main` has type `i64 (i32)`; expected `void ()` or `i32 ()`"),
        (vec![hello_ll.clone(), "--shared-lib".into(), "/nonexistent/libx.so".into()], 2, "shared library /nonexistent/libx.so: no such file"),
        (vec![hello_ll.clone(), "--runtime".into(), "/nonexistent/librt.so".into()], 2, "runtime library /nonexistent/librt.so: no such file"),
        (vec![hello_ll.clone(), "--runtime".into(), utils.clone()], 2, "is not an async runtime: it does not export mlirAsyncRuntimeAddRef"),
        (vec![hello_ll.clone(), "--pipeline".into(), "x".into()], 2, "--pipeline applies to MLIR input"),
        (vec![hello.clone(), "--input-format".into(), "ll".into(), "--pipeline".into(), "x".into()], 2, "conflicts with --input-format ll"),
        (vec![hello_ll.clone(), "--check-prefix".into(), "X".into()], 2, "--check"),
        (vec![hello_ll.clone(), "--repeat".into(), "0".into()], 2, "--repeat"),
        (vec![hello_ll.clone(), "--no-such-flag".into()], 2, "unexpected argument '--no-such-flag'"),
        (vec![hello_ll.clone()], 2, "unresolved symbol `printI64` (and 1 more: printNewline)"),
        (vec![s(&data("unresolved.ll"))], 2, "unresolved symbol `no_such_function_anywhere`"),
        (vec![hello_ll.clone(), "--shared-lib".into(), utils.clone(), "--llvm-passes".into(), "verify".into()], 2, "still calls the coroutine intrinsic llvm.coro."),
        (vec![hello_ll.clone(), "--shared-lib".into(), utils.clone(), "--check".into(), s(&empty_check)], 2, "FileCheck rejects the check file: error: no check strings found with prefix 'CHECK:'"),
        (vec![hello_ll.clone(), "--shared-lib".into(), utils.clone(), "--check".into(), s(&dag_not)], 2, "dag-not.check:2:7: error: unsupported -NOT combo on prefix 'CHECK'"),
        (vec![hello_ll.clone(), "--check".into(), s(&data("hello.check")), "--check-prefix".into(), "bad prefix".into()], 2, "error: supplied check prefix must start with a letter"),
        (vec![hello_ll.clone(), "--check".into(), "/nonexistent/x.check".into()], 2, "cannot read check file /nonexistent/x.check: No such file or directory"),
        (vec![hello.clone(), "--pipeline".into(), "builtin.module(no-such-pass)".into()], 2, "mlir-opt rejected"),
        (vec![hello.clone(), "--mlir-bin".into(), "/nonexistent".into()], 2, "cannot run /nonexistent/mlir-opt"),
        (vec![hello_ll.clone(), "--timeout".into(), "1e308".into()], 2, "invalid value '1e308' for '--timeout <SECS>': the timeout is a number of seconds from 0 (no limit) to 1e9"),
        (vec![hello_ll.clone(), "--timeout".into(), "-1".into()], 2, "invalid value '-1' for '--timeout <SECS>'"),
        (vec![hello_ll.clone(), "--timeout".into(), "nan".into()], 2, "invalid value 'nan' for '--timeout <SECS>'"),
        (vec![hello_ll.clone(), "--repeat".into(), "-1".into()], 2, "invalid value '-1' for '--repeat <N>': the number of runs is a whole number >= 1, e.g. --repeat 1000"),
        (vec![hello_ll.clone(), "--repeat".into(), "1.5".into()], 2, "invalid value '1.5' for '--repeat <N>'"),
        (vec![hello_ll.clone(), "-O".into(), "-1".into()], 2, "invalid value '-1' for '-O <LEVEL>': the optimization level is 0, 1, 2 or 3"),
        (vec![hello_ll.clone(), "--trace".into(), "/nonexistent/dir/t.json".into()], 2, "cannot write the trace to /nonexistent/dir/t.json: No such file or directory"),
        (vec![hello_ll.clone(), "--trace".into(), s(&dir)], 2, "cannot write the trace to"),
        (vec![hello_ll.clone(), "--trace".into(), s(&data("ret.ll")) + "/t.json"], 2, "ret.ll/t.json: Not a directory"),
    ];
    for (args, code, msg) in cases {
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.extend_from_slice(&["--runtime", &rt]);
        if args.iter().any(|x| x == "--runtime") {
            a.truncate(a.len() - 2);
        }
        let r = run(&a);
        assert_eq!(r.code, code, "{args:?}: stderr: {}", r.stderr);
        assert!(r.stderr.contains(msg), "{args:?}: expected {msg:?} in {:?}", r.stderr);
        assert_eq!(r.stderr.trim_end().lines().count(), 1, "{args:?}: not one line: {:?}", r.stderr);
        assert!(r.stderr.starts_with("jit-harness: "), "{args:?}: {:?}", r.stderr);
        assert!(!r.stderr.contains("panicked") && !r.stderr.contains("RUST_BACKTRACE"), "{:?}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}: stdout {:?}", r.stdout);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn help_lists_the_flags() {
    let r = run(&["--help"]);
    assert_eq!(r.code, 0);
    for f in [
        "--runtime", "--shared-lib", "--entry", "--repeat", "--timeout", "--check", "--json", "-O", "--pipeline",
        "--check-prefix", "--implicit-check-not", "--match-full-lines", "--strict-whitespace", "--allow-empty",
    ] {
        assert!(r.stdout.contains(f), "--help lacks {f}");
    }
    assert!(r.stdout.contains("Exit status:\n  0 "), "--help does not document the exit status");
    assert!(r.stdout.contains("destroy hook hung"), "--help does not document the destroy hook's exit status");
}

#[test]
fn a_crashing_run_is_named_before_the_process_dies() {
    let rt = s(&our_runtime());
    let r = run(&[&s(&data("crash.ll")), "--runtime", &rt, "--repeat", "10"]);
    assert_eq!(r.signal, Some(libc::SIGSEGV), "killed by the re-raised signal; stderr: {}", r.stderr);
    assert!(r.stderr.starts_with("jit-harness: run 3 crashed: SIGSEGV (in thread "), "stderr: {}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

/// A stack overflow leaves no stack for a signal handler; the harness gives
/// every thread an alternate one, including the threads each runtime
/// library creates, and tells the overflow from other faults.
#[test]
fn a_stack_overflow_is_named_on_any_thread_under_both_runtimes() {
    for rt in [our_runtime(), cxx_runtime()] {
        let ours = rt == our_runtime();
        let rt = s(&rt);
        for (program, run_no) in [("overflow-worker.ll", 1), ("overflow-main.ll", 2)] {
            let r = run(&[&s(&data(program)), "--runtime", &rt, "--repeat", "3", "--timeout", "30"]);
            if ours && program == "overflow-worker.ll" {
                // Our runtime runs tasks on task stacks of its own, and
                // names the overflow of one itself, with the knob that sets
                // their size, then aborts; the harness names the abort. The
                // task runs on a worker, or on the main thread while it
                // waits for it (which runs queued tasks), and is named on
                // either.
                assert_eq!(r.signal, Some(libc::SIGABRT), "{program} under {rt}: stderr: {}", r.stderr);
                let lines: Vec<&str> = r.stderr.lines().collect();
                assert_eq!(lines.len(), 2, "{program} under {rt}: {}", r.stderr);
                assert!(lines[0].contains("MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE"), "{}", r.stderr);
                assert!(lines[1].starts_with("jit-harness: run 1 crashed: SIGABRT (in thread "), "{}", r.stderr);
                continue;
            }
            assert_eq!(r.signal, Some(libc::SIGSEGV), "{program} under {rt}: stderr: {}", r.stderr);
            let want = format!("jit-harness: run {run_no} crashed: SIGSEGV (stack overflow in thread ");
            assert!(r.stderr.starts_with(&want), "{program} under {rt}: stderr: {:?}", r.stderr);
            assert!(r.stderr.contains(", tid "), "{}", r.stderr);
            assert_eq!(r.stderr.lines().count(), 1, "{program} under {rt}: {}", r.stderr);
        }
        // A fault that is not an overflow, on a worker, is not called one.
        let r = run(&[&s(&data("crash-worker.ll")), "--runtime", &rt, "--timeout", "30"]);
        assert_eq!(r.signal, Some(libc::SIGSEGV), "{rt}: stderr: {}", r.stderr);
        assert!(r.stderr.starts_with("jit-harness: run 1 crashed: SIGSEGV (in thread "), "{rt}: {:?}", r.stderr);
        assert!(!r.stderr.contains("overflow"), "{rt}: {}", r.stderr);
    }
    // With waiters running no tasks, the overflowing task runs on a
    // worker, which the line names.
    let r = run_env(
        &[&s(&data("overflow-worker.ll")), "--runtime", &s(&our_runtime()), "--timeout", "30"],
        &[("MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS", "0")],
    );
    assert!(r.stderr.contains("SIGABRT (in thread mlir-async-"), "{}", r.stderr);
    // Our runtime's workers are named; with task stacks off, a task's
    // overflow is on its worker's own stack, which the harness names.
    let r = run_env(
        &[&s(&data("overflow-worker.ll")), "--runtime", &s(&our_runtime()), "--timeout", "30"],
        &[("MLIR_ASYNC_RUNTIME_TASK_STACKS", "0")],
    );
    assert!(r.stderr.contains("stack overflow in thread mlir-async-"), "{}", r.stderr);
}

#[test]
fn a_destroy_hook_that_hangs_is_reported_by_the_watchdog() {
    // Under the C++ runtime the runs end, and its destroy hook then waits
    // for the blocked task forever.
    let rt = s(&cxx_runtime());
    let t = std::time::Instant::now();
    let r = run(&[&s(&data("blocked-task.ll")), "--runtime", &rt, "--repeat", "2", "--timeout", "0.5", "--json"]);
    assert!(t.elapsed().as_secs_f64() < 20.0);
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    assert!(
        r.stderr.starts_with("jit-harness: the runtime's destroy hook hung: no return after 0.5 s, after the last of 2 runs"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    let j = summary(&r);
    assert_eq!((j["runs"].as_u64(), j["passed"].as_u64(), j["destroy_hung"].as_bool()), (Some(2), Some(2), Some(true)), "{j}");
    // Under ours the run itself waits for the task: a hung run.
    let r = run(&[&s(&data("blocked-task.ll")), "--runtime", &s(&our_runtime()), "--timeout", "0.5", "--json"]);
    assert_eq!(r.code, 1, "stderr: {}", r.stderr);
    assert!(r.stderr.contains("run 1 of 1 hung: no result after 0.5 s"), "{}", r.stderr);
    assert_eq!(summary(&r)["destroy_hung"], false);
}

#[test]
fn a_relative_library_path_is_a_path_in_the_current_directory() {
    let rt = our_runtime();
    let dir = rt.parent().unwrap();
    let ret = s(&data("ret.ll"));
    let r = run_in(dir, &[&ret, "--runtime", "libmlir_async_runtime.so", "--json"]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert_eq!(summary(&r)["runtime"], "libmlir_async_runtime.so");
    let r = run_in(dir, &[&ret, "--runtime", "./libmlir_async_runtime.so"]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    // A bare name that is not in the current directory is not looked up
    // in the system's library directories.
    let r = run_in(dir, &[&ret, "--runtime", "libc.so.6"]);
    assert_eq!(r.code, 2, "stderr: {}", r.stderr);
    assert_eq!(r.stderr.trim_end(), "jit-harness: runtime library libc.so.6: no such file");
    let utils = std::path::Path::new(&c_runner_utils()).file_name().unwrap().to_str().unwrap().to_string();
    let r = run_in(dir, &[&ret, "--runtime", "libmlir_async_runtime.so", "--shared-lib", &utils]);
    assert_eq!(r.code, 2, "stderr: {}", r.stderr);
    assert!(r.stderr.contains(&format!("shared library {utils}: no such file")), "{}", r.stderr);
}

#[test]
fn a_huge_failing_check_line_is_cut_in_every_message() {
    let dir = temp_dir("huge");
    let check = dir.join("huge.check");
    std::fs::write(&check, format!("CHECK: 40\nCHECK-NEXT: {}\n", "x".repeat(10 << 20))).unwrap();
    let (rt, check) = (s(&our_runtime()), s(&check));
    let utils = c_runner_utils();
    let r = run(&[&s(&data("hello.mlir")), "--runtime", &rt, "--shared-lib", &utils, "--check", &check, "--repeat", "3", "--json"]);
    assert_eq!(r.code, 1, "stderr: {}", &r.stderr[..r.stderr.len().min(2000)]);
    assert!(r.stderr.len() < 8000, "{} bytes on stderr", r.stderr.len());
    assert!(r.stderr.contains("huge.check:2:13: error: CHECK-NEXT: expected string not found in input"), "{}", r.stderr);
    assert!(r.stderr.contains("more bytes]"), "{}", r.stderr);
    assert!(r.stderr.lines().all(|l| l.len() < 400), "{}", r.stderr);
    assert!(r.stdout.len() < 2000, "{} bytes on stdout", r.stdout.len());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn trace_and_stats_cover_every_repeated_run() {
    let trace = temp_dir("trace").join("hello.json");
    let (rt, check) = (s(&our_runtime()), s(&data("hello.check")));
    let utils = c_runner_utils();
    let r = run(&[
        &s(&data("hello.mlir")), "--runtime", &rt, "--shared-lib", &utils, "--check", &check,
        "--repeat", "5", "--trace", &s(&trace), "--stats",
    ]);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    let executed: u64 = r
        .stderr
        .lines()
        .find(|l| l.trim_start().starts_with("tasks executed"))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
        .unwrap_or_else(|| panic!("no counters on stderr: {}", r.stderr));
    assert!(executed >= 10, "two tasks per run over 5 runs, got {executed}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let tasks = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "task")
        .count() as u64;
    assert_eq!(tasks, executed, "the trace holds every task the counters saw");
}

/// --mlir-bin defaults to $LLVM_PREFIX/bin, read when the harness runs, and
/// the prefix's name (.../llvm-N) picks the default pipeline's MLIR
/// version: a symlinked install under another directory works.
#[test]
fn mlir_bin_follows_llvm_prefix_at_run_time() {
    let rt = s(&our_runtime());
    let utils = c_runner_utils();
    let check = s(&data("hello.check"));
    let hello = s(&data("hello.mlir"));
    let with_prefix = |prefix: &str| {
        let out = Command::new(harness())
            .args([&hello, "--runtime", &rt, "--shared-lib", &utils, "--check", &check])
            .env("LLVM_PREFIX", prefix)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = with_prefix("/nonexistent/llvm-19");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot run /nonexistent/llvm-19/bin/mlir-opt"), "{err}");
    let (code, err) = with_prefix("/nonexistent/llvm-13");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no MLIR 13 in pipelines.txt"), "{err}");
    let dir = temp_dir("symlinked-prefix");
    let link = dir.join("llvm-19");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(jit_harness::toolchain::llvm_prefix(), &link).unwrap();
    let (code, err) = with_prefix(&s(&link));
    assert_eq!(code, Some(0), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}
