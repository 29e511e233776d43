"""One process of make catalyst (run.py starts it with the venv's Python):
compiles the programs of programs.py with qjit(async_qnodes=True), linked
against Catalyst's own async runtime or, through the mlir_async_rs switch,
against ours, then calls each one --calls times in a row. Prints one
JSON object on stdout: per program, the compile time, each call's time,
and the results as exact bytes (every call must give the first call's);
and which async runtime libraries the process mapped.

Two routes to the switch (docs/catalyst.md):
  --lib PATH   the checkout's: mlir_async_rs imported from the checkout's
               python/ directory, linking PATH;
  --package    a user's: mlir_async_rs as pip installed it in this venv
               (it must not come from the checkout); with --ours, linking
               the library of the package.
"""

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from catalyst import qjit  # noqa: E402

from programs import PROGRAMS  # noqa: E402


def switch_module(package):
    """mlir_async_rs: the installed package's (--package), or the checkout's."""
    if not package:
        sys.path.insert(0, str(ROOT / "python"))
    import mlir_async_rs

    where = Path(mlir_async_rs.__file__).resolve()
    if package and where.is_relative_to(ROOT / "python"):
        sys.exit(f"child: mlir_async_rs was imported from the checkout ({where}), not from the installed package")
    return mlir_async_rs


def exact(result):
    """The result as (dtype, shape, bytes in hex) per output: equal exactly
    when every bit is."""
    outputs = result if isinstance(result, tuple) else (result,)
    return [[str(np.asarray(v).dtype), list(np.shape(v)), np.asarray(v).tobytes().hex()] for v in outputs]


def readable(result):
    outputs = result if isinstance(result, tuple) else (result,)
    return [np.asarray(v).tolist() for v in outputs]


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
    route = parser.add_mutually_exclusive_group()
    route.add_argument("--lib", help="link against this runtime, switched by the checkout's mlir_async_rs "
                                     "(default: Catalyst's own runtime)")
    route.add_argument("--package", action="store_true",
                       help="use the installed mlir_async_rs package, not the checkout's")
    parser.add_argument("--ours", action="store_true",
                        help="with --package: link against the package's runtime, switched by the package")
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated names")
    parser.add_argument("--calls", type=int, default=0, help="calls per program (default: its own)")
    parser.add_argument("--switch-back", action="store_true",
                        help="with --lib or --ours: link the programs inside `with our_runtime()`, then "
                             "again after the block (as NAME@after)")
    args = parser.parse_args()
    out = {"programs": {}}
    names = args.programs.split(",")

    def run_all(suffix=""):
        for name in names:
            # Which program a crash happened in (run.py shows stderr's tail).
            print(f"child: {name}{suffix}", file=sys.stderr, flush=True)
            out["programs"][name + suffix] = run(name, args.calls)

    if args.ours and not args.package:
        parser.error("--ours goes with --package")
    switching = bool(args.lib or args.ours)
    if args.switch_back and not switching:
        parser.error("--switch-back needs --lib or --ours")
    mlir_async_rs = switch_module(args.package)
    if args.switch_back:
        with mlir_async_rs.our_runtime(args.lib):
            run_all()
        run_all("@after")
    else:
        if switching:
            mlir_async_rs.use(args.lib)
        run_all()
    out["mapped"] = [str(p) for p in mlir_async_rs.mapped_runtimes()]
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
