//! The trace (`MLIR_ASYNC_RUNTIME_TRACE`) and the counters
//! (`MLIR_ASYNC_RUNTIME_STATS`). The runtime reads both variables once per
//! process, so each case re-executes this test binary as a child that runs
//! a known program ([`child_program`]) with the variables set, and checks
//! the child's trace file and stderr.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::task;
use mlir_async_runtime::abi::*;
use serde_json::Value as Json;

/// Set in the child: the program to run (`fanout:N` or `fanout-twice:N`,
/// optionally `,no-destroy`).
const CHILD_ENV: &str = "TRACE_TEST_CHILD";

/// A fan-out of `n` Execute tasks, each completing its own token, all added
/// to one group; the caller blocks on the group, then one continuation
/// after the group runs and completes a last token the caller awaits.
fn fan_out(n: usize) {
    let group = mlirAsyncRuntimeCreateGroup(n as i64);
    for _ in 0..n {
        let token = mlirAsyncRuntimeCreateToken() as usize;
        let (handle, resume) = task(move || {
            // SAFETY: the task holds the producer's reference.
            unsafe { mlirAsyncRuntimeEmplaceToken(token as *mut _) };
        });
        mlirAsyncRuntimeExecute(handle, resume);
        // SAFETY: live token and group; we hold a reference to each.
        unsafe {
            mlirAsyncRuntimeAddTokenToGroup(token as *mut _, group);
            mlirAsyncRuntimeDropRef(token as *mut _, 1);
        }
    }
    let last = mlirAsyncRuntimeCreateToken();
    let last_addr = last as usize;
    let (handle, resume) = task(move || {
        // SAFETY: the continuation holds the producer's reference.
        unsafe { mlirAsyncRuntimeEmplaceToken(last_addr as *mut _) };
    });
    // SAFETY: live objects; we hold references until the end.
    unsafe {
        mlirAsyncRuntimeAwaitAllInGroup(group);
        mlirAsyncRuntimeAwaitAllInGroupAndExecute(group, handle, resume);
        mlirAsyncRuntimeAwaitToken(last);
        mlirAsyncRuntimeDropRef(last.cast(), 1);
        mlirAsyncRuntimeDropRef(group.cast(), 1);
    }
}

/// Runs in the child only (a no-op in a normal test run).
#[test]
fn child_program() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (program, n) = spec.split_once(':').expect("program:n");
    let n: usize = n.split(',').next().unwrap().parse().expect("n");
    let rounds = if program == "fanout-twice" { 2 } else { 1 };
    for _ in 0..rounds {
        fan_out(n);
        if spec.ends_with(",no-destroy") {
            // Every task has recorded its event once the runtime is idle;
            // the exit handler writes the trace.
            assert!(rust_mlir_async_runtime_wait_idle(20_000));
        } else {
            __mlir_execution_engine_destroy();
        }
    }
}

struct ChildRun {
    stderr: String,
    trace: Option<Json>,
}

