"""Parallel loops against OpenMP: the bench/loops/*.mlir kernels in make bench.

Each kernel is an scf.parallel program (bench/loops/README.md) lowered three
ways with the recipes of mlir-tests/lib/pipelines.txt:

    async       async-parallel-for[{BENCH-PARALLEL-FOR}] + the async pipeline:
                run on ours, the C++ runtime and the floor (one thread)
    openmp      convert-scf-to-openmp ... convert-openmp-to-llvm: run on
                LLVM's libomp.so with OMP_NUM_THREADS=--omp-threads
    sequential  the to-llvm passes alone (scf.parallel -> sequential loops):
                the reference

Every lowering is checked to be what it claims (the OpenMP one's LLVM IR
calls __kmpc_fork_call, the async one calls mlirAsyncRuntimeExecute, the
sequential one neither). One untimed run of the sequential lowering gives
the reference checksum, which must equal BENCH-EXPECT; every timed run of
every configuration must print that checksum, or it is FAIL (checksum) in
the table. Runs are interleaved like scripts/bench/bench.py's (round i runs every
configuration once, the first one rotating), and the ratios are medians of
per-run ratios within a round.

scripts/bench/bench.py imports this module and passes itself as `kit` (its run,
judge and statistics helpers), so there is one implementation of each and
no import cycle. Kernel names given to --only are taken out here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOOPS_DIR = REPO / "bench" / "loops"

sys.path.insert(0, str(REPO / "mlir-tests" / "lib"))
import pipelines  # noqa: E402  (the project's one definition of the pipelines)
import lowering  # noqa: E402  (the one lowering recipe)
import toolchain  # noqa: E402  (LLVM_PREFIX)

# Display order; any other bench/loops/*.mlir is appended alphabetically.
ORDER = ["elementwise", "triangular", "compute", "fine-grained"]

# Configuration key -> (lowering, runtime), in the order of the tables.
CONFIGS = {"runner/seq": ("sequential", None),
           "runner/omp": ("openmp", "libomp"),
           "runner/ours": ("async", "ours"),
           "runner/cxx": ("async", "cxx"),
           "runner/floor": ("async", "floor")}

# The ratios of the table, each X / ours (> 1: ours faster than X).
AGAINST_OURS = ("runner/omp", "runner/cxx", "runner/seq", "runner/floor")

# Calls each lowering's LLVM IR must (and must not) make: a lowering that
# silently came out sequential would make every ratio meaningless. (Calls,
# not declarations: convert-async-to-llvm declares the whole async ABI.)
MARKERS = {
    "openmp": (["__kmpc_fork_call"], ["mlirAsyncRuntime"]),
    "async": (["mlirAsyncRuntimeExecute"], ["__kmpc_"]),
    "sequential": ([], ["__kmpc_", "mlirAsyncRuntime"]),
}
CALL = re.compile(r"\bcall\b[^\n]*@([A-Za-z_][\w.]*)\(")


def add_arguments(ap) -> None:
    g = ap.add_argument_group("parallel loops against OpenMP (bench/loops)")
    g.add_argument("--loops-dir", type=Path, default=LOOPS_DIR,
                   help="directory of the parallel-loop kernels "
                   "(default bench/loops/)")
    g.add_argument("--libomp", type=Path, default=None,
                   help="the OpenMP runtime (default <llvm>/lib/libomp.so, "
                   "from libomp-19-dev)")
    g.add_argument("--omp-threads", type=int, default=os.cpu_count() or 2,
                   help="OMP_NUM_THREADS for libomp (default: the CPU count, "
                   "the size of our runtime's default pool)")
    g.add_argument("--no-loops", action="store_true",
                   help="skip the parallel-loop kernels")


def directive_reader(path: Path):
    """`directive(KEY, default)`: the value of a program's `// BENCH-KEY: V`
    line (bench/*.mlir and bench/loops/*.mlir alike); without the line, the
    default, or exit naming the file when there is none."""
    text = path.read_text()

    def directive(key: str, default: str | None = None) -> str:
        m = re.search(r"^//\s*BENCH-%s:\s*(\S+)\s*$" % key, text, re.M)
        if m:
            return m.group(1)
        if default is None:
            raise SystemExit(f"{path}: missing '// BENCH-{key}:' line")
        return default
    return directive


class Kernel:
    def __init__(self, path: Path):
        self.path = path
        self.name = path.stem
        directive = directive_reader(path)

        self.expect = int(directive("EXPECT"))
        self.loops = int(directive("LOOPS"))
        self.pf_options = directive("PARALLEL-FOR", "")
        self.opt = directive("OPT", "-O3")
        self.lowered: dict[str, Path] = {}
        self.lower_error: str | None = None
        self.fail_status = "FAIL (lowering)"
        self.reference: int | None = None


def time_cell(s: dict, scale: float = 1.0, digits: int = 4) -> str:
    """Median seconds (times `scale`: 1e6 for µs) and the interquartile
    range as % of the median."""
    if s.get("status") != "ok":
        return s.get("status", "-")
    med = s["elapsed_median_s"]
    iqr = (s["elapsed_q3_s"] - s["elapsed_q1_s"]) / med * 100 if med else 0
    return f"{med * scale:.{digits}f} ({iqr:.0f}%)"


def pick(directory: Path, order: list[str], skip: bool, only: list[str] | None, make):
    """The programs of `directory` (*.mlir), `order` first and the rest by
    name, made with `make(path)`, and the --only names not among them.
    None for the second value when --only was not given; no program when
    `skip`. Shared by the loop kernels and waits's programs."""
    d = directory.resolve()
    files = {p.stem: p for p in sorted(d.glob("*.mlir"))} if d.is_dir() else {}
    names = [] if skip else [n for n in order if n in files] + sorted(set(files) - set(order))
    if only is None:
        return [make(files[n]) for n in names], None
    return [make(files[n]) for n in names if n in only], [n for n in only if n not in files]


def select(args, only: list[str] | None):
    """(kernels to run, the --only names left for bench.py's workloads).

    The second value is None when --only was not given, [] when it named
    kernels only."""
    return pick(args.loops_dir, ORDER, args.no_loops, only, Kernel)


def recipes(llvm_bin: Path, pf_options: str) -> dict[str, str]:
    v = pipelines.load()[pipelines.version_of_prefix(str(llvm_bin.parent))]
    front = "async-parallel-for" + (f"{{{pf_options}}}" if pf_options else "")
    return {"async": v.pipeline(front=front), "openmp": v.openmp_pipeline(),
            "sequential": v.sequential()}


def lower(k: Kernel, llvm_bin: Path, out: Path) -> None:
    try:
        recipe = recipes(llvm_bin, k.pf_options)
    except (ValueError, KeyError) as e:
        k.lower_error = f"pipelines: {e}"
        return
    for kind, pipeline in recipe.items():
        dst = out / f"loops-{k.name}.{kind}.llvm.mlir"
        ll = out / f"loops-{k.name}.{kind}.ll"
        try:
            lowering.lower_file(str(k.path), str(ll), pipeline=pipeline,
                                prefix=str(llvm_bin.parent), mlir=str(dst))
        except lowering.LoweringError as e:
            k.lower_error = f"{kind}: {e}"[-2000:]
            return
        bad = wrong_calls(kind, ll.read_text())
        if bad:
            k.lower_error = (f"the {kind} lowering is not what it claims: "
                             f"its LLVM IR {', '.join(bad)}")
            return
        k.lowered[kind] = dst


def wrong_calls(kind: str, llvm_ir: str) -> list[str]:
    """What makes this LLVM IR not the `kind` lowering ([] if nothing)."""
    need, forbid = MARKERS[kind]
    called = set(CALL.findall(llvm_ir))
    return [f"never calls {m}" for m in need if m not in called] + \
        [f"calls {m}..." for m in forbid
         if any(c.startswith(m) for c in called)]


def command(key: str, k: Kernel, args) -> list[str] | None:
    kind, rt = CONFIGS[key]
    libs = [args.llvm_lib / "libmlir_c_runner_utils.so"]
    env = []
    if rt == "libomp":
        if args.libomp_path is None:
            return None
        libs.append(args.libomp_path)
        env = ["env", f"OMP_NUM_THREADS={args.omp_threads}"]
    elif rt is not None:
        lib = {"ours": args.runtime, "cxx": args.cxx,
               "floor": args.floor}[rt]
        if lib is None:
            return None
        libs.append(lib)
    return env + [str(args.llvm_bin / "mlir-cpu-runner"),
                  str(k.lowered[kind]), k.opt, "-e", "main",
                  "-entry-point-result=void",
                  "-shared-libs=" + ",".join(str(p) for p in libs)]


def us_per_loop(s: dict, loops: int) -> str:
    if s.get("status") != "ok":
        return s.get("status", "-")
    return f"{s['elapsed_median_s'] / loops * 1e6:.2f}"


def run(kernels: list[Kernel], args, kit) -> tuple[bool, list[str]]:
    """Runs and prints the parallel-loop tables; (any failure, notes)."""
    notes: list[str] = []
    if not kernels:
        return False, notes
    args.libomp_path = (args.libomp or args.llvm_lib / "libomp.so")
    if not args.libomp_path.exists():
        notes.append(f"libomp: {args.libomp_path} not found (make setup "
                     "installs libomp-19-dev); libomp columns skipped.")
        args.libomp_path = None
    else:
        args.libomp_path = args.libomp_path.resolve()
    keys = [c for c in CONFIGS
            if not (c == "runner/floor" and args.floor is None)
            and not (c == "runner/omp" and args.libomp_path is None)]
    started = time.strftime("%Y-%m-%d %H:%M")
    load_start = os.getloadavg()
    print(f"bench loops: {len(kernels)} kernel(s) x {len(keys)} "
          f"configuration(s) x {args.runs} run(s); libomp "
          f"{args.libomp_path}, OMP_NUM_THREADS={args.omp_threads}",
          file=sys.stderr)
    results: dict[str, dict] = {}
    any_fail = False
    for k in kernels:
        lower(k, args.llvm_bin, args.out)
        entry = {"source": str(k.path), "expect": k.expect, "loops": k.loops,
                 "parallel_for_options": k.pf_options, "opt": k.opt,
                 "runs": {c: [] for c in keys}, "summary": {}}
        results[k.name] = entry
        if k.lower_error is None:
            # The reference: one untimed run of the sequential lowering.
            ref = kit.judge(kit.run_child(command("runner/seq", k, args),
                                          args.timeout), k.expect)
            entry["reference"] = {key: ref.get(key) for key in
                                  ("status", "checksum", "elapsed_s")}
            if ref["status"] != "ok":
                k.fail_status = "FAIL (reference)"
                k.lower_error = (f"the sequential reference run failed: "
                                 f"{ref['status']} (checksum "
                                 f"{ref['checksum']}, BENCH-EXPECT "
                                 f"{k.expect})")
            else:
                k.reference = ref["checksum"]
        if k.lower_error:
            print(f"  {k.name}: {k.lower_error[:300]}", file=sys.stderr)
            entry["lower_error"] = k.lower_error
            for c in keys:
                entry["summary"][c] = {"status": k.fail_status}
            any_fail = True
            continue
        for i in range(args.runs):
            j = i % len(keys)
            for c in keys[j:] + keys[:j]:
                res = kit.judge(kit.run_child(command(c, k, args),
                                              args.timeout), k.reference)
                res["round"] = i
                res["loadavg_1min"] = os.getloadavg()[0]
                entry["runs"][c].append(res)
                shown = (f"{res['elapsed_s']:.4f}s" if res["status"] == "ok"
                         else res["status"])
                print(f"  {k.name:16s} {c:13s} run {i + 1}/{args.runs}: "
                      f"{shown}  wall {res['wall_s']:.2f}s", file=sys.stderr)
        for c in keys:
            entry["summary"][c] = kit.summarize(entry["runs"][c])
            # As in bench.py: only ours' failures (and a wrong reference)
            # fail the command; the others are shown in the table.
            if c in ("runner/ours", "runner/seq"):
                any_fail |= entry["summary"][c]["status"] != "ok"
        entry["ratios"] = {
            f"{n.split('/')[1]}/ours": kit.paired_ratio(entry, n, "runner/ours")
            for n in AGAINST_OURS if n in keys}
    load_end = os.getloadavg()

    def cell(e: dict, c: str, f) -> str:
        return f(e["summary"][c]) if c in e["summary"] else "-"

    who = lambda c: kit.WHO[c.split("/")[1]]  # noqa: E731
    header = ["kernel"] + [f"{who(c)} s (IQR)" for c in keys] + \
        [f"{who(n)}/ours (IQR)" for n in AGAINST_OURS if n in keys]
    rows = []
    for n, e in results.items():
        rows.append([n] + [cell(e, c, kit.time_cell) for c in keys] +
                    [kit.ratio_cell(e, r, "runner/ours")
                     for r in AGAINST_OURS if r in keys])
    uheader = ["kernel", "loops"] + [f"{who(c)} µs" for c in keys] + \
        ["ours - seq µs"] + \
        (["libomp - seq µs"] if "runner/omp" in keys else [])
    urows = []
    for n, e in results.items():
        loops = e["loops"]
        row = [n, str(loops)] + [cell(e, c, lambda s: us_per_loop(s, loops))
                                 for c in keys]
        s_seq = e["summary"].get("runner/seq", {})
        for c in ("runner/ours", "runner/omp"):
            if c not in keys:
                continue
            s = e["summary"].get(c, {})
            row.append(f"{(s['elapsed_median_s'] - s_seq['elapsed_median_s']) / loops * 1e6:.2f}"
                       if s.get("status") == "ok" and s_seq.get("status") == "ok"
                       else "-")
        urows.append(row)
    load = (f"load average (1/5/15 min) "
            f"{' '.join(f'{x:.2f}' for x in load_start)} at start, "
            f"{' '.join(f'{x:.2f}' for x in load_end)} at end, "
            f"{os.cpu_count()} CPUs")
    caption = (f"Parallel loops against OpenMP: mlir-cpu-runner, {args.runs} "
               f"interleaved runs per configuration, {started}; {load}; "
               f"libomp with OMP_NUM_THREADS={args.omp_threads}.\n"
               "Times: median in-program seconds (IQR as % of the median). "
               "Ratios: median of per-run ratios with Q1-Q3;\n"
               "X/ours > 1: ours faster than X. Every run's checksum equals "
               "the sequential lowering's (else FAIL).")
    ucaption = ("Time per parallel loop (median seconds / BENCH-LOOPS), µs; "
                "the difference to the sequential lowering is the cost of "
                "dispatching and joining one loop.")
    print()
    print(caption)
    print(kit.table(rows, header))
    print()
    print(ucaption)
    print(kit.table(urows, uheader))
    (args.out / "loops-table.md").write_text(
        caption.replace("\n", " ") + "\n\n" + kit.markdown(rows, header) +
        "\n\n" + ucaption + "\n\n" + kit.markdown(urows, uheader) + "\n")
    (args.out / "loops-results.json").write_text(json.dumps({
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "cpus": os.cpu_count(),
        "loadavg_start": load_start, "loadavg_end": load_end,
        "runs": args.runs, "omp_threads": args.omp_threads,
        "libomp": str(args.libomp_path), "kernels": results}, indent=1) + "\n")
    groups = [(f"{who(n)} / ours", n, "runner/ours") for n in AGAINST_OURS
              if n in keys and n != "runner/seq"]
    kit.svg_chart(args.out / "loops-ratios.svg", results, groups,
                  "Parallel loops: reference time / our time",
                  f"median of {args.runs} interleaved runs, {os.cpu_count()} "
                  f"CPUs, {started}, load {load_start[0]:.2f}")
    notes.append(f"parallel loops: {args.out / 'loops-table.md'}, "
                 f"{args.out / 'loops-ratios.svg'}, "
                 f"{args.out / 'loops-results.json'}")
    return any_fail, notes
