"""The wait paths in make bench: the bench/waits/*.mlir programs (the idle phase, the wake, a waiter's lag).

Four programs, each run on ours, the C++ runtime and the floor, interleaved
like scripts/bench/bench.py's workloads (round i runs every configuration once,
the first one rotating), --runs processes each:

    one-task  (// BENCH-WAIT: harness) one async.execute with an empty body
              and one blocking async.await in main. Run by
              `jit-harness PROG.ll --runtime SO --shared-lib <runner utils>
              --repeat N --no-leak-check` (N = --waits-repeat, 3000); the
              figure of a process is the median run time of its summary line
              (`... median 98.3 us, p99 ...`). For our runtime a run includes
              the harness's wait for the pool to go idle: the idle phase.
              Target: ours <= C++ per run (C++/ours >= 1).
    wake      (// BENCH-WAIT: runner) 300 rounds of { usleep(2000), one
              empty async.execute, blocking async.await } under
              mlir-cpu-runner; the figure of a process is the median
              execute-to-await-return latency, which the program computes
              itself and prints after its checksum, followed by the 300 sorted
              latencies (checked here: sorted, and line 2 their median).
              Target: ours <= 10 us.
    idle-cpu  (// BENCH-WAIT: runner, // BENCH-FIGURE: cpu) 2000 small tasks
              awaited as a group, then main sleeps 50 ms (the runtime may
              spin while it goes idle) and 500 ms more; the figure of a
              process is the CPU time the whole process used in those 500
              ms (clock()), which the program prints after its checksum,
              followed by its CPU time in the 50 ms before and the number
              of pauses that slept (checked here: 2). Target: ours <= 5 ms,
              1% of the window: no thread of an idle runtime spins after a
              bounded time.
    long-task (// BENCH-WAIT: runner, // BENCH-FIGURE: lag) main queues a
              short task S, then a long one L (about 18 ms), then awaits
              S; the figure of a process is the time from S's completion to
              the return of that await, which the program prints after its
              checksum, followed by the time to the return of its await of
              L (checked here: neither negative, the second not below the
              first). Target (issue 39): within 2x the C++ runtime's.
              A waiting thread runs only the producers of what it awaits
              (S's task), not L; with MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=any
              it ran L first, and the await lagged by L's whole run.

Ratios are medians of per-round ratios with their quartiles (bench.py's
paired_ratio). A run that crashes, exits non-zero, times out, prints no
summary line (one-task) or a wrong checksum or median (wake) is FAIL in
the table and never dropped from a median.

scripts/bench/bench.py imports this module and passes itself as `kit` (its
lowering, run, judge, statistics and table helpers), as for loops.py;
program names given to --only are taken out here.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WAITS_DIR = REPO / "bench" / "waits"

import loops  # noqa: E402  (the BENCH directive reader, the program picker, the table cell)

# Display order; any other bench/waits/*.mlir is appended alphabetically.
ORDER = ["one-task", "wake", "idle-cpu", "long-task"]

# The targets: (its text in the table, met?). `ours` is our
# runtime's summary, `r` the program's ratios.
TARGETS = {
    "one-task": ("C++/ours >= 1 (ours <= C++ per run)",
                 lambda ours, r: r.get("cxx/ours") is not None
                 and r["cxx/ours"]["median"] >= 1.0),
    "wake": ("ours <= 10 µs",
             lambda ours, r: ours.get("status") == "ok"
             and ours["elapsed_median_s"] * 1e6 <= 10.0),
    "idle-cpu": ("ours <= 5000 µs of CPU in 500 ms idle",
                 lambda ours, r: ours.get("status") == "ok"
                 and ours["elapsed_median_s"] * 1e6 <= 5000.0),
}

# What the figure of a runner program is (// BENCH-FIGURE:), as the table
# says it.
FIGURES = {"latencies": "median execute-to-await-return",
           "cpu": "process CPU in 500 ms idle",
           "lag": "await return after its object completed"}

# The harness's summary line (jit-harness/src/report.rs, Summary::line).
SUMMARY = re.compile(
    r"(\d+) runs, (\d+) passed, (\d+) failed, (\d+) hung, (\d+) leaked, "
    r"median ([0-9.]+) (us|ms|s), p99 ([0-9.]+) (us|ms|s)")
UNIT_US = {"us": 1.0, "ms": 1e3, "s": 1e6}

# Configuration key suffixes, in the order of the tables.
RUNTIMES = ("cxx", "ours", "floor")


def add_arguments(ap) -> None:
    g = ap.add_argument_group("wait paths (bench/waits)")
    g.add_argument("--waits-dir", type=Path, default=WAITS_DIR,
                   help="directory of the wait-path programs "
                   "(default bench/waits/)")
    g.add_argument("--waits-repeat", type=int, default=3000,
                   help="jit-harness --repeat for the one-task program "
                   "(default 3000)")
    g.add_argument("--no-waits", action="store_true",
                   help="skip the wait-path programs")


class Program:
    """A bench/waits program; name, path and pipeline as kit.lower wants."""

    def __init__(self, path: Path):
        self.path = path
        self.name = path.stem
        directive = loops.directive_reader(path)
        self.tool = directive("WAIT")
        if self.tool not in ("harness", "runner"):
            raise SystemExit(f"{path}: BENCH-WAIT must be harness or runner, "
                             f"not {self.tool}")
        self.expect = int(directive("EXPECT")) if self.tool == "runner" else None
        self.opt = directive("OPT", "-O3") if self.tool == "runner" else None
        self.figure = directive("FIGURE", "latencies") if self.tool == "runner" else None
        if self.figure is not None and self.figure not in FIGURES:
            raise SystemExit(f"{path}: BENCH-FIGURE must be one of "
                             f"{', '.join(FIGURES)}, not {self.figure}")
        self.pipeline = "tasks"
        self.lowered: Path | None = None
        self.llvm_ir: Path | None = None
        self.lower_error: str | None = None


def select(args, only: list[str] | None):
    """(programs to run, the --only names left for the others); the second
    value is None when --only was not given, as loops.select's."""
    if getattr(args, "waits_repeat", 1) < 1:
        raise SystemExit("bench.py: --waits-repeat must be >= 1")
    return loops.pick(args.waits_dir, ORDER, args.no_waits, only, Program)


