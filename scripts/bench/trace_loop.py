#!/usr/bin/env python3
"""What one fine-grained parallel loop does on our runtime: a trace and a summary.

Runs bench/loops/trace/fine-grained-probe.mlir (the fine-grained kernel of
bench/loops with a probe in every row: the thread that ran it, gettid, and
the order in which the rows started, an atomic counter) lowered with the
async recipe of scripts/bench/loops.py, under mlir-cpu-runner with our
runtime and MLIR_ASYNC_RUNTIME_TRACE set, and answers, over all its loops:

  - which thread runs blocks 0..n-1 (the caller, or which worker);
  - the order in which the blocks start (the caller's block 0 first? the
    last block next, i.e. LIFO, or the blocks in index order, FIFO?);
  - from the runtime's trace (ns timestamps, one `wait` event of the caller
    per loop): how long after the loop started the first and the last task
    started (how long the last block waits), how long the caller waits, and
    how long after the last task ended the caller's wait returned (its wake).

Writes OUT.md (the summary), OUT.json (the whole runtime trace, or
--trace-json) and
OUT.svg and OUT.png (trace-view pictures of a few consecutive loops around
the median one; the PNG without text). The checksum must be the kernel's BENCH-EXPECT, or the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import loops  # noqa: E402  (the kernels' directives and recipes)

PROBE = REPO / "bench" / "loops" / "trace" / "fine-grained-probe.mlir"


def q(xs: list[float]) -> str:
    """median (Q1-Q3)"""
    xs = sorted(xs)
    if len(xs) < 2:
        return f"{xs[0]:.2f}" if xs else "-"
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return f"{q2:.2f} ({q1:.2f}-{q3:.2f})"


def threads_of_other_lowerings(k, args, tmp: Path) -> list[str]:
    """The same probe lowered for OpenMP (on libomp) and sequentially: how
    many threads ran the rows, and how many rows the initial one ran."""
    lib = args.llvm_bin.parent / "lib"
    libomp = lib / "libomp.so"
    lines = []
    for kind, extra in (("openmp", [libomp]), ("sequential", [])):
        if kind == "openmp" and not libomp.exists():
            lines.append(f"- {kind}: {libomp} not found")
            continue
        dst = tmp / f"probe.{kind}.llvm.mlir"
        recipe = loops.recipes(args.llvm_bin, k.pf_options)[kind]
        r = subprocess.run([str(args.llvm_bin / "mlir-opt"), str(k.path),
                            f"-pass-pipeline={recipe}", "-o", str(dst)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            lines.append(f"- {kind}: mlir-opt failed: {r.stderr[-300:]}")
            continue
        run = subprocess.run(
            [str(args.llvm_bin / "mlir-cpu-runner"), str(dst), k.opt, "-e",
             "main", "-entry-point-result=void", "-shared-libs=" +
             ",".join(str(p) for p in [lib / "libmlir_c_runner_utils.so"]
                      + extra)],
            capture_output=True, text=True, timeout=300,
            env=dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count() or 2)))
        v = run.stdout.split()
        if run.returncode != 0 or len(v) < 2 or int(v[0]) != k.expect:
            lines.append(f"- {kind}: FAIL (exit {run.returncode}, checksum "
                         f"{v[0] if v else '-'})")
            continue
        rest = [int(x) for x in v[2:]]
        tid = rest[1::2]
        rows = len(tid) // k.loops
        first = tid[0]
        on_first = Counter(sum(1 for i in range(rows)
                               if tid[s * rows + i] == first)
                           for s in range(args.skip, k.loops))
        lines.append(f"- {kind}: {len(set(tid))} thread(s) ran rows; rows "
                     "on the thread that ran row 0, per loop: " +
                     ", ".join(f"{n} in {c} loops"
                               for n, c in on_first.most_common(3)))
    return lines



def block_size(order: list, tid: list, rows: int, loops: int) -> int:
    """The most common length of the runs of rows that one thread ran, one
    after the other, in every sweep: a block of async-parallel-for. (One
    after the other on that thread: another thread's rows may take start
    numbers in between.)"""
    def after(s: int, i: int) -> bool:
        a, b = s * rows + i, s * rows + i + 1
        return tid[a] == tid[b] and order[b] > order[a] and not any(
            tid[s * rows + j] == tid[a] and order[a] < order[s * rows + j] < order[b]
            for j in range(rows))
    joined = [all(after(s, i) for s in range(loops)) for i in range(rows - 1)]
    lengths, run = Counter(), 1
    for j in joined:
        if j:
            run += 1
        else:
            lengths[run] += 1
            run = 1
    lengths[run] += 1
    return lengths.most_common(1)[0][0]

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runtime", type=Path,
                    default=REPO / "target/release/libmlir_async_runtime.so")
    ap.add_argument("--llvm-bin", type=Path,
                    default=Path(loops.toolchain.bin_dir()))
    ap.add_argument("--trace-view", type=Path,
                    default=REPO / "target/release/trace-view")
    ap.add_argument("--kernel", type=Path, default=PROBE)
    ap.add_argument("--skip", type=int, default=10,
                    help="warm-up loops left out of the statistics")
    ap.add_argument("--loops-shown", type=int, default=3,
                    help="consecutive loops in the picture (default 3)")
    ap.add_argument("-o", "--out", type=Path,
                    default=REPO / "target/trace/loop",
                    help="output prefix: PREFIX.md, PREFIX.json, PREFIX.svg")
    ap.add_argument("--trace-json", type=Path, default=None,
                    help="where the runtime's trace goes (default PREFIX.json)")
    args = ap.parse_args()
    for p in (args.runtime, args.llvm_bin / "mlir-cpu-runner", args.kernel):
        if not p.exists():
            print(f"trace_loop.py: not found: {p}", file=sys.stderr)
            return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    k = loops.Kernel(args.kernel)
    tmp = Path(tempfile.mkdtemp(prefix="trace-loop-"))
    k_lib = args.llvm_bin.parent / "lib"
    lowered = tmp / "probe.llvm.mlir"
    recipe = loops.recipes(args.llvm_bin, k.pf_options)["async"]
    r = subprocess.run([str(args.llvm_bin / "mlir-opt"), str(k.path),
                        f"-pass-pipeline={recipe}", "-o", str(lowered)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("trace_loop.py: mlir-opt: " + r.stderr[-2000:], file=sys.stderr)
        return 1
    trace = args.trace_json or args.out.with_suffix(".json")
    trace.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MLIR_ASYNC_RUNTIME_TRACE=str(trace))
    run = subprocess.run(
        [str(args.llvm_bin / "mlir-cpu-runner"), str(lowered), k.opt,
         "-e", "main", "-entry-point-result=void",
         f"-shared-libs={k_lib / 'libmlir_c_runner_utils.so'},"
         f"{args.runtime.resolve()}"],
        capture_output=True, text=True, env=env, timeout=300)
    if run.returncode != 0:
        print(f"trace_loop.py: the probe exited {run.returncode}: "
              + run.stderr[-2000:], file=sys.stderr)
        return 1
    nums = [int(x) if i != 1 else float(x)
            for i, x in enumerate(run.stdout.split())]
    checksum, seconds, rest = nums[0], nums[1], nums[2:]
    if checksum != k.expect:
        print(f"trace_loop.py: checksum {checksum}, expected {k.expect}",
              file=sys.stderr)
        return 1
    rows = len(rest) // 2 // k.loops
    order = [rest[2 * (s * rows + i)] for s in range(k.loops)
             for i in range(rows)]
    tid = [rest[2 * (s * rows + i) + 1] for s in range(k.loops)
           for i in range(rows)]

    data = json.loads(trace.read_text())
    events = data["traceEvents"]
    pid = next(e["pid"] for e in events if e.get("ph") == "M")
    lanes = {e["tid"]: e["args"]["name"] for e in events
             if e.get("name") == "thread_name"}

    # ---- the probe: blocks, their threads and their start order
    # The block size: rows i and i + 1 are in one block when, in every
    # sweep, one thread ran both, one right after the other. (Not the rows
    # the caller ran: it computes block 0 itself, async-parallel-for's
    # dispatch, and unless MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=0 it runs
    # the blocks it queued itself too while it waits.)
    bs = block_size(order, tid, rows, k.loops)
    nblocks = -(-rows // bs)
    workers = {}  # OS tid -> "worker A", "worker B", ... by first appearance
    for t in tid:
        if t != pid and t not in workers:
            workers[t] = f"worker {chr(ord('A') + len(workers))}"
    who = lambda t: "caller" if t == pid else workers[t]  # noqa: E731
    runner: list[Counter] = [Counter() for _ in range(nblocks)]
    rank: list[list[int]] = [[] for _ in range(nblocks)]
    inconsistent = 0
    sweep_orders = []
    for s in range(args.skip, k.loops):
        base = s * rows
        starts = []
        for b in range(nblocks):
            rs = range(b * bs, min(rows, (b + 1) * bs))
            ts = {tid[base + i] for i in rs}
            os_ = [order[base + i] for i in rs]
            if len(ts) != 1 or os_ != sorted(set(os_)):
                inconsistent += 1
            runner[b][who(tid[base + rs[0]])] += 1
            starts.append((os_[0], b, who(tid[base + rs[0]])))
        starts.sort()
        for rnk, (_, b, _) in enumerate(starts):
            rank[b].append(rnk)
        sweep_orders.append(starts)
    counted = k.loops - args.skip
    first_after_0 = Counter(st[1][1] for st in sweep_orders if len(st) > 1)
    n_threads = Counter(len({w for _, _, w in st if w != "caller"})
                        for st in sweep_orders)

    # ---- the runtime trace: one caller wait per loop
    main_lane = next((t for t, n in lanes.items() if n == "main"), None)
    waits = sorted((e for e in events if e.get("name") == "wait"
                    and e["tid"] == main_lane), key=lambda e: e["ts"])
    tasks = sorted((e for e in events if e.get("name") == "task"),
                   key=lambda e: e["ts"])
    spans = []
    ti = 0
    prev_end = None
    for w in waits:
        w_start, w_end = w["ts"], w["ts"] + w["dur"]
        mine = []
        while ti < len(tasks) and tasks[ti]["ts"] < w_end:
            if prev_end is not None and tasks[ti]["ts"] >= prev_end:
                mine.append(tasks[ti])
            ti += 1
        if prev_end is not None and mine:
            last_end = max(t["ts"] + t["dur"] for t in mine)
            spans.append({
                "start": prev_end, "end": w_end,
                "tasks": len(mine),
                "first_task": mine[0]["ts"] - prev_end,
                "last_task": mine[-1]["ts"] - prev_end,
                "caller_until_wait": w_start - prev_end,
                "wait": w["dur"],
                "wake": w_end - last_end,
                "loop": w_end - prev_end,
                "per_lane": Counter(lanes[t["tid"]] for t in mine),
                "routes": Counter(t["args"]["route"] for t in mine)})
        prev_end = w_end
    stat = spans[args.skip:]
    lane_tasks = Counter()
    routes = Counter()
    for lp in stat:
        lane_tasks.update(lp["per_lane"])
        routes.update(lp["routes"])
    one_lane = sum(1 for lp in stat if len(lp["per_lane"]) == 1)

    # ---- the picture: a few loops around the median-length one
    svg = args.out.with_suffix(".svg")
    pictured = ""
    if stat and args.trace_view.exists():
        med = statistics.median(lp["loop"] for lp in stat)
        idx = min(range(len(stat)), key=lambda i: abs(stat[i]["loop"] - med))
        lo = stat[max(0, idx - args.loops_shown // 2)]
        hi = stat[min(len(stat) - 1, idx + args.loops_shown // 2)]
        t0, t1 = lo["start"] - 0.5, hi["end"] + 0.5
        keep = [e for e in events if e.get("ph") == "M" or
                (e.get("ph") == "X" and e["ts"] < t1 and
                 e["ts"] + e["dur"] > t0)]
        crop = tmp / f"{args.out.name}-{args.loops_shown}-loops.json"
        crop.write_text(json.dumps(dict(data, traceEvents=keep)))
        v = subprocess.run([str(args.trace_view), str(crop), "-o", str(svg),
                            "-o", str(args.out.with_suffix(".png"))],
                           capture_output=True, text=True)
        if v.returncode == 0:
            pictured = (f"`{svg.name}`: {args.loops_shown} consecutive loops "
                        f"around the median-length one ({t1 - t0:.1f} µs of "
                        "the trace)")
        else:
            pictured = "trace-view failed: " + v.stderr.strip()[-300:]

    # ---- the summary
    L = []
    L.append(f"# One fine-grained parallel loop on our runtime "
             f"({time.strftime('%Y-%m-%d %H:%M')} UTC)")
    L.append("")
    la = os.getloadavg()
    L.append(f"`scripts/bench/trace_loop.py`: `{args.kernel.relative_to(REPO)}`, "
             f"{k.loops} loops of {rows} rows, async-parallel-for"
             f"{{{k.pf_options}}}, mlir-cpu-runner {k.opt}, our runtime with "
             f"MLIR_ASYNC_RUNTIME_TRACE; load average "
             f"{' '.join(f'{x:.2f}' for x in la)} on {os.cpu_count()} CPUs; "
             f"in-program {seconds:.4f} s ({seconds / k.loops * 1e6:.1f} µs "
             f"a loop, with the probe and the trace on); statistics over "
             f"loops {args.skip + 1}..{k.loops}.")
    L.append("")
    L.append(f"**Blocks.** {nblocks} blocks of {bs} rows (the most common "
             f"run of rows that one thread ran one after the other in every "
             f"sweep; block 0 is the caller's own; "
             f"{inconsistent} block-sweeps not one thread's rows in order). Threads that ran blocks 1..{nblocks - 1} in a loop: "
             + ", ".join(f"{n} worker(s) in {c} loops"
                         for n, c in sorted(n_threads.items())) + ".")
    L.append("")
    L.append("| block | rows | caller | " +
             " | ".join(sorted(workers.values())) +
             " | start rank: median (Q1-Q3), 0 = first |")
    L.append("|---|---|---|" + "---|" * len(workers) + "---|")
    for b in range(nblocks):
        cells = [f"{runner[b][w] / counted * 100:.0f}%" for w in
                 ["caller"] + sorted(workers.values())]
        L.append(f"| {b} | {b * bs}-{min(rows, (b + 1) * bs) - 1} | "
                 + " | ".join(cells) + f" | {q(rank[b])} |")
    L.append("")
    L.append("Block started right after block 0, in how many loops: " +
             ", ".join(f"block {b}: {c}" for b, c in
                       first_after_0.most_common(4)) + ".")
    L.append("")
    for lab, st in (("First counted loop", sweep_orders[0]),
                    ("Last loop", sweep_orders[-1])):
        L.append(f"{lab}, blocks in start order (block:thread): "
                 + " ".join(f"{b}:{w.replace('worker ', '')}"
                            for _, b, w in st) + ".")
        L.append("")
    L.append(f"**Timing (runtime trace, µs; {len(stat)} loops, each from the "
             "end of the caller's previous wait to the end of its wait).** "
             "Median (Q1-Q3):")
    L.append("")
    L.append("| what | µs |")
    L.append("|---|---|")
    for key, what in (("loop", "whole loop"),
                      ("caller_until_wait", "caller: spawning + block 0, "
                       "until it blocks"),
                      ("first_task", "first task starts, after the loop "
                       "began"),
                      ("last_task", "last task starts (how long the last "
                       "block waits)"),
                      ("wait", "caller blocked in AwaitAllInGroup"),
                      ("wake", "last task's end to the caller's return "
                       "(its wake)")):
        L.append(f"| {what} | {q([lp[key] for lp in stat])} |")
    L.append("")
    L.append(f"Tasks per loop: {q([lp['tasks'] for lp in stat])}; by lane "
             "over all counted loops: " +
             ", ".join(f"{n} {c}" for n, c in lane_tasks.most_common()) +
             f"; by route: " + ", ".join(f"{n} {c}" for n, c in
                                        routes.most_common()) +
             f"; loops whose tasks all ran on one thread: {one_lane} of "
             f"{len(stat)}.")
    L.append("")
    L.append("**The other two lowerings of the same probe** (checksum "
             "checked too):")
    L.append("")
    L += threads_of_other_lowerings(k, args, tmp)
    L.append("")
    if pictured:
        L.append(f"Picture: {pictured}. Lanes: workers grey, the caller "
                 "(main) beige with its blocking wait in grey; bars are "
                 "tasks (blue: from Execute).")
        L.append("")
    md = args.out.with_suffix(".md")
    md.write_text("\n".join(L))
    print("\n".join(L))
    print(f"\nsummary: {md}\ntrace: {trace}\npicture: {svg}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
