#!/usr/bin/env python3
"""Macro-benchmarks of the async runtime: ours against MLIR's C++ one and a floor.

Each program in bench/*.mlir prints two lines: a checksum (i64) and the
seconds it spent between two rtclock() calls (JIT compile excluded).  Its
header carries directives read here:

    // BENCH-EXPECT: <checksum>       the only accepted checksum
    // BENCH-PIPELINE: tasks | parallel-for
    // BENCH-OPT: -O0 | -O3           mlir-cpu-runner optimisation level

For every workload the program is lowered once (into --out), then run under
mlir-cpu-runner with the C++ runtime, ours and (--floor) the single-thread
floor runtime of bench/floor, interleaved: round i runs every configuration
once before round i + 1 runs any, and who goes first rotates.  Ratios
(C++/ours, ours/floor) are medians of per-run ratios within a round, with
their interquartile range, because the C++ runtime's time swings from hour
to hour on a shared machine while the ratio to a floor measured minutes
apart does not.  Peak RSS comes from the child's rusage (os.wait4), so no
extra package is needed.  A crash, timeout, missing output or wrong checksum
makes that configuration FAIL in the table; it is never dropped.

The scf.parallel kernels of bench/loops run too, lowered three ways (async on
ours / C++ / the floor, OpenMP on libomp, sequential as the checksum
reference): scripts/bench/loops.py, its own tables after the main one.
The wait-path programs of bench/waits (a one-task program under jit-harness
--repeat, the wake after a 2 ms pause) follow: scripts/bench/waits.py.

With --harness pointing to a built jit-harness, the same LLVM IR also runs
through it (C++ and ours), so the JIT's own overhead (process wall time
minus in-program time) can be compared with mlir-cpu-runner's.

Outputs: a table on stdout, <out>/table.md (the same, markdown),
<out>/results.json (every run), <out>/ratios.svg.  Exit status 1 if a
lowering or any run with our runtime failed (C++ and floor failures are only
reported), 2 on usage errors.  Python 3 stdlib only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH_DIR = REPO / "bench"

sys.path.insert(0, str(REPO / "mlir-tests" / "lib"))
import harness  # noqa: E402  (the one jit-harness command line)
import lowering  # noqa: E402  (the one lowering recipe)
import pipelines  # noqa: E402  (the project's one definition of the pipelines)
import toolchain  # noqa: E402  (LLVM_PREFIX)
import loops  # noqa: E402  (bench/loops: parallel loops against OpenMP)
import waits  # noqa: E402  (bench/waits: the idle phase, the wake)

# BENCH-PIPELINE kinds. Both are the pipeline of mlir-tests/lib/pipelines.txt
# for the MLIR version of --llvm-bin (async.func lowering included);
# parallel-for runs async-parallel-for (its default options) first.
PIPELINE_FRONTS = {"tasks": None, "parallel-for": "async-parallel-for"}


def pipeline(kind: str, llvm_bin: Path) -> str:
    version = pipelines.version_of_prefix(str(llvm_bin.parent))
    return pipelines.load()[version].pipeline(front=PIPELINE_FRONTS[kind])


# Display order; any other bench/*.mlir is appended alphabetically.
ORDER = ["fan-out", "fib-spawn", "nested-chain", "value-pipeline",
         "parallel-for", "blocking-awaits"]


class Workload:
    def __init__(self, path: Path):
        self.path = path
        self.name = path.stem
        directive = loops.directive_reader(path)

        self.expect = int(directive("EXPECT"))
        self.pipeline = directive("PIPELINE", "tasks")
        if self.pipeline not in PIPELINE_FRONTS:
            raise SystemExit(f"{path}: unknown BENCH-PIPELINE {self.pipeline}")
        self.opt = directive("OPT", "-O0")
        self.lowered: Path | None = None   # LLVM dialect, for mlir-cpu-runner
        self.llvm_ir: Path | None = None   # LLVM IR, for jit-harness
        self.lower_error: str | None = None


def discover(bench_dir: Path, only: list[str] | None) -> list[Workload]:
    files = {p.stem: p for p in sorted(bench_dir.glob("*.mlir"))}
    names = [n for n in ORDER if n in files] + sorted(set(files) - set(ORDER))
    if only:
        unknown = [n for n in only if n not in files]
        if unknown:
            raise SystemExit(f"unknown workload(s) {unknown}; have {names}")
        names = [n for n in names if n in only]
    return [Workload(files[n]) for n in names]


def lower(w: Workload, llvm_bin: Path, out: Path, want_ir: bool) -> None:
    """out/NAME.llvm.mlir (and out/NAME.ll with want_ir) by the one recipe
    (mlir-tests/lib/lowering.py); a failure goes to w.lower_error."""
    lowered, ll = out / f"{w.name}.llvm.mlir", out / f"{w.name}.ll"
    try:
        lowering.lower_file(str(w.path), str(ll), pipeline(w.pipeline, llvm_bin),
                            prefix=toolchain.prefix_of_bin(str(llvm_bin)),
                            mlir=str(lowered), to_ir=want_ir)
    except lowering.LoweringError as e:
        w.lower_error = str(e)[-2000:]
        return
    w.lowered = lowered
    w.llvm_ir = ll if want_ir else None


def add_common_args(ap: argparse.ArgumentParser, out: Path) -> None:
    """The options bench.py and instr.py share: the runtimes, the
    programs, the toolchain (default: $LLVM_PREFIX's)."""
    ap.add_argument("--runtime", type=Path,
                    default=REPO / "target/release/libmlir_async_runtime.so",
                    help="our runtime library")
    ap.add_argument("--cxx", type=Path, default=Path(toolchain.tools()["cxx_runtime"]),
                    help="the C++ reference runtime ('' to skip, instr.py only)")
    ap.add_argument("--out", type=Path, default=out, help=f"output directory (default {out})")
    ap.add_argument("--bench-dir", type=Path, default=BENCH_DIR,
                    help="directory of the *.mlir programs (default bench/)")
    ap.add_argument("--llvm-bin", type=Path, default=Path(toolchain.bin_dir()),
                    help="the toolchain (default: $LLVM_PREFIX/bin)")


def run_child(cmd: list[str], timeout: float, env: dict | None = None,
              watch=None) -> dict:
    """Runs cmd (with env, if given); returns wall time, rusage peak RSS,
    exit status, output. watch(pid), if given, starts watching the child
    (scripts/bench/blocked.py samples its threads) and returns an object
    whose finish() is called once the child is reaped."""
    with tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fout, stderr=ferr,
                                stdin=subprocess.DEVNULL, env=env)
        watcher = watch(proc.pid) if watch else None
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            try:
                proc.kill()
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            # wait4 reaps the child and gives its own rusage (ru_maxrss: KiB).
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            if watcher:
                watcher.finish()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        fout.seek(0)
        ferr.seek(0)
        stdout = fout.read().decode(errors="replace")
        stderr = ferr.read().decode(errors="replace")
    return {"rc": proc.returncode, "timeout": timed_out.is_set(),
            "wall_s": wall, "maxrss_kib": ru.ru_maxrss,
            "stdout": stdout, "stderr": stderr}