# ------------------------------------------------------------ judging runs

def parse_summary(text: str) -> dict | None:
    """The last harness summary line in `text`, as numbers (times in µs),
    or None if there is none."""
    found = SUMMARY.findall(text)
    if not found:
        return None
    runs, passed, failed, hung, leaked, med, mu, p99, pu = found[-1]
    return {"runs": int(runs), "passed": int(passed), "failed": int(failed),
            "hung": int(hung), "leaked": int(leaked),
            "median_us": float(med) * UNIT_US[mu],
            "p99_us": float(p99) * UNIT_US[pu]}


def process_status(res: dict) -> str | None:
    """FAIL (...) for a run that timed out, crashed or exited non-zero."""
    if res["timeout"]:
        return "FAIL (timeout)"
    if res["rc"] < 0:
        try:
            return f"FAIL ({signal.Signals(-res['rc']).name})"
        except ValueError:
            return f"FAIL (signal {-res['rc']})"
    if res["rc"] != 0:
        return f"FAIL (exit {res['rc']})"
    return None


def judge_harness(res: dict, repeat: int) -> dict:
    """A jit-harness process: status, elapsed_s = its median run (seconds)."""
    out = {"wall_s": res["wall_s"], "maxrss_kib": res["maxrss_kib"],
           "rc": res["rc"], "elapsed_s": None}
    summary = parse_summary(res["stdout"]) or parse_summary(res["stderr"])
    out["summary"] = summary
    status = process_status(res)
    if status is None:
        if summary is None:
            status = "FAIL (no summary)"
        elif summary["runs"] != repeat or summary["passed"] != repeat:
            status = (f"FAIL ({summary['passed']}/{repeat} passed, "
                      f"{summary['failed']} failed, {summary['hung']} hung)")
        else:
            status = "ok"
            out["elapsed_s"] = summary["median_us"] / 1e6
    out["status"] = status
    if status != "ok":
        out["stdout_tail"] = res["stdout"][-1500:]
        out["stderr_tail"] = res["stderr"][-3000:]
    return out


def check_latencies(nums: list[str], median_s: float, rounds: int) -> str | None:
    """What is wrong with the wake program's sorted latencies (lines 3...)
    and its median (line 2), or None. nums: its numeric output lines
    (bench.py's `numbers`)."""
    try:
        lat = [float(x) for x in nums[2:]]
    except ValueError:
        return "bad latency"
    if len(lat) != rounds:
        return f"{len(lat)} latencies"
    if any(b < a for a, b in zip(lat, lat[1:])) or (lat and lat[0] < 0):
        return "latencies not sorted"
    # printF64 prints 6 significant digits: compare within that.
    if not math.isclose(statistics.median(lat), median_s, rel_tol=2e-5,
                        abs_tol=1e-12):
        return "median"
    return None


def check_idle_cpu(nums: list[str]) -> tuple[str | None, float | None]:
    """(what is wrong with the idle-cpu program's lines 3 and 4, or None;
    its CPU seconds while it went idle, line 3). nums: its numeric output
    lines (bench.py's `numbers`)."""
    if len(nums) != 4:
        return f"{len(nums)} output lines, not 4", None
    try:
        cpu_window, settle, slept = float(nums[1]), float(nums[2]), int(nums[3])
    except ValueError:
        return "bad output", None
    if cpu_window < 0 or settle < 0:
        return "negative CPU time", None
    if slept != 2:
        return f"{2 - slept} pause(s) did not sleep", None
    return None, settle


