#!/usr/bin/env python3
"""make catalyst: PennyLane Catalyst's hybrid programs (programs.py) on the
wheel's MLIR async runtime (C++, LLVM 22), on ours and, with --floor, on the
single-thread floor runtime of bench/floor, in separate processes
(child.py, run with the venv's Python), interleaved: round i runs every
runtime once before round i + 1 runs any, and who goes first rotates.

With --package, the venv is a user's, with the mlir-async-rs wheel
installed (make catalyst-ci, scripts/catalyst/wheel_test.py): every
process imports the installed mlir_async_rs, and ours is switched on by it
with the library of the package, as a user would.

Checks: every call of every run gives bit-identical results on every
runtime; each process mapped the runtime it was meant to and no other.
Catalyst 0.15's runtime has a race of its own when two QNodes start at once
(docs/catalyst.md, "Catalyst's device-pool race"): a process that dies of
a signal in a call, or whose call raises Catalyst's "Unrecoverable error
from asynchronous execution", is counted as a crash and run again, at most
CRASH_ATTEMPTS times in all; the counts are printed per runtime.

Prints the per-call table on stdout: per runtime, the median over the
rounds of each round's median time per call, with the spread (min-max) of
the round medians; C++/ours and ours/floor are medians of per-round ratios
with their min-max. Progress on stderr. Exit status 1 on any difference,
crash or wrong runtime; 2 on usage errors.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "bench"))
from report import markdown, quartiles, table  # noqa: E402  (scripts/bench/report.py)

sys.path.insert(0, str(HERE))




CRASH_ATTEMPTS = 6


class Crash(RuntimeError):
    """The child died of a signal or of Catalyst's async QNode error."""


