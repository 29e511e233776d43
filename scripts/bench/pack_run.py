#!/usr/bin/env python3
"""Runs the benchmark pack: every program, interleaved, at each worker
count, on each runtime; one table on stdout, JSON and an SVG plot in --out.

usage: run.sh [--workers 1,2,4,...] [--runs N] [--only NAME,...] [--out DIR]
              [--timeout S] [--ldd] [--help]

  --workers  worker counts (default 1,2,4,8,16, those the CPUs allow)
  --runs     runs per program, runtime and worker count (default 11)
  --only     these programs only (names as in the table)
  --out      where scaling.json, scaling.svg and scaling.md go
             (default: results/ beside run.sh)
  --timeout  seconds before a run is killed and counted FAIL (default 120)
  --ldd      checks that every library each program loads, on each
             runtime, comes from the pack (but glibc's), and exits

Runtimes (run N, for N workers, pinned to the first N CPUs this process may
use, with sched_setaffinity as `taskset -c 0..N-1` would):
  ours    MLIR_ASYNC_RUNTIME_WORKERS=N
  C++     MLIR's C++ runtime (Catalyst's build): its pool has one thread per
          CPU of the affinity mask (LLVM's hardware_concurrency), it reads
          no variable, so the pinning is what sets N
  libomp  OMP_NUM_THREADS=N, for the OpenMP lowering of the loops
  floor   single-thread yardstick, at the smallest worker count only (not
          for many-waiters: many threads calling it at once)
Round i runs every (program, workers, runtime) once before round i + 1
starts any; the order rotates. Each program checks its own answer and exits
non-zero on a wrong one: such a run is FAIL in the table, never a time.
Times are the program's own (seconds between two clocks around the work).
Exit status: 0; 1 if a run on ours failed (others' failures are shown);
2 on bad input. Progress goes to stderr. Python 3 standard library only.
"""
from __future__ import annotations

import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import report  # noqa: E402  (quartiles, text and Markdown tables)

RUNTIMES = ("ours", "cxx", "omp", "floor")
WHO = {"ours": "ours", "cxx": "C++", "omp": "libomp", "floor": "floor"}
COLOURS = {"ours": "#1f77b4", "cxx": "#d62728", "omp": "#2ca02c"}
GLIBC = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2",
         "librt.so.1", "libutil.so.1", "ld-linux-x86-64.so.2"}
GCC_RUNTIME = {"libstdc++.so.6", "libgcc_s.so.1"}
DEFAULT_WORKERS = [1, 2, 4, 8, 16]


class Usage(Exception):
    """A bad command line: one line, exit 2."""


