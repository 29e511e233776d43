"""One process of make catalyst (run.py starts it with the venv's Python):
compiles the programs of programs.py with qjit(async_qnodes=True), linked
against the wheel's async runtime or, through async_runtime_switch, against
another library, then calls each one --calls times in a row. Prints one
JSON object on stdout: per program, the compile time, each call's time,
and the results as exact bytes (every call must give the first call's);
and which async runtime libraries the process mapped.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from catalyst import qjit  # noqa: E402

import async_runtime_switch  # noqa: E402
from programs import PROGRAMS  # noqa: E402


def exact(result):
    """The result as (dtype, shape, bytes in hex) per output: equal exactly
    when every bit is."""
    outputs = result if isinstance(result, tuple) else (result,)
    return [[str(np.asarray(v).dtype), list(np.shape(v)), np.asarray(v).tobytes().hex()] for v in outputs]


def readable(result):
    outputs = result if isinstance(result, tuple) else (result,)
    return [np.asarray(v).tolist() for v in outputs]


def mapped_runtimes():
    """The async runtime libraries in this process's address space."""
    names = set()
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        if "async_runtime" in path or "async_floor" in path:
            names.add(str(Path(path).resolve()))
    return sorted(names)


def run(name, calls):
    fn, arg, default_calls = PROGRAMS[name]
    calls = calls or default_calls
    start = time.perf_counter()
    compiled = qjit(fn, async_qnodes=True)
    first = compiled(arg)
    compile_s = time.perf_counter() - start
    want = exact(first)
    times, mismatches = [], 0
    for _ in range(calls):
        t = time.perf_counter()
        result = compiled(arg)
        times.append(time.perf_counter() - t)
        if exact(result) != want:
            mismatches += 1
    return {"compile_s": compile_s, "call_s": times, "result": want,
            "readable": readable(first), "mismatches": mismatches,
            "workspace": str(compiled.workspace)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", help="link against this runtime (default: the wheel's)")
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated names")
    parser.add_argument("--calls", type=int, default=0, help="calls per program (default: its own)")
    parser.add_argument("--switch-back", action="store_true",
                        help="with --lib: link the programs inside `with our_runtime(lib)`, then "
                             "again after the block (as NAME@after)")
    args = parser.parse_args()
    out = {"programs": {}}
    names = args.programs.split(",")

    def run_all(suffix=""):
        for name in names:
            # Which program a crash happened in (run.py shows stderr's tail).
            print(f"child: {name}{suffix}", file=sys.stderr, flush=True)
            out["programs"][name + suffix] = run(name, args.calls)

    if args.switch_back:
        with async_runtime_switch.our_runtime(args.lib):
            run_all()
        run_all("@after")
    else:
        if args.lib:
            async_runtime_switch.use_our_runtime(args.lib)
        run_all()
    out["mapped"] = mapped_runtimes()
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