/// Runs the child program with the trace at `trace` (if any) and the
/// counters on or off.
fn run_child(spec: &str, trace: Option<&Path>, stats: bool) -> ChildRun {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child_program", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, spec)
        .env_remove("MLIR_ASYNC_RUNTIME_TRACE")
        .env_remove("MLIR_ASYNC_RUNTIME_STATS")
        .env_remove("MLIR_ASYNC_RUNTIME_FUZZ");
    if let Some(path) = trace {
        let _ = std::fs::remove_file(path);
        cmd.env("MLIR_ASYNC_RUNTIME_TRACE", path);
    }
    if stats {
        cmd.env("MLIR_ASYNC_RUNTIME_STATS", "1");
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "child failed: {stderr}");
    let trace = trace.map(|path| {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("no trace at {}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("trace is not JSON: {e}"))
    });
    ChildRun { stderr, trace }
}

fn trace_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlir-async-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The counters table of `stderr`, by label.
fn counters(stderr: &str) -> HashMap<String, u64> {
    let table = stderr
        .split("mlir_async_runtime: counters since process start\n")
        .last()
        .unwrap_or_else(|| panic!("no counters table in {stderr:?}"));
    table
        .lines()
        .map_while(|line| {
            let (label, value) = line.trim().rsplit_once(' ')?;
            Some((label.trim().to_string(), value.parse().ok()?))
        })
        .collect()
}

/// Checks the trace's structure; returns its task events' origins.
fn check_trace(trace: &Json) -> Vec<String> {
    let events = trace["traceEvents"].as_array().expect("traceEvents array");
    let mut named = HashSet::new();
    let mut origins = Vec::new();
    let mut tids = HashSet::new();
    for event in events {
        let tid = event["tid"].as_u64().expect("tid");
        match event["ph"].as_str().expect("ph") {
            "M" => {
                if event["name"] == "thread_name" {
                    assert!(event["args"]["name"].is_string(), "{event}");
                    named.insert(tid);
                }
            }
            "X" => {
                // A complete event is its own begin/end pair: its duration
                // must be a non-negative number of microseconds.
                let ts = event["ts"].as_f64().expect("ts");
                let dur = event["dur"].as_f64().expect("dur");
                assert!(ts >= 0.0 && dur >= 0.0, "{event}");
                tids.insert(tid);
                if event["cat"] == "task" {
                    origins.push(event["args"]["origin"].as_str().expect("origin").to_string());
                    assert!(event["args"]["route"].is_string(), "{event}");
                } else {
                    assert_eq!(event["cat"], "wait", "{event}");
                }
            }
            other => panic!("unexpected phase {other}: {event}"),
        }
    }
    assert!(tids.is_subset(&named), "lanes without a thread name: {tids:?} vs {named:?}");
    assert_eq!(trace["otherData"]["droppedEvents"], 0);
    origins
}

#[test]
fn trace_is_valid_json_and_counts_every_task() {
    const N: usize = 300;
    let path = trace_path("fanout.json");
    let run = run_child(&format!("fanout:{N}"), Some(&path), true);
    let origins = check_trace(run.trace.as_ref().unwrap());
    let counts = counters(&run.stderr);
    assert_eq!(origins.len() as u64, counts["tasks executed"], "{}", run.stderr);
    assert_eq!(origins.iter().filter(|o| *o == "execute").count(), N);
    assert_eq!(origins.iter().filter(|o| *o == "after-group").count(), 1);
    // Every task ran on a pool worker, whose lane is named after it, or
    // (route "waiter") on the main thread while it waited for the group,
    // as many as the counters say.
    let events = run.trace.as_ref().unwrap()["traceEvents"].as_array().unwrap();
    let worker_lanes: HashSet<u64> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["args"]["name"].as_str().is_some_and(|n| n.starts_with("mlir-async-")))
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    let tasks: Vec<&Json> = events.iter().filter(|e| e["cat"] == "task").collect();
    for task in &tasks {
        let on_worker = worker_lanes.contains(&task["tid"].as_u64().unwrap());
        assert_eq!(on_worker, task["args"]["route"] != "waiter", "{task}");
    }
    let by_waiter = tasks.iter().filter(|t| t["args"]["route"] == "waiter").count() as u64;
    assert_eq!(by_waiter, counts["run by waiting threads"], "{}", run.stderr);
}

#[test]
fn counters_of_a_fan_out_of_n_tasks() {
    const N: usize = 500;
    let run = run_child(&format!("fanout:{N}"), None, true);
    let counts = counters(&run.stderr);
    assert_eq!(counts["tasks executed"], N as u64 + 1, "{}", run.stderr);
    assert_eq!(counts["from execute"], N as u64);
    assert_eq!(counts["continuations inline"] + counts["continuations via pool"], 1);
    assert_eq!(counts["tokens created"], N as u64 + 1);
    assert_eq!(counts["groups created"], 1);
    assert_eq!(counts["values created"], 0);
    assert!(counts["peak live objects"] >= 2 && counts["peak live objects"] <= N as u64 + 2);
    assert!(counts["peak tasks queued"] >= 1 && counts["peak tasks queued"] <= N as u64 + 1);
}

#[test]
fn nothing_is_printed_or_written_when_off() {
    let run = run_child("fanout:50", None, false);
    assert!(!run.stderr.contains("counters"), "{}", run.stderr);
}

#[test]
fn each_destroy_rewrites_the_whole_trace() {
    const N: usize = 100;
    let path = trace_path("twice.json");
    let run = run_child(&format!("fanout-twice:{N}"), Some(&path), true);
    let origins = check_trace(run.trace.as_ref().unwrap());
    assert_eq!(origins.len(), 2 * (N + 1));
    // Counters are cumulative too: the last table counts both rounds.
    assert_eq!(counters(&run.stderr)["tasks executed"], 2 * (N as u64 + 1));
}

#[test]
fn trace_is_written_at_exit_without_destroy() {
    const N: usize = 100;
    let path = trace_path("exit.json");
    let run = run_child(&format!("fanout:{N},no-destroy"), Some(&path), false);
    let origins = check_trace(run.trace.as_ref().unwrap());
    assert_eq!(origins.len(), N + 1);
}