def check_lag(nums: list[str]) -> str | None:
    """What is wrong with the long-task program's lines 2 and 3 (seconds
    from S's completion to the return of main's await of S, then of L), or
    None. nums: its numeric output lines (bench.py's `numbers`)."""
    if len(nums) != 3:
        return f"{len(nums)} output lines, not 3"
    try:
        lag, l_end = float(nums[1]), float(nums[2])
    except ValueError:
        return "bad output"
    if lag < 0 or l_end < 0:
        return "negative lag"
    if l_end < lag:
        return "L's await returned before S's"
    return None


def judge_runner(res: dict, expect: int, kit, figure: str = "latencies") -> dict:
    """A process under mlir-cpu-runner: bench.py's judge (checksum,
    elapsed_s = the printed figure: wake's median latency, idle-cpu's CPU
    seconds), then the figure's own check (wake's sorted latencies,
    idle-cpu's settle time and pauses)."""
    out = kit.judge(res, expect)
    if out["status"] == "ok":
        nums = kit.numbers(res["stdout"])
        if figure == "cpu":
            wrong, out["settle_cpu_s"] = check_idle_cpu(nums)
        elif figure == "lag":
            wrong = check_lag(nums)
        else:
            wrong = check_latencies(nums, out["elapsed_s"], expect)
        if wrong:
            out["status"] = f"FAIL ({wrong})"
            out["stdout_tail"] = res["stdout"][-1500:]
            out["stderr_tail"] = res["stderr"][-3000:]
    return out


# ---------------------------------------------------------------- running

def command(p: Program, rt: str, args, kit) -> list[str]:
    lib = {"ours": args.runtime, "cxx": args.cxx, "floor": args.floor}[rt]
    c_utils = args.llvm_lib / "libmlir_c_runner_utils.so"
    if p.tool == "harness":
        return kit.harness.command(args.harness, p.llvm_ir, lib, [str(c_utils)],
                                   repeat=args.waits_repeat,
                                   extra=["--no-leak-check"])
    return [str(args.llvm_bin / "mlir-cpu-runner"), str(p.lowered), p.opt,
            "-e", "main", "-entry-point-result=void",
            f"-shared-libs={c_utils},{lib}"]


def us_cell(s: dict) -> str:
    """Median µs and the IQR as % of the median."""
    return loops.time_cell(s, scale=1e6, digits=1)


def harness_usable(args) -> str | None:
    """Why the harness cannot run the one-task program, or None. Without
    --harness, the one-task program takes the built target/release one
    (it is the only way to run it)."""
    if args.harness is None:
        args.harness = REPO / "target/release/jit-harness"
    h = args.harness
    if not (Path(h).is_file() and os.access(h, os.X_OK)):
        return f"jit-harness {h} is not built (make build)"
    return None


