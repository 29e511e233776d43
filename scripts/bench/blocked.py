#!/usr/bin/env python3
"""Many blocked tasks: what N tasks blocked at once cost a runtime (issue 25).

The program is mlir-tests/blocked-tasks.mlir: N tasks, each an
async.execute that counts itself started (an atomic add) and then blocks in
a plain func.func's async.await on one gate token (a blocking
mlirAsyncRuntimeAwaitToken inside a task); main opens the gate only when
all N have started, or at the program's deadline (then it prints how many
had, and the run is `gate at deadline`). This script writes a variant of it
per task count (its %n_tasks and %deadline_s lines replaced, into --out),
lowers it with its RUN line's own stage 1 (mlir-tests/lib/corpus.py,
lowering.py), and runs it once under jit-harness (mlir-tests/lib/harness.py:
--echo, no leak check, its watchdog at --timeout) with the runtime given by
--runtime, MLIR_ASYNC_RUNTIME_WORKERS=--workers and any --env VAR=VAL.
Peak threads are counted exactly by scripts/bench/threadpeak.c, built with
$CC (default cc) into --out and LD_PRELOADed: it interposes pthread_create
and counts a thread from its create call to its exit. As a cross-check,
/proc/<pid>/status is read every --sample-ms (its Threads; a thread that
lives less than a period can be missed), and /proc/<pid>/maps every
--maps-ms (its number of mappings, against vm.max_map_count). Peak RSS is
the process's own rusage (os.wait4): exact. The harness itself has two
threads (main and its watchdog), so a runtime that adds only its workers
peaks at workers + 2.

One line per task count:

    tasks  status  wall  peak-RSS  RSS/task  threads  sampled  maps  note

  status     completed (all N started before the gate opened, and the sum
             of index + 1 is right); gate at deadline (K of N started);
             timeout (the harness's watchdog or our kill, --timeout + 30 s);
             crashed (signal or exit status); wrong output
  RSS/task   (peak RSS - the baseline's) / (N - baseline N); the baseline
             is a run of --baseline tasks (default 1) on the same runtime
  threads    peak live threads of the process (threadpeak.so, exact)
  sampled    peak Threads of /proc/<pid>/status, sampled
  maps       peak mappings of the process (sampled less often)
  note       the stderr line that best names a limit (vm.max_map_count,
             memory, mmap; a refused thread start; the thread cap), else the
             first stderr line

The issue's targets (--check: exit 1, one MISS line per missed target):
  below --limit-tasks (100,000): completed, at most --workers + 2 OS
  threads (exact or sampled, whichever is larger), at most
  --max-rss-per-task (64 KiB) of RSS per blocked task;
  from --limit-tasks on: completed, or failed with a stderr line naming the
  limit (max_map_count, memory, mmap).
The header gives the machine's limits (vm.max_map_count, kernel.threads-max,
RLIMIT_NPROC, MemTotal, MemAvailable).

Any runtime of the ABI can be measured: ours (the default), the floor
(bench/floor: a task runs only when main blocks, so none starts before the
gate: always `gate at deadline (0 of N)`), MLIR's C++ one (a pool of one
thread per core: it stops at that many started tasks). Examples:

    scripts/bench/blocked.py                                   # 10,000 and 100,000, ours
    scripts/bench/blocked.py --tasks 10000 --check             # make bench-blocked-check
    scripts/bench/blocked.py --env MLIR_ASYNC_RUNTIME_MAX_THREADS=16383
    scripts/bench/blocked.py --runtime /usr/lib/llvm-19/lib/libmlir_async_runtime.so \\
        --tasks 2,3 --deadline 5

Results go to stdout (--json: one JSON object instead of the table, every
run with its stderr tail); the commands it runs go to stderr. Exit status:
0; 1 when --check finds a missed target, or a lowering or the build of
threadpeak.so fails (one line on stderr); 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "mlir-tests" / "blocked-tasks.mlir"
# The pthread_create interposer that counts the exact peak of live threads.
THREADPEAK_C = Path(__file__).resolve().parent / "threadpeak.c"

sys.path.insert(0, str(REPO / "mlir-tests" / "lib"))
import corpus  # noqa: E402  (RUN lines: the program's lowering)
import harness  # noqa: E402  (the one jit-harness command line)
import lowering  # noqa: E402  (the one lowering recipe)
import toolchain  # noqa: E402  (LLVM_PREFIX)
import bench  # noqa: E402  (run_child: the one way a benchmark runs a process)

# The program's two parameters, each one line of it.
N_LINE = re.compile(r"^(\s*%n_tasks = arith\.constant )\d+( : index)$", re.M)
DEADLINE_LINE = re.compile(r"^(\s*%deadline_s = arith\.constant )[0-9.]+( : f64)$", re.M)

# What the program prints (its CHECK lines).
OUT_N = re.compile(r"^blocked tasks: (\d+)$", re.M)
OUT_STARTED = re.compile(r"^started before the gate opened: (\d+)$", re.M)
OUT_SUM = re.compile(r"^sum of index \+ 1: (\d+)$", re.M)

# The harness's summary line of a run its watchdog reported as hung.
HUNG = re.compile(r"\b1 runs, \d+ passed, \d+ failed, 1 hung\b")

# Stderr lines that name the limit that stopped a run, most telling first:
# the system's limits, a refused thread start, the runtime's thread cap.
LIMIT_WORDS = [re.compile(w, re.I) for w in (
    r"max_map_count|out of memory|cannot allocate|mmap",
    r"pthread_create|cannot start|resource temporarily unavailable",
    r"thread cap|MAX_THREADS")]
# What a failure at the --limit-tasks count must name (the issue: the limit
# that binds, vm.max_map_count or memory).
LIMIT_NAMED = re.compile(r"max_map_count|memory|mmap", re.I)

KIB = 1024


def variant(text: str, n: int, deadline: float) -> str:
    """The program with N tasks and a deadline of `deadline` seconds."""
    text, k1 = N_LINE.subn(r"\g<1>%d\g<2>" % n, text)
    text, k2 = DEADLINE_LINE.subn(r"\g<1>%r\g<2>" % float(deadline), text)
    if (k1, k2) != (1, 1):
        raise ValueError("%s: expected one `%%n_tasks = arith.constant N : index` and one "
                         "`%%deadline_s = arith.constant S : f64` line" % PROGRAM)
    return text


def parse_output(stdout: str) -> dict:
    """The program's three figures, None where a line is missing."""
    def num(rx):
        m = rx.search(stdout)
        return int(m.group(1)) if m else None
    return {"n": num(OUT_N), "started": num(OUT_STARTED), "sum": num(OUT_SUM)}


