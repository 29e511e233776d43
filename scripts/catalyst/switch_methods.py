#!/usr/bin/env python3
"""Which ways of switching a Catalyst program to our runtime work
(docs/catalyst.md, "Switching"): each method runs child.py (one program,
two calls) in a fresh process, with the dynamic linker's binding log on
(LD_DEBUG=bindings, a glibc feature), and reads which library the compiled
program's calls to the async runtime were bound to. Prints one line per
method; exit status 1 when a method does not do what docs/catalyst.md says
it does (the expectation is part of the table below).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAM = "in-for-loop"
SYMBOL = "mlirAsyncRuntimeExecute"


def methods(runtime, scratch):
    """(name, extra child arguments, extra environment, the library the
    program must be bound to: 'ours' or 'wheel'; '@after' names the program
    child.py --switch-back linked after the `with` block)."""
    # LD_LIBRARY_PATH needs a file of the soname the program asks for.
    alias_dir = scratch / "alias"
    alias_dir.mkdir()
    (alias_dir / "libmlir_async_runtime.so.22.0git").symlink_to(runtime)
    return [
        ("none (the wheel's runtime)", [], {}, "wheel"),
        ("CATALYST_CC=scripts/catalyst/catalyst-cc", [],
         {"CATALYST_CC": str(HERE / "catalyst-cc"), "MLIR_ASYNC_RS_LIB": str(runtime)}, "ours"),
        ("mlir_async_rs.use() (the checkout's python/)", ["--lib", str(runtime)], {}, "ours"),
        ("mlir_async_rs: inside `with our_runtime()`", ["--lib", str(runtime), "--switch-back"], {}, "ours"),
        ("mlir_async_rs: after the `with` block", ["--lib", str(runtime), "--switch-back"], {}, "wheel@after"),
        ("LD_PRELOAD=libmlir_async_runtime.so", [], {"LD_PRELOAD": str(runtime)}, "ours"),
        ("LD_LIBRARY_PATH=dir/libmlir_async_runtime.so.22.0git", [],
         {"LD_LIBRARY_PATH": str(alias_dir)}, "wheel"),
    ]


def bound_to(log_dir, workspace, program):
    """The libraries the compiled program's SYMBOL was bound to (qjit names
    the program's file after the Python function: in-for-loop's is
    in_for_loop.so, in its workspace)."""
    program = program.replace("-", "_")
    pattern = re.compile(rf"binding file {re.escape(workspace)}/{program}\.so \[0\] to (\S+) \[0\]: "
                         rf"normal symbol `{SYMBOL}'")
    found = set()
    for log in log_dir.iterdir():
        for m in pattern.finditer(log.read_text(errors="replace")):
            found.add(str(Path(m.group(1)).resolve()))
    return sorted(found)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", required=True, type=Path)
    parser.add_argument("--runtime", required=True, type=Path, help="our libmlir_async_runtime.so")
    args = parser.parse_args()
    runtime = args.runtime.resolve()
    wheel = next((args.venv / "lib").glob("python3*/site-packages/catalyst/lib")) / "libmlir_async_runtime.so.22.0git"
    libs = {"ours": str(runtime), "wheel": str(wheel.resolve())}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="catalyst-switch-") as tmp:
        scratch = Path(tmp)
        for i, (name, child_args, env_extra, want) in enumerate(methods(runtime, scratch)):
            log_dir = scratch / f"log{i}"
            log_dir.mkdir()
            env = dict(os.environ, LD_DEBUG="bindings", LD_DEBUG_OUTPUT=str(log_dir / "bind"), **env_extra)
            if "CATALYST_CC" not in env_extra:
                env.pop("CATALYST_CC", None)
            proc = subprocess.run([str(args.venv / "bin" / "python"),
                                   str(HERE / "child.py"), "--programs", PROGRAM, "--calls", "2", *child_args],
                                  env=env, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                print(f"FAIL {name}: exit status {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
                failed += 1
                continue
            data = json.loads(proc.stdout.strip().splitlines()[-1])
            mapped = data["mapped"]
            want, _, suffix = want.partition("@")
            program = data["programs"][PROGRAM + ("@" + suffix if suffix else "")]
            bound = bound_to(log_dir, program["workspace"], PROGRAM)
            who = [k for k, v in libs.items() if [v] == bound]
            verdict = "PASS" if who == [want] else "FAIL"
            failed += verdict == "FAIL"
            mapped_names = " + ".join(k for k, v in libs.items() if v in mapped)
            label = {"ours": "ours", "wheel": "the wheel's"}
            print(f"{verdict} {name}: program bound to {label[who[0]] if who else bound} "
                  f"(expected {label[want]}); libraries mapped: {mapped_names}")
    print(f"switch-methods: {i + 1 - failed} as documented, {failed} not")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
