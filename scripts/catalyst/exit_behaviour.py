#!/usr/bin/env python3
"""What happens when a Catalyst user's Python process exits
(docs/catalyst.md, "At exit"): exit_program.py's cases, each in a fresh
process with the wheel's runtime and with ours (MLIR_ASYNC_RUNTIME_STATS=1,
so that ours prints its counters from its exit handler). Prints, per case
and runtime, the exit status, the time from the script's last line to the
process's end, and what the runtime said. Checks, with ours:
  return  exit status 0, the counters printed (the exit handler ran), no
          object reported alive;
  alive   exit status 0 and one line reporting the 2 tokens and 1 value
          (where the wheel's runtime fails its "all ref counted objects
          must be destroyed" assertion);
  recompile  as return, after Catalyst dlclosed the first program
          (our library stays mapped: it is linked -z nodelete);
  thread  the process ends within the timeout (no hang), as with the
          wheel's runtime and with the same status: a daemon thread
          inside a call at exit ends in std::terminate in Catalyst's
          Python wrapper, whatever the runtime.
Exit status 1 when a check fails.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = ["return", "alive", "recompile", "thread"]


def run(python, case, lib, timeout):
    cmd = [str(python), str(HERE / "exit_program.py"), "--case", case] + (["--lib", str(lib)] if lib else [])
    env = dict(os.environ, MLIR_ASYNC_RUNTIME_STATS="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    exiting_at = None
    try:
        for line in proc.stdout:
            if line.strip() == "exiting":
                exiting_at = time.perf_counter()
        _, err = proc.communicate(timeout=timeout)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        status = "hung"
    exit_s = time.perf_counter() - exiting_at if exiting_at else None
    said = [l.strip() for l in err.splitlines()
            if "mlir_async_runtime" in l or "Assertion" in l or "terminate called" in l]
    return {"status": status, "exit_s": exit_s, "said": said, "stderr": err}


def check(case, ours, cxx):
    """The problems with our runtime's outcome, [] when none."""
    problems = []
    said = " ".join(ours["said"])
    if case in ("return", "alive", "recompile"):
        if ours["status"] != 0:
            problems.append(f"exit status {ours['status']}, expected 0")
        if "counters since process start" not in said:
            problems.append("the exit handler printed no counters")
    if case in ("return", "recompile") and "still alive" in said:
        problems.append("objects reported alive")
    if case == "alive" and "still alive: 2 token(s), 1 value(s), 0 group(s)" not in said:
        problems.append("the 2 tokens and 1 value were not reported")
    if case == "thread":
        if ours["status"] == "hung":
            problems.append("the process did not end")
        elif ours["status"] != cxx["status"]:
            problems.append(f"exit status {ours['status']}, the wheel's runtime gives {cxx['status']}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", required=True, type=Path)
    parser.add_argument("--runtime", required=True, type=Path, help="our libmlir_async_runtime.so")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per process")
    args = parser.parse_args()
    python = args.venv / "bin" / "python"
    failed = 0
    for case in CASES:
        results = {}
        for who, lib in (("C++", None), ("ours", args.runtime.resolve())):
            print(f"exit-behaviour: {case} with {who}", file=sys.stderr, flush=True)
            r = results[who] = run(python, case, lib, args.timeout)
            exit_s = f"{r['exit_s']:.2f} s" if r["exit_s"] is not None else "-"
            said = "; ".join(l for l in r["said"] if "counters since" not in l) or "nothing"
            counters = ", counters printed at exit" if any("counters since" in l for l in r["said"]) else ""
            print(f"{case:<7} {who:<5} status {r['status']}, exit took {exit_s}{counters}; said: {said}")
        problems = check(case, results["ours"], results["C++"])
        for p in problems:
            print(f"FAIL {case} with ours: {p}")
            tail = results["ours"]["stderr"].strip().splitlines()[-5:]
            print("    " + "\n    ".join(tail))
        failed += bool(problems)
    print(f"exit-behaviour: {len(CASES) - failed} cases as expected, {failed} not")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