def status_of(n: int, rc: int, timed_out: bool, out: dict) -> str:
    """completed / gate at deadline (K of N started) / timeout / crashed (...) /
    wrong output (...)."""
    if timed_out:
        return "timeout"
    if rc < 0:
        try:
            return "crashed (%s)" % signal.Signals(-rc).name
        except ValueError:
            return "crashed (signal %d)" % -rc
    if rc != 0:
        return "crashed (exit %d)" % rc
    if out["n"] != n or out["started"] is None or out["sum"] is None:
        return "wrong output (missing lines)"
    if out["sum"] != n * (n + 1) // 2:
        return "wrong output (sum %d, not %d)" % (out["sum"], n * (n + 1) // 2)
    if out["started"] < n:
        return "gate at deadline (%d of %d started)" % (out["started"], n)
    return "completed"


def note_of(stderr: str) -> str:
    """The stderr line that best names a limit (LIMIT_WORDS, in order),
    else the first line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for words in LIMIT_WORDS:
        for ln in lines:
            if words.search(ln):
                return ln
    return lines[0] if lines else ""


def proc_status(pid: int) -> dict:
    """Threads and VmRSS (KiB) of /proc/<pid>/status; {} once it is gone."""
    try:
        with open("/proc/%d/status" % pid, "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, val = line.partition(":")
        if key == "Threads":
            out["threads"] = int(val)
        elif key in ("VmRSS", "VmHWM"):
            out[key] = int(val.split()[0])
    return out


def count_maps(pid: int) -> int | None:
    """The number of mappings of the process (lines of /proc/<pid>/maps)."""
    try:
        with open("/proc/%d/maps" % pid, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        return None


class Sampler(threading.Thread):
    """Samples a running process's threads and mappings until stopped."""

    def __init__(self, pid: int, every_s: float, maps_every_s: float):
        super().__init__(daemon=True)
        self.pid, self.every_s, self.maps_every_s = pid, every_s, maps_every_s
        self.peak_threads = 0
        self.peak_maps = 0
        self.samples = 0
        self.stop = threading.Event()

    def run(self) -> None:
        next_maps = 0.0
        while not self.stop.is_set():
            s = proc_status(self.pid)
            if s:
                self.samples += 1
                self.peak_threads = max(self.peak_threads, s.get("threads", 0))
            now = time.monotonic()
            if self.maps_every_s > 0 and now >= next_maps:
                m = count_maps(self.pid)
                if m is not None:
                    self.peak_maps = max(self.peak_maps, m)
                next_maps = now + self.maps_every_s
            self.stop.wait(self.every_s)

    def finish(self) -> None:
        """Stops sampling (the process was reaped)."""
        self.stop.set()
        self.join()


def run_sampled(cmd: list[str], env: dict, timeout: float, every_s: float,
                maps_every_s: float) -> dict:
    """Runs cmd (bench.py's run_child), sampling it; wall time, exit
    status, peak RSS (rusage), peak threads and mappings (sampled),
    output."""
    samplers: list[Sampler] = []

    def watch(pid: int) -> Sampler:
        sampler = Sampler(pid, every_s, maps_every_s)
        sampler.start()
        samplers.append(sampler)
        return sampler

    res = bench.run_child(cmd, timeout, env=env, watch=watch)
    sampler = samplers[0]
    return {"rc": res["rc"], "timed_out": res["timeout"], "wall_s": res["wall_s"],
            "peak_rss_kib": res["maxrss_kib"], "peak_threads": sampler.peak_threads,
            "peak_maps": sampler.peak_maps, "samples": sampler.samples,
            "stdout": res["stdout"], "stderr": res["stderr"]}


def machine_limits() -> dict:
    def read(path, conv=int):
        try:
            with open(path) as f:
                return conv(f.read().strip())
        except (OSError, ValueError):
            return None

    mem = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("MemTotal", "MemAvailable"):
                    mem[k] = int(v.split()[0])
    except OSError:
        pass
    import resource
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    return {"vm.max_map_count": read("/proc/sys/vm/max_map_count"),
            "kernel.threads-max": read("/proc/sys/kernel/threads-max"),
            "RLIMIT_NPROC": None if nproc == resource.RLIM_INFINITY else nproc,
            "MemTotal_kib": mem.get("MemTotal"), "MemAvailable_kib": mem.get("MemAvailable")}


def build_threadpeak(out: Path) -> Path:
    """out/threadpeak.so, compiled from threadpeak.c with $CC (default cc)
    when missing or older than its source."""
    so = out / "threadpeak.so"
    if so.exists() and so.stat().st_mtime >= THREADPEAK_C.stat().st_mtime:
        return so
    cmd = shlex.split(os.environ.get("CC", "cc")) + [
        "-std=c11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror",
        "-o", str(so) + ".tmp", str(THREADPEAK_C), "-ldl", "-lpthread"]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines()
               or ["%s exited with status %d" % (cmd[0], r.returncode)])[0]
        raise ValueError("cannot build %s: %s" % (THREADPEAK_C, why))
    os.replace(str(so) + ".tmp", so)
    return so


