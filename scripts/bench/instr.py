#!/usr/bin/env python3
"""Deterministic per-task costs: callgrind instructions and heap allocations.

For fan-out, nested-chain and fib-spawn (bench/*.mlir, whose size the
environment variable BENCH_SIZE overrides), each runtime runs the same
executable at two sizes under callgrind, with one worker
(MLIR_ASYNC_RUNTIME_WORKERS=1); the difference of the two runs divided by the
difference in spawned tasks is the cost per task, so start-up, loading and
teardown cancel:

    instructions per task = (I(n2) - I(n1)) / (tasks(n2) - tasks(n1))
    allocations per task  = (A(n2) - A(n1)) / (tasks(n2) - tasks(n1))

Each program is compiled ahead of time, the way mlir-cpu-runner -O0 does it
(mlir-opt with bench.py's pipeline, mlir-translate, opt default<O0> for the
coroutine passes, llc -O0), and linked with a tiny driver (main calls the
program's main, then __mlir_execution_engine_destroy) against each runtime:
no JIT runs under valgrind, which keeps the gate fast and its counts
repeatable. Allocations are counted from callgrind's call counts
(scripts/bench/callgrind.py).

  scripts/bench/instr.py                     ours, floor and C++: a table
  scripts/bench/instr.py --check             ours (and the floor) against
                                             bench/instr-budget.json; exit 1
                                             when a number is > 3% above it
  scripts/bench/instr.py --write-budget      store ours' numbers as the budget
                                             (only lowers, unless --allow-raise)

Exit status: 0 ok, 1 a check failed or a run failed, 2 usage or set-up error.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (scripts/bench/bench.py: workloads and pipelines)
import callgrind  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BUDGET = REPO / "bench" / "instr-budget.json"
TOLERANCE = 0.03


def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


class Gate:
    """One workload of the gate: its program, two sizes, what they mean."""

    def __init__(self, name, sizes, tasks, expect, what):
        self.name, self.sizes, self.tasks, self.expect = name, sizes, tasks, expect
        self.what = what


# Sizes with the same number of digits: the environment, and with it the
# initial stack, is then the same size in both runs.
GATES = [
    Gate("fan-out", (10000, 50000), lambda n: n, lambda n: n * (n - 1) // 2,
         "N tasks into one group, one blocking await_all"),
    # The C++ runtime overflows its stack at 50,000 levels under valgrind.
    Gate("nested-chain", (10000, 30000), lambda n: n + 1, lambda n: n,
         "N nested levels, each awaiting the next (coroutine awaits)"),
    Gate("fib-spawn", (18, 22), lambda n: fib(n + 1) - 1, fib,
         "fib(N), one async.execute per call with N >= 2"),
]

DRIVER_C = """\
/* instr.py: runs the compiled program's main, then the runner's
 * destroy hook, as mlir-cpu-runner would. It also provides the four
 * functions of libmlir_c_runner_utils the programs call (once each, outside
 * the measured work): that library pulls in libLLVM, whose loading would be
 * most of every run's time under valgrind. */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