def run_child(python, lib, programs, calls, timeout, package=False):
    """lib: None for Catalyst's own runtime; with package, any other value
    for ours (the package's library)."""
    # -X faulthandler: a crash prints the Python stack it happened under.
    cmd = [python, "-X", "faulthandler", str(HERE / "child.py"), "--programs", ",".join(programs)]
    if package:
        cmd += ["--package"] + (["--ours"] if lib else [])
    elif lib:
        cmd += ["--lib", str(lib)]
    if calls:
        cmd += ["--calls", str(calls)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        lines = [l for l in proc.stderr.splitlines() if "Warning" not in l and "warnings.warn" not in l]
        where = [l for l in lines if l.startswith("child: ")][-1:] or ["child: before any program"]
        errors = [l for l in lines if "Error" in l or "Fatal" in l][-2:]
        message = f"exit status {proc.returncode} in {where[0][7:]}: {' | '.join(errors)}"
        if proc.returncode < 0 or "Unrecoverable error from asynchronous execution" in proc.stderr:
            raise Crash(message)
        raise RuntimeError(message)
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    data["wall_s"] = wall
    # Anything our runtime says on stderr (a misuse, objects alive at exit)
    # is kept and reported.
    data["runtime_stderr"] = [l for l in proc.stderr.splitlines() if "mlir-async-runtime" in l or "mlir_async" in l]
    return data


def ask(python, code):
    """What `python -c code` prints (one line)."""
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def cell(xs, unit=1e3, fmt="{:.3f}"):
    lo, hi = min(xs), max(xs)
    return f"{fmt.format(statistics.median(xs) * unit)} ({fmt.format(lo * unit)}-{fmt.format(hi * unit)})"


def ratio_cell(num, den):
    per_round = [n / d for n, d in zip(num, den)]
    return f"{statistics.median(per_round):.2f} ({min(per_round):.2f}-{max(per_round):.2f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", required=True, type=Path, help="the venv with pennylane-catalyst")
    parser.add_argument("--runtime", type=Path, help="our libmlir_async_runtime.so (the checkout's route)")
    parser.add_argument("--package", action="store_true",
                        help="instead of --runtime: ours is the installed mlir-async-rs package's (a user's route)")
    parser.add_argument("--floor", type=Path, help="the floor runtime, a third column")
    parser.add_argument("--runs", type=int, default=11, help="rounds (default 11)")
    parser.add_argument("--calls", type=int, default=0, help="calls per program and process (default: each program's own)")
    parser.add_argument("--only", default="", help="comma-separated program names")
    parser.add_argument("--markdown", type=Path, help="also write the table here, as markdown")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per process")
    args = parser.parse_args()
    python = args.venv / "bin" / "python"
    if not python.exists():
        parser.error(f"{python} not found: run make setup")
    if bool(args.runtime) == args.package:
        parser.error("give exactly one of --runtime and --package")
    if args.package and args.floor:
        parser.error("--floor goes with --runtime")
    for lib in (args.runtime, args.floor):
        if lib and not lib.is_file():
            parser.error(f"{lib} not found: run make build" + (" floor" if lib == args.floor else ""))
    names = [n for n in args.only.split(",") if n] or None
    if names is None:
        names = subprocess.run([python, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                                "from programs import PROGRAMS; print(','.join(PROGRAMS))", str(HERE)],
                               capture_output=True, text=True, check=True).stdout.strip().split(",")

    ours = ask(python, "import mlir_async_rs; print(mlir_async_rs.library_path())") if args.package \
        else str(args.runtime.resolve())
    runtimes = [("C++", None), ("ours", ours)]
    if args.floor:
        runtimes.append(("floor", args.floor.resolve()))
    # Catalyst's C++ runtime, where the venv's Python finds Catalyst.
    catalyst_lib = ask(python, "import importlib.util, pathlib; "
                               "print(pathlib.Path(importlib.util.find_spec('catalyst').origin).parent / 'lib')")
    wheel_lib = Path(catalyst_lib) / "libmlir_async_runtime.so.22.0git"
    expected_map = {"C++": [str(wheel_lib.resolve())], "ours": [ours]}
    if args.floor:
        expected_map["floor"] = [str(args.floor.resolve())]

    load_start = os.getloadavg()[0]
    runs = {who: [] for who, _ in runtimes}
    crashes = {who: [] for who, _ in runtimes}
    failures = []
    for r in range(args.runs):
        order = runtimes[r % len(runtimes):] + runtimes[:r % len(runtimes)]
        for who, lib in order:
            print(f"catalyst: round {r + 1}/{args.runs}: {who}", file=sys.stderr, flush=True)
            data = None
            for attempt in range(CRASH_ATTEMPTS):
                try:
                    data = run_child(python, lib, names, args.calls, args.timeout, args.package)
                    break
                except Crash as e:
                    crashes[who].append(f"round {r + 1}: {e}")
                    print(f"catalyst: round {r + 1}, {who}: crashed ({e}), again", file=sys.stderr, flush=True)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    failures.append(f"round {r + 1}, {who}: {e}")
                    break
            else:
                failures.append(f"round {r + 1}, {who}: crashed {CRASH_ATTEMPTS} times in a row")
            if data is None:
                continue
            if data["mapped"] != expected_map[who]:
                failures.append(f"round {r + 1}, {who}: mapped {data['mapped']}, expected {expected_map[who]}")
            for line in data["runtime_stderr"]:
                failures.append(f"round {r + 1}, {who}: runtime said: {line}")
            runs[who].append(data)
    load_end = os.getloadavg()[0]

    # Results: every call of every process equals the first C++ process's.
    reference = {}
    for who, _ in runtimes:
        for i, data in enumerate(runs[who]):
            for name, p in data["programs"].items():
                if p["mismatches"]:
                    failures.append(f"{name} on {who}, run {i + 1}: {p['mismatches']} call(s) differ from its first")
                ref = reference.setdefault(name, (who, p["result"], p["readable"]))
                if p["result"] != ref[1]:
                    failures.append(f"{name}: {who} run {i + 1} gave {p['readable']}, {ref[0]} gave {ref[2]}")

    header = ["program", "calls", "C++ ms/call", "ours ms/call"] + (["floor ms/call"] if args.floor else []) \
        + ["C++/ours"] + (["ours/floor"] if args.floor else []) + ["results"]
    rows = []
    complete = all(len(runs[who]) == args.runs for who, _ in runtimes)
    for name in names:
        if not complete:
            break
        med = {who: [statistics.median(d["programs"][name]["call_s"]) for d in runs[who]] for who, _ in runtimes}
        same = not any(f.startswith(name + ":") or f.startswith(name + " on") for f in failures)
        row = [name, str(len(runs["C++"][0]["programs"][name]["call_s"])), cell(med["C++"]), cell(med["ours"])]
        if args.floor:
            row.append(cell(med["floor"]))
        row.append(ratio_cell(med["C++"], med["ours"]))
        if args.floor:
            row.append(ratio_cell(med["ours"], med["floor"]))
        row.append("identical" if same else "DIFFER")
        rows.append(row)
    if rows:
        print(table(rows, header))
        note = (f"{args.runs} interleaved rounds, one process per runtime and round; medians of per-round "
                f"median times per call (min-max over rounds); {os.cpu_count()} cores, load average "
                f"{load_start:.2f} at start, {load_end:.2f} at end")
        print(note)
        crashed = ", ".join(f"{who} {len(crashes[who])}" for who, _ in runtimes)
        crash_note = (f"processes crashed in a call and run again: {crashed} "
                      f"(of {args.runs} rounds each; Catalyst's device-pool race)")
        print(crash_note)
        for who, _ in runtimes:
            for c in crashes[who]:
                print(f"  {who} {c}")
        if args.markdown:
            args.markdown.parent.mkdir(parents=True, exist_ok=True)
            args.markdown.write_text(markdown(rows, header) + "\n\n" + note + "\n\n" + crash_note + "\n")
    for f in failures:
        print(f"catalyst: FAIL {f}", file=sys.stderr)
    return 1 if failures or not complete else 0


if __name__ == "__main__":
    sys.exit(main())