def positive(text: str, what: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise Usage(f"{what} must be a positive integer, not {text!r}")
    if n < 1:
        raise Usage(f"{what} must be a positive integer, not {text!r}")
    return n


def parse_args(argv: list[str], cpus: int) -> dict:
    a = {"workers": None, "runs": 11, "only": None, "out": None,
         "timeout": 120.0, "ldd": False, "help": False}
    i = 0
    while i < len(argv):
        opt, val = argv[i], None
        if "=" in opt and opt.startswith("--"):
            opt, val = opt.split("=", 1)
        if opt in ("-h", "--help"):
            a["help"] = True
        elif opt == "--ldd":
            a["ldd"] = True
        elif opt in ("--workers", "--runs", "--only", "--out", "--timeout"):
            if val is None:
                if i + 1 >= len(argv):
                    raise Usage(f"{opt} needs a value")
                i += 1
                val = argv[i]
            if opt == "--workers":
                ws = sorted({positive(w, "--workers") for w in val.split(",") if w.strip()})
                if not ws:
                    raise Usage("--workers needs at least one count")
                a["workers"] = ws
            elif opt == "--runs":
                a["runs"] = positive(val, "--runs")
            elif opt == "--only":
                a["only"] = [n for n in val.split(",") if n]
            elif opt == "--out":
                a["out"] = Path(val)
            else:
                try:
                    a["timeout"] = float(val)
                except ValueError:
                    raise Usage(f"--timeout must be a number of seconds, not {val!r}")
        else:
            raise Usage(f"unknown argument {argv[i]!r} (see --help)")
        i += 1
    if a["workers"] is None:
        a["workers"] = [w for w in DEFAULT_WORKERS if w <= cpus] or [1]
    elif a["workers"][-1] > cpus:
        raise Usage(f"--workers {a['workers'][-1]}: this process may use only {cpus} CPU(s); "
                    "a run of N workers is pinned to N CPUs")
    return a


def glibc_version() -> tuple[int, int]:
    m = re.search(r"(\d+)\.(\d+)", os.confstr("CS_GNU_LIBC_VERSION") or "")
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


class Pack:
    def __init__(self, root: Path):
        self.root = root
        try:
            self.manifest = json.loads((root / "manifest.json").read_text())
        except (OSError, ValueError) as e:
            raise Usage(f"{root}/manifest.json: {e} (is this the pack that make bench-pack built?)")
        need = self.manifest.get("gcc_runtime_glibc")
        # The pack's GCC runtime (lib/gcc) was built for the build machine's
        # glibc: used only where this one is as new; else the system's.
        self.bundled_gcc = bool(need) and glibc_version() >= tuple(need)
        self.programs = self.manifest["programs"]

    def library_path(self, runtime: str) -> str:
        dirs = []
        if runtime in self.manifest["runtimes"]:
            dirs.append(self.root / self.manifest["runtimes"][runtime])
        dirs.append(self.root / "lib")
        if self.bundled_gcc:
            dirs.append(self.root / "lib" / "gcc")
        return ":".join(str(d) for d in dirs)

    def env(self, runtime: str, workers: int) -> dict:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("MLIR_ASYNC_RUNTIME_", "OMP_", "KMP_", "LD_", "BENCH_"))}
        env["LD_LIBRARY_PATH"] = self.library_path(runtime)
        if runtime == "ours":
            env["MLIR_ASYNC_RUNTIME_WORKERS"] = str(workers)
        elif runtime == "omp":
            env["OMP_NUM_THREADS"] = str(workers)
        return env


def plan(programs: list[dict], workers: list[int]) -> list[tuple[str, str, int]]:
    """The (program, runtime, workers) runs of one round, in a fixed order."""
    runs = []
    for p in programs:
        for w in workers:
            if p.get("async"):
                runs += [(p["name"], "ours", w), (p["name"], "cxx", w)]
            if p.get("omp"):
                runs.append((p["name"], "omp", w))
            if p.get("async") and p.get("floor", True) and w == workers[0]:
                runs.append((p["name"], "floor", w))
    return runs


def rotate(runs: list, i: int) -> list:
    k = (i * 7) % len(runs) if runs else 0
    return runs[k:] + runs[:k]


def judge(rc: int | None, stdout: str, timed_out: bool) -> dict:
    """status and elapsed from a run: the program checked its own answer
    (exit 3 when wrong); line 2 of its output is its time."""
    if timed_out:
        return {"status": "FAIL (timeout)"}
    if rc is None or rc < 0:
        return {"status": f"FAIL (signal {-(rc or 0)})"}
    if rc != 0:
        return {"status": "FAIL (wrong answer)" if rc == 3 else f"FAIL (exit {rc})"}
    lines = stdout.splitlines()
    try:
        elapsed = float(lines[1])
    except (IndexError, ValueError):
        return {"status": "FAIL (no time)"}
    return {"status": "ok", "elapsed_s": elapsed, "answer": lines[0]}


def pin(cpus: list[int]) -> None:
    """The child's CPUs (in the child, before exec); a kernel that refuses
    was reported once by main (`pinning_works`), and the run goes on."""
    try:
        os.sched_setaffinity(0, cpus)
    except OSError:
        pass


def pinning_works(cpus: list[int]) -> bool:
    try:
        os.sched_setaffinity(0, cpus)
        return True
    except OSError:
        return False


def run_one(pack: Pack, prog: dict, runtime: str, workers: int, cpus: list[int],
            timeout: float) -> dict:
    exe = pack.root / prog["omp" if runtime == "omp" else "async"]
    start = time.perf_counter()
    try:
        r = subprocess.run([str(exe)] + prog.get("args", []), capture_output=True, text=True,
                           env=pack.env(runtime, workers), timeout=timeout,
                           stdin=subprocess.DEVNULL,
                           preexec_fn=lambda: pin(cpus[:workers]))
        res = judge(r.returncode, r.stdout, False)
        if res["status"] != "ok":
            res["stderr_tail"] = r.stderr[-800:]
    except subprocess.TimeoutExpired:
        res = judge(None, "", True)
    res["wall_s"] = time.perf_counter() - start
    return res