NUM = re.compile(r"^\s*(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|-?inf)\s*$")


def numbers(stdout: str) -> list[str]:
    """The output lines that are one number each, in order, as text."""
    return [m.group(1) for line in stdout.splitlines() if (m := NUM.match(line))]


def judge(res: dict, expect: int, repeat: int = 1) -> dict:
    """Turns a raw child result into status / checksum / elapsed."""
    out = {"wall_s": res["wall_s"], "maxrss_kib": res["maxrss_kib"],
           "rc": res["rc"], "checksum": None, "elapsed_s": None}
    nums = numbers(res["stdout"])
    if res["timeout"]:
        out["status"] = "FAIL (timeout)"
    elif res["rc"] < 0:
        try:
            out["status"] = f"FAIL ({signal.Signals(-res['rc']).name})"
        except ValueError:
            out["status"] = f"FAIL (signal {-res['rc']})"
    elif res["rc"] != 0:
        out["status"] = f"FAIL (exit {res['rc']})"
    elif len(nums) < 2 * repeat:
        out["status"] = "FAIL (no output)"
    else:
        # (checksum, seconds) pairs, one per call of main.
        pairs = list(zip(nums[0::2], nums[1::2]))[:repeat]
        try:
            sums = [int(c) for c, _ in pairs]
            secs = [float(s) for _, s in pairs]
        except ValueError:
            sums, secs = [], []
        if not sums:
            out["status"] = "FAIL (bad output)"
        elif any(s != expect for s in sums):
            out["checksum"] = next(s for s in sums if s != expect)
            out["status"] = "FAIL (checksum)"
        else:
            out["checksum"] = sums[0]
            out["elapsed_s"] = statistics.median(secs)
            out["elapsed_all_s"] = secs
            out["status"] = "ok"
    if out["status"] != "ok":
        out["stdout_tail"] = res["stdout"][-1500:]
        out["stderr_tail"] = res["stderr"][-3000:]
    return out