void bench_main(void);
void __mlir_execution_engine_destroy(void);
double rtclock(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
void printI64(int64_t x) { printf("%" PRId64, x); }
void printF64(double x) { printf("%g", x); }
void printNewline(void) { putchar('\\n'); }
int main(void) {
  bench_main();
  __mlir_execution_engine_destroy();
  return 0;
}
"""


class SetupError(Exception):
    pass


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SetupError(f"{cmd[0]} failed ({r.returncode}): "
                         f"{(r.stderr or r.stdout).strip()[-1500:]}")
    return r


def compile_program(gate: Gate, args) -> Path:
    """bench/NAME.mlir -> out/NAME.o (bench_main), as mlir-cpu-runner -O0."""
    w = bench.Workload(args.bench_dir / f"{gate.name}.mlir")
    out = args.out
    bench.lower(w, args.llvm_bin, out, want_ir=True)
    if w.lower_error:
        raise SetupError(w.lower_error)
    ll = w.llvm_ir
    text = ll.read_text()
    if text.count("define void @main()") != 1:
        raise SetupError(f"{ll}: expected one 'define void @main()'")
    ll.write_text(text.replace("define void @main()",
                               "define void @bench_main()"))
    bc, obj = out / f"{gate.name}.bc", out / f"{gate.name}.o"
    # default<O0> runs the coroutine passes the async lowering needs.
    run([str(args.llvm_bin / "opt"), "-passes=default<O0>", str(ll),
         "-o", str(bc)])
    run([str(args.llvm_bin / "llc"), "-O0", "-relocation-model=pic",
         "-filetype=obj", str(bc), "-o", str(obj)])
    return obj


def link(obj: Path, runtime: Path, exe: Path, args) -> None:
    driver = args.out / "driver.c"
    run([args.cc, "-O2", "-o", str(exe), str(driver), str(obj), str(runtime),
         f"-Wl,-rpath,{runtime.parent}", "-Wl,-z,now"])


def measure(exe: Path, size: int, expect: int, cg_out: Path, args) -> dict:
    env = dict(os.environ, BENCH_SIZE=str(size), MLIR_ASYNC_RUNTIME_WORKERS="1")
    for k in ("MLIR_ASYNC_RUNTIME_FUZZ", "MLIR_ASYNC_RUNTIME_TRACE",
              "MLIR_ASYNC_RUNTIME_STATS"):
        env.pop(k, None)
    cmd = [args.valgrind, "--tool=callgrind", f"--callgrind-out-file={cg_out}",
           "--dump-line=no", "--dump-instr=no", str(exe)]
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=args.timeout, stdin=subprocess.DEVNULL)
    secs = time.monotonic() - start
    lines = r.stdout.split()
    if r.returncode != 0 or not lines or lines[0] != str(expect):
        got = lines[0] if lines else "nothing"
        raise RuntimeError(f"{exe.name} BENCH_SIZE={size}: exit {r.returncode}, "
                           f"printed {got}, expected {expect}: "
                           f"{r.stderr.strip()[-800:]}")
    c = callgrind.parse_file(cg_out)
    return {"instructions": c.instructions,
            "allocations": c.total_allocations,
            "allocations_by_entry": dict(c.allocations), "seconds": secs}


def per_task(gate: Gate, small: dict, large: dict) -> dict:
    dt = gate.tasks(gate.sizes[1]) - gate.tasks(gate.sizes[0])
    return {
        "instructions_per_task":
            round((large["instructions"] - small["instructions"]) / dt, 1),
        "allocations_per_task":
            round((large["allocations"] - small["allocations"]) / dt, 3),
        "tasks": [gate.tasks(s) for s in gate.sizes]}


METRICS = ("instructions_per_task", "allocations_per_task")


def check(ours: dict, budget: dict, tolerance: float) -> list[str]:
    """Every number of ours more than `tolerance` above its budget."""
    bad = []
    for name, b in budget.get("workloads", {}).items():
        m = ours.get(name)
        if m is None:
            bad.append(f"{name}: in the budget but not measured")
            continue
        for k in METRICS:
            if k in b and m[k] > b[k] * (1 + tolerance):
                bad.append(f"{name} {k}: {m[k]:g} > budget {b[k]:g} "
                           f"+{tolerance:.0%} = {b[k] * (1 + tolerance):g}")
    return bad


def new_budget(ours: dict, old: dict, allow_raise: bool) -> tuple[dict, list[str]]:
    """The budget with ours' numbers; numbers above the old budget are kept
    at the old value (and listed) unless allow_raise."""
    kept = []
    workloads = dict(old.get("workloads", {}))   # --only keeps the others
    for name, m in ours.items():
        ob = old.get("workloads", {}).get(name, {})
        entry = {}
        for k in METRICS:
            if k in ob and m[k] > ob[k] and not allow_raise:
                entry[k] = ob[k]
                kept.append(f"{name} {k}: measured {m[k]:g} > budget {ob[k]:g}, "
                            "kept (--allow-raise to raise it)")
            else:
                entry[k] = m[k]
        workloads[name] = entry
    return {"comment": old.get("comment", BUDGET_COMMENT),
            "tolerance": old.get("tolerance", TOLERANCE),
            "workloads": workloads}, kept


BUDGET_COMMENT = (
    "Per-task callgrind costs of our runtime with one worker (make "
    "bench-instr). make test fails when a number is more than `tolerance` "
    "above its value here. After an improvement, lower it: make "
    "bench-instr-budget (scripts/bench/instr.py --write-budget).")


def fmt_row(name: str, results: dict, runtimes: list[str],
            budget: dict) -> list[str]:
    row = [name]
    for rt in runtimes:
        m = results.get(rt, {}).get(name)
        row += ([f"{m['instructions_per_task']:.0f}",
                 f"{m['allocations_per_task']:.2f}"] if m else ["FAIL", "FAIL"])
    b = budget.get("workloads", {}).get(name)
    if b:
        row += [f"{b['instructions_per_task']:.0f}",
                f"{b['allocations_per_task']:.2f}"]
    else:
        row += ["-", "-"]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="See bench/README.md, section 'make bench-instr'.")
    bench.add_common_args(ap, REPO / "target/bench-instr")
    ap.add_argument("--floor", type=Path,
                    default=REPO / "target/floor/libmlir_async_floor.so",
                    help="the floor runtime (make floor); '' to skip")
    ap.add_argument("--budget", type=Path, default=BUDGET)
    ap.add_argument("--check", action="store_true",
                    help="compare ours with the budget (exit 1 if above); "
                    "measures ours and the floor only")
    ap.add_argument("--write-budget", action="store_true",
                    help="write ours' numbers into the budget file")
    ap.add_argument("--allow-raise", action="store_true",
                    help="with --write-budget: also raise numbers")
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="only these workloads (repeatable or comma list)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                    help="valgrind runs at a time (default: CPUs)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--valgrind", default="valgrind")
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    args.llvm_lib = args.llvm_bin.parent / "lib"
    if args.allow_raise and not args.write_budget:
        ap.error("--allow-raise only goes with --write-budget")
    if args.jobs < 1:
        ap.error("--jobs must be >= 1")

    gates = GATES
    if args.only:
        only = {n for o in args.only for n in o.split(",") if n}
        unknown = only - {g.name for g in GATES}
        if unknown:
            ap.error(f"unknown workload(s) {sorted(unknown)}; "
                     f"have {[g.name for g in GATES]}")
        gates = [g for g in GATES if g.name in only]

    runtimes = {"ours": args.runtime}
    if str(args.floor) not in ("", "."):
        runtimes["floor"] = args.floor
    if str(args.cxx) not in ("", ".") and not (args.check or args.write_budget):
        runtimes["C++"] = args.cxx
    for tool in (args.valgrind, args.cc):
        if shutil.which(tool) is None:
            print(f"instr.py: {tool} not found (make setup installs it)",
                  file=sys.stderr)
            return 2
    for rt, p in runtimes.items():
        if not p.is_file():
            print(f"instr.py: {rt} runtime not found: {p}", file=sys.stderr)
            return 2
        runtimes[rt] = p.resolve()
    budget = {}
    if args.budget.exists():
        budget = json.loads(args.budget.read_text())
    elif args.check:
        print(f"instr.py: no budget file {args.budget} "
              "(write one with --write-budget)", file=sys.stderr)
        return 2

    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "driver.c").write_text(DRIVER_C)
    exes = {}
    try:
        for g in gates:
            obj = compile_program(g, args)
            for rt, p in runtimes.items():
                exe = args.out / f"{g.name}.{rt.replace('+', 'x')}"
                link(obj, p, exe, args)
                exes[(rt, g.name)] = exe
    except SetupError as e:
        print(f"instr.py: {e}", file=sys.stderr)
        return 2

    jobs = [(rt, g, size) for g in gates for rt in runtimes for size in g.sizes]
    raw: dict = {}
    failures = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futs = {pool.submit(measure, exes[(rt, g.name)], size, g.expect(size),
                            args.out / f"callgrind.{g.name}.{rt.replace('+', 'x')}.{size}",
                            args): (rt, g, size) for rt, g, size in jobs}
        for f in concurrent.futures.as_completed(futs):
            rt, g, size = futs[f]
            try:
                raw[(rt, g.name, size)] = f.result()
                print(f"  {g.name:13s} {rt:5s} N={size:<6d} "
                      f"{raw[(rt, g.name, size)]['instructions']:>13,d} instr  "
                      f"{raw[(rt, g.name, size)]['allocations']:>8,d} allocs  "
                      f"{raw[(rt, g.name, size)]['seconds']:.1f}s",
                      file=sys.stderr)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                failures.append(f"{rt} {g.name} N={size}: {e}")

    results: dict = {rt: {} for rt in runtimes}
    for rt in runtimes:
        for g in gates:
            a, b = (raw.get((rt, g.name, s)) for s in g.sizes)
            if a and b:
                results[rt][g.name] = per_task(g, a, b)
    elapsed = time.monotonic() - started

    names = list(runtimes)
    header = ["workload"]
    for rt in names:
        header += [f"{rt} instr/task", f"{rt} allocs/task"]
    header += ["budget instr", "budget allocs"]
    rows = [fmt_row(g.name, results, names, budget) for g in gates]
    print(f"callgrind, one worker, per spawned task = difference of sizes "
          f"{', '.join(f'{g.name} {g.sizes[0]}/{g.sizes[1]}' for g in gates)} "
          f"({elapsed:.0f} s)")
    print(bench.table(rows, header))
    (args.out / "results.json").write_text(json.dumps({
        "per_task": results,
        "runs": {f"{rt} {n} {s}": v for (rt, n, s), v in raw.items()},
        "failures": failures}, indent=1) + "\n")
    for f in failures:
        print(f"FAIL: {f}")
    if failures:
        return 1

    status = 0
    if args.check:
        tol = budget.get("tolerance", TOLERANCE)
        gated = {"workloads": {n: b for n, b in budget.get("workloads", {}).items()
                               if n in {g.name for g in gates}}}
        bad = check(results["ours"], gated, tol)
        for b in bad:
            print(f"bench-instr: OVER BUDGET: {b}")
        if bad:
            print(f"bench-instr: {len(bad)} number(s) more than {tol:.0%} above "
                  f"{args.budget}; find the regression, or if the cost is "
                  "wanted, raise the budget with make bench-instr-budget "
                  "BENCH_INSTR_ARGS=--allow-raise and say why in the commit")
            status = 1
        else:
            print(f"bench-instr: within {tol:.0%} of the budget ({args.budget})")
    if args.write_budget:
        nb, kept = new_budget(results["ours"], budget, args.allow_raise)
        for k in kept:
            print(f"bench-instr: {k}")
        args.budget.write_text(json.dumps(nb, indent=1) + "\n")
        print(f"bench-instr: wrote {args.budget}")
    return status


if __name__ == "__main__":
    sys.exit(main())