def summarize(runs: list[dict]) -> dict:
    bad = [r["status"] for r in runs if r["status"] != "ok"]
    ok = [r["elapsed_s"] for r in runs if r["status"] == "ok"]
    if bad:
        return {"status": bad[0] + (f" {len(bad)}/{len(runs)}" if len(runs) > 1 else "")}
    q1, med, q3 = report.quartiles(ok)
    return {"status": "ok", "median_s": med, "q1_s": q1, "q3_s": q3, "runs": len(ok)}


def analyse(results: dict, workers: list[int]) -> dict:
    """Per program and worker count: speed-ups over the smallest count and
    the ratios (medians over medians)."""
    base = workers[0]
    out = {}
    for name, per in results.items():
        med = {rt: {w: s["median_s"] for w, s in per[rt].items() if s["status"] == "ok"}
               for rt in per}
        rows = {}
        for w in workers:
            row = {}
            for rt in ("ours", "cxx", "omp"):
                if base in med.get(rt, {}) and w in med[rt]:
                    row[f"speedup_{rt}"] = med[rt][base] / med[rt][w]
            ours = med.get("ours", {}).get(w)
            if ours:
                for rt in ("cxx", "omp"):
                    if w in med.get(rt, {}):
                        row[f"{rt}_over_ours"] = med[rt][w] / ours
                if "speedup_ours" in row:
                    row["ours_of_ideal"] = row["speedup_ours"] / (w / base)
            rows[w] = row
        out[name] = rows
    return out


def cell(s: dict | None) -> str:
    if not s:
        return "-"
    if s["status"] != "ok":
        return s["status"]
    iqr = (s["q3_s"] - s["q1_s"]) / s["median_s"] * 100 if s["median_s"] else 0
    return f"{s['median_s']:.4f} ({iqr:.0f}%)"


def num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def table_rows(results: dict, ratios: dict, workers: list[int]) -> tuple[list[str], list[list[str]]]:
    header = ["program", "N", "ours s (IQR)", "C++ s (IQR)", "libomp s (IQR)", "floor s",
              "x ours", "x C++", "x libomp", "C++/ours", "libomp/ours", "ours/ideal"]
    rows = []
    for name, per in results.items():
        for w in workers:
            r = ratios[name][w]
            rows.append([name, str(w), cell(per["ours"].get(w)), cell(per["cxx"].get(w)),
                         cell(per["omp"].get(w)), cell(per["floor"].get(w)),
                         num(r.get("speedup_ours")), num(r.get("speedup_cxx")),
                         num(r.get("speedup_omp")), num(r.get("cxx_over_ours")),
                         num(r.get("omp_over_ours")), num(r.get("ours_of_ideal"))])
    return header, rows