def run(programs: list[Program], args, kit) -> tuple[bool, list[str]]:
    """Runs and prints the wait-path table; (any failure of ours, notes)."""
    notes: list[str] = []
    if not programs:
        return False, notes
    rts = [rt for rt in RUNTIMES if not (rt == "floor" and args.floor is None)]
    no_harness = harness_usable(args)
    started = time.strftime("%Y-%m-%d %H:%M")
    load_start = os.getloadavg()
    print(f"bench waits: {len(programs)} program(s) x {len(rts)} runtime(s) "
          f"x {args.runs} run(s)", file=sys.stderr)
    results: dict[str, dict] = {}
    any_fail = False
    for p in programs:
        key = {rt: f"{p.tool}/{rt}" for rt in rts}   # kit.WHO's keys
        entry = {"source": str(p.path), "tool": p.tool, "opt": p.opt,
                 "runs": {key[rt]: [] for rt in rts}, "summary": {}}
        if p.tool == "harness":
            entry["repeat"] = args.waits_repeat
        else:
            entry["figure"] = p.figure
        results[p.name] = entry
        if p.tool == "harness" and no_harness:
            p.lower_error = no_harness
            fail = "not run"
            notes.append(f"waits: {p.name} skipped: {no_harness}.")
        else:
            kit.lower(p, args.llvm_bin, args.out, p.tool == "harness")
            fail = "FAIL (lowering)"
        if p.lower_error:
            if fail != "not run":
                print(f"  {p.name}: {p.lower_error[:300]}", file=sys.stderr)
                entry["lower_error"] = p.lower_error
                any_fail = True
            for rt in rts:
                entry["summary"][key[rt]] = {"status": fail}
            continue
        for i in range(args.runs):
            k = i % len(rts)
            for rt in rts[k:] + rts[:k]:
                raw = kit.run_child(command(p, rt, args, kit), args.timeout)
                res = (judge_harness(raw, args.waits_repeat)
                       if p.tool == "harness" else
                       judge_runner(raw, p.expect, kit, p.figure))
                res["round"] = i
                res["loadavg_1min"] = os.getloadavg()[0]
                entry["runs"][key[rt]].append(res)
                shown = (f"{res['elapsed_s'] * 1e6:.1f} µs"
                         if res["status"] == "ok" else res["status"])
                print(f"  {p.name:10s} {rt:6s} run {i + 1}/{args.runs}: "
                      f"{shown}  wall {res['wall_s']:.2f}s", file=sys.stderr)
        for rt in rts:
            entry["summary"][key[rt]] = kit.summarize(entry["runs"][key[rt]])
        any_fail |= entry["summary"][key["ours"]]["status"] != "ok"
        entry["ratios"] = {"cxx/ours": kit.paired_ratio(entry, key["cxx"],
                                                        key["ours"])}
        if "floor" in rts:
            entry["ratios"]["ours/floor"] = kit.paired_ratio(
                entry, key["ours"], key["floor"])
    load_end = os.getloadavg()

    who = lambda rt: kit.WHO[rt]  # noqa: E731
    header = (["program", "measure"] + [f"{who(rt)} µs (IQR)" for rt in rts] +
              ["C++/ours (IQR)"] + (["ours/floor (IQR)"] if "floor" in rts
                                    else []) + ["target", "met"])
    rows, prows = [], []
    for n, e in results.items():
        r = e.get("ratios", {})
        s = {k.split("/")[1]: v for k, v in e["summary"].items()}
        key = lambda rt: f"{e['tool']}/{rt}"  # noqa: E731
        measure = ("per run, harness median of "
                   f"{e.get('repeat')}" if e["tool"] == "harness" else
                   FIGURES[e.get("figure") or "latencies"])
        row = [n, measure] + [us_cell(s[rt]) for rt in rts]
        row.append(kit.ratio_cell(e, key("cxx"), key("ours")) if r else
                   s["ours"].get("status", "-"))
        if "floor" in rts:
            row.append(kit.ratio_cell(e, key("ours"), key("floor")) if r else
                       s["ours"].get("status", "-"))
        text, met = TARGETS.get(n, ("-", None))
        row += [text, "-" if met is None or not r else
                ("yes" if met(s["ours"], r) else "✗ no")]
        rows.append(row)
        if r.get("cxx/ours"):
            prows.append([n] + [f"{x:.2f}" for x in r["cxx/ours"]["per_run"]])
    load = (f"load average (1/5/15 min) "
            f"{' '.join(f'{x:.2f}' for x in load_start)} at start, "
            f"{' '.join(f'{x:.2f}' for x in load_end)} at end, "
            f"{os.cpu_count()} CPUs")
    caption = (f"Wait paths: {args.runs} interleaved runs per runtime, "
               f"{started}; {load}. one-task: jit-harness --repeat "
               f"{args.waits_repeat} --no-leak-check, one figure per process "
               "(its summary's median run; its histogram starts at 0.1 µs, so a figure "
               "of 0.1 is an upper bound);\nwake: mlir-cpu-runner, one "
               "figure per process (the median of its 300 latencies); "
               "idle-cpu: mlir-cpu-runner, the process's CPU time in 500 ms "
               "of idleness after its tasks; long-task: mlir-cpu-runner, one "
               "figure per process (from its short task's completion to the "
               "return of main's await of it, a long task queued after it). "
               "Times: median of the processes' figures, µs (IQR as % of the "
               "median).\nRatios: median of per-round ratios with Q1-Q3; "
               "C++/ours > 1: ours faster.")
    pheader = ["program"] + [f"r{i + 1}" for i in range(args.runs)]
    print()
    print(caption)
    print(kit.table(rows, header))
    if prows:
        print()
        print("C++/ours in each round:")
        print(kit.table(prows, pheader))
    md = caption.replace("\n", " ") + "\n\n" + kit.markdown(rows, header) + "\n"
    if prows:
        md += "\nC++/ours in each round:\n\n" + kit.markdown(prows, pheader) + "\n"
    (args.out / "waits-table.md").write_text(md)
    (args.out / "waits-results.json").write_text(json.dumps({
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "cpus": os.cpu_count(),
        "loadavg_start": load_start, "loadavg_end": load_end,
        "runs": args.runs, "repeat": args.waits_repeat,
        "programs": results}, indent=1) + "\n")
    notes.append(f"wait paths: {args.out / 'waits-table.md'}, "
                 f"{args.out / 'waits-results.json'}")
    return any_fail, notes