def read_peak(path: Path) -> int | None:
    """The number threadpeak.so last wrote, or None."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class Bench:
    """Lowers and runs the variants for one runtime."""

    def __init__(self, a):
        self.a = a
        self.prefix = toolchain.prefix_of_bin(str(a.llvm_bin))
        self.subs = corpus.substitutions(self.prefix, str(a.runtime))
        self.text = a.program.read_text()
        a.out.mkdir(parents=True, exist_ok=True)
        self.threadpeak = build_threadpeak(a.out)

    def lower(self, n: int) -> Path:
        """The variant of n tasks, lowered to LLVM IR by its RUN line's
        stage 1."""
        src = self.a.out / ("blocked-tasks-%d.mlir" % n)
        src.write_text(variant(self.text, n, self.a.deadline))
        runs = corpus.programs([str(src)], self.subs)
        if len(runs) != 1:
            raise ValueError("%s: expected one RUN line, found %d" % (self.a.program, len(runs)))
        ll = self.a.out / ("blocked-tasks-%d.ll" % n)
        lowering.lower(shlex.split(runs[0]["lower"]), str(ll), None, self.prefix)
        return ll

    def run(self, n: int) -> dict:
        ll = self.lower(n)
        env = dict(toolchain.toolchain_env(self.prefix))
        env["MLIR_ASYNC_RUNTIME_WORKERS"] = str(self.a.workers)
        env.update(self.a.env)
        peak_file = self.a.out / ("threadpeak-%d.txt" % n)
        if peak_file.exists():
            peak_file.unlink()
        env["THREADPEAK_OUT"] = str(peak_file)
        env["LD_PRELOAD"] = " ".join(x for x in (str(self.threadpeak), env.get("LD_PRELOAD")) if x)
        # The harness's watchdog gives up on the run at --timeout (0: never);
        # our kill, 30 s later, catches a harness that cannot exit.
        cmd = harness.command(self.a.harness, ll, self.a.runtime,
                              toolchain.runner_utils(self.prefix), entry="main",
                              timeout=int(self.a.timeout), extra=["--echo", "--no-leak-check"])
        sys.stderr.write("blocked.py: %d tasks: %s\n" % (n, " ".join(map(shlex.quote, cmd))))
        r = run_sampled(cmd, env, self.a.timeout + 30, self.a.sample_ms / 1000.0,
                        self.a.maps_ms / 1000.0)
        out = parse_output(r["stdout"])
        hung = bool(HUNG.search(r["stdout"]))
        r["sampled_threads"] = r.pop("peak_threads")
        r["exact_threads"] = read_peak(peak_file)
        r["peak_threads"] = max(r["sampled_threads"], r["exact_threads"] or 0)
        r.update(tasks=n, started=out["started"],
                 status=status_of(n, r["rc"], r["timed_out"] or hung, out),
                 note=note_of(r["stderr"]))
        r["stderr_tail"] = r.pop("stderr")[-2000:]
        r["stdout_tail"] = r.pop("stdout")[-500:]
        return r


def misses(r: dict, a) -> list[str]:
    """The issue's targets that run r misses (--check): below --limit-tasks,
    completed, within the thread bound and the RSS bound; from it on,
    completed, or failed with a stderr line that names the limit."""
    bound = a.workers + 2
    if r["tasks"] >= a.limit_tasks:
        if r["status"] == "completed" or LIMIT_NAMED.search(r["note"]):
            return []
        return ["%d tasks: %s, and no stderr line names the limit (max_map_count, memory): %r"
                % (r["tasks"], r["status"], r["note"])]
    out = []
    if r["status"] != "completed":
        out.append("%d tasks: %s (%s)" % (r["tasks"], r["status"], r["note"] or "no stderr"))
    if r["peak_threads"] > bound:
        out.append("%d tasks: %d OS threads at peak, more than workers + 2 = %d"
                   % (r["tasks"], r["peak_threads"], bound))
    per = r.get("rss_per_task_kib")
    if r["status"] == "completed" and per is not None and per > a.max_rss_per_task:
        out.append("%d tasks: %.1f KiB of RSS per blocked task, more than %g KiB"
                   % (r["tasks"], per, a.max_rss_per_task))
    return out


def fmt_row(r: dict) -> str:
    per = r.get("rss_per_task_kib")
    return "%-8d %-36s %7.2f s %9.1f MiB %10s %8s %8d %9s  %s" % (
        r["tasks"], r["status"], r["wall_s"], r["peak_rss_kib"] / KIB,
        "-" if per is None else "%.1f KiB" % per,
        "-" if r["exact_threads"] is None else r["exact_threads"], r["sampled_threads"],
        r["peak_maps"] or "-", r["note"])


def env_pair(s: str) -> tuple[str, str]:
    k, sep, v = s.partition("=")
    if not sep or not k:
        raise argparse.ArgumentTypeError("expected VAR=VALUE, not %r" % s)
    return k, v


def counts(s: str) -> list[int]:
    try:
        out = [int(x.replace("_", "")) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("expected task counts like 10000,100000, not %r" % s)
    if not out or any(x < 1 for x in out):
        raise argparse.ArgumentTypeError("task counts must be >= 1: %r" % s)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="See the module docstring (head -60 scripts/bench/blocked.py) and "
        "bench/README.md, 'Many blocked tasks'.")
    ap.add_argument("--runtime", type=Path,
                    default=REPO / "target/release/libmlir_async_runtime.so",
                    help="the runtime library to measure (ours by default; the floor or "
                    "the C++ one work too)")
    ap.add_argument("--tasks", type=counts, default=[10000, 100000],
                    help="comma-separated task counts (default 10000,100000)")
    ap.add_argument("--baseline", type=int, default=1,
                    help="task count of the baseline run for RSS per task (default 1)")
    ap.add_argument("--workers", type=int, default=2,
                    help="MLIR_ASYNC_RUNTIME_WORKERS (default 2); the thread bound is this + 2")
    ap.add_argument("--env", type=env_pair, action="append", default=[], metavar="VAR=VALUE",
                    help="extra environment for the program (repeatable), e.g. "
                    "MLIR_ASYNC_RUNTIME_MAX_THREADS=20000")
    ap.add_argument("--deadline", type=float, default=30.0,
                    help="the program's wait for all tasks to start, s (default 30)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="kill a run after this many s (default: deadline + 90)")
    ap.add_argument("--sample-ms", type=float, default=2.0,
                    help="period of the /proc/<pid>/status samples (default 2 ms)")
    ap.add_argument("--maps-ms", type=float, default=100.0,
                    help="period of the /proc/<pid>/maps counts (default 100 ms; 0: none)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if a run misses the issue's targets (see above)")
    ap.add_argument("--max-rss-per-task", type=float, default=64.0, metavar="KIB",
                    help="--check's bound on RSS per blocked task (default 64 KiB)")
    ap.add_argument("--limit-tasks", type=int, default=100000,
                    help="from this many tasks a run may fail if it names the limit "
                    "(default 100000)")
    ap.add_argument("--harness", type=Path, default=REPO / "target/release/jit-harness",
                    help="the jit-harness that runs the program (default target/release/)")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ap.add_argument("--program", type=Path, default=PROGRAM, help=argparse.SUPPRESS)
    ap.add_argument("--llvm-bin", type=Path, default=Path(toolchain.bin_dir()),
                    help="the toolchain (default: $LLVM_PREFIX/bin)")
    ap.add_argument("--out", type=Path, default=REPO / "target" / "bench-blocked",
                    help="where the variants are written (default target/bench-blocked)")
    a = ap.parse_args()
    a.env = dict(a.env)
    if a.timeout is None:
        a.timeout = a.deadline + 90.0
    if a.workers < 1 or a.baseline < 1 or a.deadline <= 0 or a.timeout <= 0 or a.sample_ms <= 0:
        ap.error("--workers, --baseline, --deadline, --timeout and --sample-ms must be positive")
    for what, path in (("runtime library", a.runtime), ("jit-harness", a.harness)):
        if not path.is_file():
            ap.error("no %s at %s (make build?)" % (what, path))
    if any(n <= a.baseline for n in a.tasks):
        ap.error("every --tasks count must be larger than --baseline (%d)" % a.baseline)

    try:
        bench = Bench(a)
        base = bench.run(a.baseline)
        rows = []
        for n in a.tasks:
            r = bench.run(n)
            if base["status"] == "completed":
                grown = r["peak_rss_kib"] - base["peak_rss_kib"]
                r["rss_per_task_kib"] = grown / (n - a.baseline)
            rows.append(r)
    except (ValueError, OSError, lowering.LoweringError) as e:
        print("blocked.py: %s" % str(e).strip().splitlines()[0], file=sys.stderr)
        return 1

    limits = machine_limits()
    failed = [m for r in rows for m in misses(r, a)] if a.check else []
    if base["status"] != "completed" and a.check:
        failed.insert(0, "baseline (%d tasks): %s" % (a.baseline, base["status"]))
    if a.json:
        json.dump({"runtime": str(a.runtime), "workers": a.workers, "env": a.env,
                   "deadline_s": a.deadline, "limits": limits, "baseline": base,
                   "runs": rows, "misses": failed if a.check else None}, sys.stdout, indent=1)
        print()
    else:
        print("runtime %s, MLIR_ASYNC_RUNTIME_WORKERS=%d%s, deadline %g s, timeout %g s"
              % (a.runtime, a.workers,
                 "".join(" %s=%s" % kv for kv in a.env.items()), a.deadline, a.timeout))
        print("limits: " + ", ".join("%s %s" % kv for kv in limits.items()))
        print("baseline: %d task(s) %s, peak RSS %.1f MiB, %s threads (%d sampled), %s maps"
              % (a.baseline, base["status"], base["peak_rss_kib"] / KIB,
                 base["exact_threads"], base["sampled_threads"], base["peak_maps"] or "-"))
        print("%-8s %-36s %9s %13s %10s %8s %8s %9s  %s" % (
            "tasks", "status", "wall", "peak RSS", "RSS/task", "threads", "sampled", "maps",
            "note"))
        for r in rows:
            print(fmt_row(r))
        for m in failed:
            print("MISS " + m)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