def svg_plot(path: Path, ratios: dict, workers: list[int], title: str, subtitle: str) -> None:
    """Speed-up against workers (log scale), one panel per program, one
    line per runtime and the ideal (dashed)."""
    names = list(ratios)
    cols, pw, ph, m = 4, 230, 180, 38
    rows = (len(names) + cols - 1) // cols
    width, height = cols * pw + 20, rows * ph + 90
    top = max(workers) / workers[0]
    # Workers on a log scale (1, 2, 4, ... evenly apart), speed-up linear.
    span = max(1e-9, math.log2(workers[-1] / workers[0]))
    xs = lambda w: m + math.log2(w / workers[0]) / span * (pw - m - 12)  # noqa: E731
    ys = lambda v: ph - 28 - min(v, top * 1.25) / (top * 1.25) * (ph - 58)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" font-size="15">{esc(title)}</text>',
           f'<text x="10" y="38" fill="#555">{esc(subtitle)}</text>']
    lx = 10
    for rt, colour in list(COLOURS.items()) + [("ideal", "#888")]:
        dash = ' stroke-dasharray="4 3"' if rt == "ideal" else ""
        out.append(f'<line x1="{lx}" y1="55" x2="{lx + 22}" y2="55" stroke="{colour}" '
                   f'stroke-width="2"{dash}/><text x="{lx + 26}" y="59">{WHO.get(rt, rt)}</text>')
        lx += 90
    for i, name in enumerate(names):
        ox, oy = 10 + (i % cols) * pw, 70 + (i // cols) * ph
        g = [f'<g transform="translate({ox},{oy})">',
             f'<text x="{m}" y="12" font-weight="bold">{esc(name)}</text>',
             f'<line x1="{m}" y1="{ys(0)}" x2="{pw - 12}" y2="{ys(0)}" stroke="#000"/>',
             f'<line x1="{m}" y1="{ys(0)}" x2="{m}" y2="{ys(top * 1.25)}" stroke="#000"/>']
        for w in workers:
            g.append(f'<text x="{xs(w):.1f}" y="{ys(0) + 13}" text-anchor="middle">{w}</text>')
        for v in sorted({0.0, 1.0, top}):
            g.append(f'<text x="{m - 4}" y="{ys(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
        g.append(f'<text x="{pw - 12}" y="{ys(0) + 25}" text-anchor="end" fill="#555">workers</text>')
        ideal = " ".join(f"{xs(w):.1f},{ys(w / workers[0]):.1f}" for w in workers)
        g.append(f'<polyline points="{ideal}" fill="none" stroke="#888" stroke-dasharray="4 3"/>')
        for rt, colour in COLOURS.items():
            pts = [(w, ratios[name][w].get(f"speedup_{rt}")) for w in workers]
            pts = [(w, v) for w, v in pts if v is not None]
            if not pts:
                continue
            line = " ".join(f"{xs(w):.1f},{ys(v):.1f}" for w, v in pts)
            g.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>')
            g += [f'<circle cx="{xs(w):.1f}" cy="{ys(v):.1f}" r="2.5" fill="{colour}">'
                  f'<title>{WHO[rt]} {w}: {v:.2f}x</title></circle>' for w, v in pts]
        g.append("</g>")
        out += g
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")


def esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def ldd_check(pack: Pack, programs: list[dict]) -> int:
    """Every library of every program, on each runtime, resolved inside the
    pack (glibc's aside, and the GCC runtime where the system's is used)."""
    allowed = GLIBC | (set() if pack.bundled_gcc else GCC_RUNTIME)
    root = str(pack.root.resolve()) + "/"
    bad = 0
    seen = set()
    for p in programs:
        for rt in ("ours", "cxx", "floor", "omp"):
            key = "omp" if rt == "omp" else "async"
            if not p.get(key) or (p[key], rt) in seen or (rt == "floor" and not p.get("floor", True)):
                continue
            seen.add((p[key], rt))
            r = subprocess.run(["ldd", str(pack.root / p[key])], capture_output=True, text=True,
                               env=pack.env(rt, 1))
            parts, outside = [], []
            for name, path in re.findall(r"^\s*(\S+) => (\S+)", r.stdout, re.M):
                real = os.path.realpath(path) if path != "not" else "not found"
                where = real[len(root):] if real.startswith(root) else real
                if not real.startswith(root) and name not in allowed:
                    outside.append(f"{name} => {where}")
                elif real.startswith(root):
                    parts.append(f"{name} => {where}")
            if r.returncode != 0 or outside:
                bad += 1
                print(f"FAIL ldd {p[key]} [{WHO[rt]}]: outside the pack: "
                      f"{', '.join(outside) or r.stderr.strip()}")
            else:
                print(f"ok   ldd {p[key]} [{WHO[rt]}]: {', '.join(parts)}")
    checked = len({p[k] for p in programs for k in ("async", "omp") if p.get(k)})
    outside = "glibc's" + ("" if pack.bundled_gcc else
                           " and the system's GCC runtime (libstdc++, libgcc_s)")
    if bad:
        print(f"ldd: {bad} program/runtime pair(s) load a library from outside the pack")
    else:
        print(f"ldd: {checked} programs on their runtimes: every library comes from the "
              f"pack but {outside} ({', '.join(sorted(allowed))})")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 8):
        print("run.sh: python3 3.8 or newer is needed (statistics.quantiles)", file=sys.stderr)
        return 2
    cpus = sorted(os.sched_getaffinity(0))
    try:
        a = parse_args(argv, len(cpus))
        if a["help"]:
            print(__doc__.strip())
            return 0
        pack = Pack(HERE)
        programs = pack.programs
        if a["only"]:
            known = {p["name"] for p in programs}
            unknown = [n for n in a["only"] if n not in known]
            if unknown:
                raise Usage(f"--only: no program {', '.join(unknown)} (have {', '.join(sorted(known))})")
            programs = [p for p in programs if p["name"] in a["only"]]
    except Usage as e:
        print(f"run.sh: {e}", file=sys.stderr)
        return 2
    if a["ldd"]:
        return ldd_check(pack, programs)
    out = a["out"] or HERE / "results"
    out.mkdir(parents=True, exist_ok=True)
    workers, runs = a["workers"], a["runs"]
    by_name = {p["name"]: p for p in programs}
    order = plan(programs, workers)
    raw: dict = {p["name"]: {rt: {w: [] for w in workers} for rt in RUNTIMES} for p in programs}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load0 = os.getloadavg()
    print(f"run.sh: {len(programs)} programs, workers {','.join(map(str, workers))}, "
          f"{runs} run(s): {len(order) * runs} runs; CPUs {cpus[:workers[-1]]}", file=sys.stderr)
    if not pinning_works(cpus):
        print("run.sh: this system refuses sched_setaffinity: runs are not pinned, and the "
              "C++ runtime's pool has one thread per CPU at every worker count", file=sys.stderr)
    if not pack.bundled_gcc:
        print("run.sh: glibc older than the pack's GCC runtime: the system's libstdc++ "
              "and libgcc_s are used", file=sys.stderr)
    done = 0
    for i in range(runs):
        for name, rt, w in rotate(order, i):
            res = run_one(pack, by_name[name], rt, w, cpus, a["timeout"])
            res["round"] = i
            raw[name][rt][w].append(res)
            done += 1
            shown = f"{res['elapsed_s']:.4f}s" if res["status"] == "ok" else res["status"]
            print(f"  [{done}/{len(order) * runs}] {name:22s} {WHO[rt]:6s} N={w:<3d} {shown}",
                  file=sys.stderr)
    load1 = os.getloadavg()
    results = {n: {rt: {w: summarize(v) for w, v in per_w.items() if v}
                   for rt, per_w in per.items()} for n, per in raw.items()}
    ratios = analyse(results, workers)
    header, rows = table_rows(results, ratios, workers)
    caption = (f"Benchmark pack, {platform.node()}, {os.cpu_count()} CPUs ({len(cpus)} usable), "
               f"{started}; {runs} interleaved run(s) per cell; load average "
               f"{load0[0]:.2f} at start, {load1[0]:.2f} at end.\n"
               f"A run of N workers is pinned to the first N of CPUs {cpus[:workers[-1]]} "
               "(as taskset -c); ours: MLIR_ASYNC_RUNTIME_WORKERS=N; C++: its pool follows the "
               "pinning; libomp: OMP_NUM_THREADS=N; floor: one thread.\n"
               "Times: median seconds (IQR as % of the median). x R: speed-up of R over its "
               f"{workers[0]}-worker median. C++/ours, libomp/ours > 1: ours faster. "
               "ours/ideal: ours' speed-up / N.")
    print(caption)
    print(report.table(rows, header))
    failed = [(n, rt, w, s["status"]) for n, per in results.items() for rt, ws in per.items()
              for w, s in ws.items() if s["status"] != "ok"]
    for n, rt, w, st in failed:
        print(f"note: {n} on {WHO[rt]} at N={w}: {st}")
    (out / "scaling.md").write_text(caption.replace("\n", " ") + "\n\n" +
                                    report.markdown(rows, header) + "\n")
    (out / "scaling.json").write_text(json.dumps({
        "date": started, "host": platform.node(), "cpus": os.cpu_count(), "usable_cpus": cpus,
        "glibc": "%d.%d" % glibc_version(), "loadavg_start": load0, "loadavg_end": load1,
        "workers": workers, "runs": runs, "pack": {k: pack.manifest.get(k) for k in
                                                  ("built", "commit", "cxx_runtime")},
        "bundled_gcc_runtime": pack.bundled_gcc, "results": results, "ratios": ratios,
        "raw": raw}, indent=1) + "\n")
    svg_plot(out / "scaling.svg", ratios, workers,
             "Speed-up against workers (median time at the fewest workers / median time)",
             f"{platform.node()}, {os.cpu_count()} CPUs, {started}, {runs} run(s) per point")
    print(f"results: {out / 'scaling.json'}, {out / 'scaling.svg'}, {out / 'scaling.md'}",
          file=sys.stderr)
    return 1 if any(rt == "ours" for _, rt, _, _ in failed) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