class Config:
    """One way to run a workload: a tool (runner/harness) and a runtime."""

    def __init__(self, key: str, tool: str, runtime: Path):
        self.key, self.tool, self.runtime = key, tool, runtime


def command(cfg: Config, w: Workload, args) -> list[str] | None:
    c_utils = args.llvm_lib / "libmlir_c_runner_utils.so"
    if cfg.tool == "runner":
        return [str(args.llvm_bin / "mlir-cpu-runner"), str(w.lowered),
                w.opt, "-e", "main", "-entry-point-result=void",
                f"-shared-libs={c_utils},{cfg.runtime}"]
    if w.llvm_ir is None:
        return None
    extra = ([w.opt] if args.harness_opt else []) + (["--echo"] if args.harness_echo else [])
    return harness.command(args.harness, w.llvm_ir, cfg.runtime, [str(c_utils)],
                           repeat=args.harness_repeat, entry="main", extra=extra)


# The statistics and reports (also the kit's, for loops.py and waits.py).
from report import (WHO, fmt_s, markdown, paired_ratio, quartiles, ratio_cell,  # noqa: E402,F401
                    rss_cell, summarize, svg_chart, table, why_no_ratio)
time_cell = loops.time_cell


# ------------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=11,
                    help="runs per workload and configuration (default 11)")
    add_common_args(ap, REPO / "target/bench")
    ap.add_argument("--floor", type=Path, default=None,
                    help="the single-thread floor runtime (make floor); "
                    "its columns are skipped with a note without it")
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="run only this workload (repeatable, or comma list)")
    ap.add_argument("--harness", type=Path, default=None,
                    help="jit-harness binary; skipped with a note if missing")
    ap.add_argument("--harness-repeat", type=int, default=1,
                    help="--repeat passed to jit-harness (default 1)")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds before a run is killed and counted FAIL")
    loops.add_arguments(ap)
    waits.add_arguments(ap)
    args = ap.parse_args()
    args.llvm_lib = args.llvm_bin.parent / "lib"
    only = None
    if args.only:
        only = [n for o in args.only for n in o.split(",") if n]
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    loop_kernels, only = loops.select(args, only)
    wait_programs, only = waits.select(args, only)
    required = [(args.runtime, "--runtime"), (args.cxx, "--cxx"),
                (args.llvm_bin / "mlir-cpu-runner", "mlir-cpu-runner")]
    if args.floor is not None:
        required.append((args.floor, "--floor"))
    for p, what in required:
        if not p.exists():
            print(f"bench.py: {what} not found: {p}", file=sys.stderr)
            return 2
    args.runtime, args.cxx = args.runtime.resolve(), args.cxx.resolve()
    use_floor = args.floor is not None
    if use_floor:
        args.floor = args.floor.resolve()

    notes = []
    if not use_floor:
        notes.append("floor: not requested (--floor); ours/floor skipped.")
    use_harness = False
    args.harness_opt = args.harness_echo = False
    if args.harness is None:
        notes.append("jit-harness: not requested (--harness); column skipped.")
    elif not (args.harness.is_file() and os.access(args.harness, os.X_OK)):
        notes.append(f"jit-harness: {args.harness} is not built; "
                     "harness columns skipped.")
    else:
        # The harness is written in parallel: only use it once it accepts
        # the agreed CLI (FILE.ll --runtime --shared-lib --repeat --entry).
        try:
            probe = subprocess.run([str(args.harness), "--help"],
                                   capture_output=True, text=True, timeout=30)
            helptext = probe.stdout + probe.stderr
        except (OSError, subprocess.TimeoutExpired) as e:
            helptext = str(e)
        missing = [f for f in ("--runtime", "--shared-lib", "--repeat",
                               "--entry") if f not in helptext]
        if missing:
            notes.append(f"jit-harness: {args.harness} does not list "
                         f"{', '.join(missing)} in --help yet; "
                         "harness columns skipped.")
        else:
            use_harness = True
            args.harness = args.harness.resolve()
            # Same LLVM optimisation level as mlir-cpu-runner, if supported.
            args.harness_opt = re.search(r"(^|[\s,\[])-O\b", helptext,
                                         re.M) is not None
            # It captures the program's output; --echo copies it to stdout.
            args.harness_echo = "--echo" in helptext

    args.out.mkdir(parents=True, exist_ok=True)
    workloads = discover(args.bench_dir.resolve(), only) if only != [] else []
    configs = [Config("runner/cxx", "runner", args.cxx),
               Config("runner/ours", "runner", args.runtime)]
    if use_floor:
        configs.append(Config("runner/floor", "runner", args.floor))
    if use_harness:
        configs += [Config("harness/cxx", "harness", args.cxx),
                    Config("harness/ours", "harness", args.runtime)]

    load_start = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M")
    print(f"bench: {len(workloads)} workload(s) x {len(configs)} "
          f"configuration(s) x {args.runs} run(s)", file=sys.stderr)
    print(f"  ours:  {args.runtime}\n  C++:   {args.cxx}", file=sys.stderr)
    if use_floor:
        print(f"  floor: {args.floor}", file=sys.stderr)
    results: dict[str, dict] = {}
    any_fail = False
    for w in workloads:
        lower(w, args.llvm_bin, args.out, use_harness)
        entry = {"source": str(w.path),
                 "expect": w.expect, "opt": w.opt, "pipeline": w.pipeline,
                 "runs": {c.key: [] for c in configs}, "summary": {}}
        results[w.name] = entry
        if w.lower_error:
            print(f"  {w.name}: lowering failed: {w.lower_error[:300]}",
                  file=sys.stderr)
            entry["lower_error"] = w.lower_error
            for c in configs:
                entry["summary"][c.key] = {"status": "FAIL (lowering)"}
            any_fail = True
            continue
        for i in range(args.runs):
            # Round i runs every configuration once before round i + 1 runs
            # any; who goes first rotates from round to round.
            k = i % len(configs)
            for c in configs[k:] + configs[:k]:
                cmd = command(c, w, args)
                if cmd is None:
                    continue
                rep = args.harness_repeat if c.tool == "harness" else 1
                res = judge(run_child(cmd, args.timeout), w.expect, rep)
                res["round"] = i
                res["repeat"] = rep
                res["loadavg_1min"] = os.getloadavg()[0]
                entry["runs"][c.key].append(res)
                shown = (f"{res['elapsed_s']:.4f}s" if res["status"] == "ok"
                         else res["status"])
                print(f"  {w.name:16s} {c.key:13s} run {i + 1}/{args.runs}: "
                      f"{shown}  wall {res['wall_s']:.2f}s  "
                      f"rss {res['maxrss_kib'] / 1024:.0f}MiB",
                      file=sys.stderr)
        for c in configs:
            entry["summary"][c.key] = summarize(entry["runs"][c.key])
            # Only our runtime's failures fail the command: the C++ one has
            # known crashes (deep chains) and the floor cannot run programs
            # that need a second thread; the table simply shows them.
            if c.key.endswith("/ours"):
                any_fail |= entry["summary"][c.key]["status"] != "ok"
        entry["ratios"] = {
            "cxx/ours": paired_ratio(entry, "runner/cxx", "runner/ours"),
            "ours/floor": paired_ratio(entry, "runner/ours", "runner/floor")
            if use_floor else None}
    load_end = os.getloadavg()

    # ---- main table
    header = ["workload", "C++ s (IQR)", "ours s (IQR)"]
    if use_floor:
        header.append("floor s (IQR)")
    header.append("C++/ours (IQR)")
    if use_floor:
        header.append("ours/floor (IQR)")
    header += ["C++ RSS MiB", "ours RSS MiB"] + \
        (["floor RSS MiB"] if use_floor else [])
    rows = []
    for n, e in results.items():
        s = e["summary"]
        row = [n, time_cell(s["runner/cxx"]), time_cell(s["runner/ours"])]
        if use_floor:
            row.append(time_cell(s["runner/floor"]))
        row.append(ratio_cell(e, "runner/cxx", "runner/ours"))
        if use_floor:
            row.append(ratio_cell(e, "runner/ours", "runner/floor"))
        row += [rss_cell(s["runner/cxx"]), rss_cell(s["runner/ours"])]
        if use_floor:
            row.append(rss_cell(s["runner/floor"]))
        rows.append(row)
    load = (f"load average (1/5/15 min) {' '.join(f'{x:.2f}' for x in load_start)}"
            f" at start, {' '.join(f'{x:.2f}' for x in load_end)} at end, "
            f"{os.cpu_count()} CPUs")
    caption = (f"mlir-cpu-runner, {args.runs} interleaved runs per runtime, "
               f"{started}; {load}.\n"
               "Times: median in-program seconds (IQR as % of the median). "
               "Ratios: median of per-run ratios\n"
               "(run i of each runtime comes from the same round), with Q1-Q3. "
               "C++/ours > 1: ours faster; ours/floor: how far above the "
               "floor.\nPeak RSS: median of the runs' peak resident memory "
               "(mostly mlir-cpu-runner and LLVM).")
    if rows:
        print()
        print(caption)
        print(table(rows, header))
        (args.out / "table.md").write_text(
            caption.replace("\n", " ") + "\n\n" + markdown(rows, header) + "\n")
    loops_fail, loops_notes = loops.run(loop_kernels, args,
                                              sys.modules[__name__])
    any_fail |= loops_fail
    notes += loops_notes
    waits_fail, waits_notes = waits.run(wait_programs, args,
                                              sys.modules[__name__])
    any_fail |= waits_fail
    notes += waits_notes

    # ---- JIT overhead table
    if use_harness and results:
        rows = []
        for n, e in results.items():
            s = e["summary"]
            rows.append([
                n,
                fmt_s(s["runner/ours"], "wall_median_s", "{:.3f}"),
                fmt_s(s["runner/ours"], "overhead_median_s", "{:.3f}"),
                fmt_s(s["harness/ours"], "elapsed_median_s"),
                fmt_s(s["harness/ours"], "wall_median_s", "{:.3f}"),
                fmt_s(s["harness/ours"], "overhead_median_s", "{:.3f}"),
                rss_cell(s["harness/ours"]),
                ratio_cell(e, "harness/cxx", "harness/ours")])
        print()
        print("JIT overhead with our runtime: wall = whole process, "
              "overhead = wall - in-program time (startup, JIT compile, "
              f"teardown); harness --repeat {args.harness_repeat}")
        print(table(rows, ["workload", "runner wall s", "runner ovh s",
                           "harness median s", "harness wall s",
                           "harness ovh s", "harness RSS MiB",
                           "harness C++/ours (IQR)"]))
    for note in notes:
        print("note: " + note)

    groups = [("C++ / ours, mlir-cpu-runner", "runner/cxx", "runner/ours")]
    if use_harness:
        groups.append(("C++ / ours, jit-harness", "harness/cxx",
                       "harness/ours"))
    if use_floor:
        groups.append(("floor / ours, mlir-cpu-runner", "runner/floor",
                       "runner/ours"))
    chart = args.out / "ratios.svg"
    svg_chart(chart, results, groups,
              "Async runtime macro-benchmarks: reference time / our time",
              f"median of {args.runs} interleaved runs, {platform.node()}, "
              f"{os.cpu_count()} CPUs, {started}, load {load_start[0]:.2f}")
    raw = args.out / "results.json"
    raw.write_text(json.dumps({
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "host": platform.node(), "cpus": os.cpu_count(),
        "loadavg_start": load_start, "loadavg_end": load_end,
        "runs": args.runs, "ours": str(args.runtime), "cxx": str(args.cxx),
        "floor": str(args.floor) if use_floor else None,
        "harness": str(args.harness) if use_harness else None,
        "notes": notes, "workloads": results}, indent=1) + "\n")
    print(f"chart: {chart}\ntable (markdown): {args.out / 'table.md'}\n"
          f"raw numbers: {raw}")
    if any_fail:
        print("bench: some runs with our runtime FAILED "
              "(see table and results.json)")
    return 1 if any_fail else 0


if __name__ == "__main__":
    sys.exit(main())
