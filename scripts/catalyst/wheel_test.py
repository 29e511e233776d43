#!/usr/bin/env python3
"""The mlir-async-rs wheel as a user would use it (make catalyst-ci,
docs/catalyst.md): installs the wheel of make wheel into a new venv beside
pennylane-catalyst, with pip, offline, then

  1. the package: its version is the runtime crate's, `--path` names the
     library inside the venv, the link command is executable, and the
     module is imported from the venv, not from this checkout; with --lit,
     a few corpus programs run on the library of --path under
     mlir-cpu-runner (lit, FileCheck);
  2. the switch's unit tests (python/tests) on the installed package;
     `python -m mlir_async_rs --check`: Catalyst's own runtime with nothing
     switched, ours with `--use`;
  3. bad input, one line each: a pennylane-catalyst version whose link
     command the switch does not know; the library missing from the
     package; Catalyst's C++ runtime in the global symbol scope (refused,
     and a program would indeed bind to it); Catalyst's C++ runtime loaded
     by a program compiled before the switch (a warning: that program
     stays on it, the next one is ours);
  4. the five programs of programs.py (run.py --package: every process
     imports the installed package, no CATALYST_CC set by hand, results
     bit-identical to Catalyst's runtime's);
  5. `pip uninstall`: nothing of the package is left, and a program
     compiled then is on Catalyst's own runtime.

The new venv is a hard-link clone of the venv make setup built
(target/catalyst-venv: pennylane-catalyst and the packages it needs), made
in about a second with no disk space and no download, a copy where hard
links cannot be made; pip installs the wheel into it alone, and the
clone's files that pip writes or removes are its own. (A venv layered on
top of target/catalyst-venv by a .pth file cannot compile: Catalyst looks
for its compiler driver, bin/catalyst, in the running venv's scripts
directory.) Nothing reaches the network (pip --isolated --no-index). Prints one line per check and
"wheel-test: N passed, M failed"; exit status 1 when a check fails.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CATALYST_RUNTIME = "libmlir_async_runtime.so.22.0git"


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, ok, what, detail=""):
        print(f"{'PASS' if ok else 'FAIL'} {what}" + ("" if ok or not detail else f": {detail}"), flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


def user_env():
    """The environment of a user who set nothing by hand."""
    env = dict(os.environ)
    for name in ("CATALYST_CC", "CATALYST_REAL_CC", "MLIR_ASYNC_RS_LIB", "PYTHONPATH", "LD_PRELOAD"):
        env.pop(name, None)
    return env


def run(cmd, env=None, **kw):
    # From a directory outside the checkout, so that nothing of it is on sys.path.
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          env=env or user_env(), cwd=tempfile.gettempdir(), **kw)


def one_line(stderr):
    lines = [l for l in stderr.splitlines() if l.strip()]
    return lines[0] if len(lines) == 1 else None


def site_packages(python):
    return Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())


def make_venv(base, venv, wheel, check):
    """The new venv, a clone of `base`, with the wheel installed by pip."""
    shutil.rmtree(venv, ignore_errors=True)
    start = time.perf_counter()
    try:
        shutil.copytree(base, venv, symlinks=True, copy_function=os.link)
    except OSError:  # another file system
        shutil.rmtree(venv, ignore_errors=True)
        shutil.copytree(base, venv, symlinks=True)
    (venv / ".requirements.sha256").unlink(missing_ok=True)  # not make setup's venv
    python = venv / "bin" / "python"
    made = time.perf_counter()
    proc = run([python, "-m", "pip", "--isolated", "install", "--disable-pip-version-check", "--no-index",
                "--no-deps", wheel])
    installed = time.perf_counter()
    check(proc.returncode == 0, f"pip install {wheel.name} into a new venv (clone {made - start:.1f} s, "
                                f"install {installed - made:.1f} s)", proc.stderr.strip()[-500:])
    return python


def check_package(python, check):
    crate = tomllib.loads((ROOT / "runtime" / "Cargo.toml").read_text())["package"]["version"]
    version = run([python, "-m", "mlir_async_rs", "--version"]).stdout.strip()
    check(version == crate, f"--version is the runtime crate's ({version})", f"crate {crate}")
    where = run([python, "-c", "import mlir_async_rs; print(mlir_async_rs.__file__)"]).stdout.strip()
    site = site_packages(python)
    check(where.startswith(str(site)) and not Path(where).is_relative_to(ROOT / "python"),
          "mlir_async_rs is imported from the venv's site-packages", where)
    proc = run([python, "-m", "mlir_async_rs", "--path"])
    library = Path(proc.stdout.strip())
    check(proc.returncode == 0 and library.is_file() and library.parent == site / "mlir_async_rs"
          and library.name == "libmlir_async_runtime.so", f"--path: {library}", proc.stderr.strip())
    link = site / "mlir_async_rs" / "catalyst-cc"
    check(os.access(link, os.X_OK), "the link command catalyst-cc is installed executable", str(link))
    return library


LIT_PROGRAMS = "groups|nested-chain.mlir|async-func|parallel-for-1d"


def check_lit(lit, library, check):
    """The corpus programs of LIT_PROGRAMS on the wheel's library."""
    proc = subprocess.run(f"{lit} --param runtime={library} --filter '{LIT_PROGRAMS}'", shell=True,
                          capture_output=True, text=True, cwd=ROOT)
    passed = re.search(r"Passed\s*:\s*(\d+)", proc.stdout)
    check(proc.returncode == 0 and passed is not None and int(passed.group(1)) >= 4,
          f"{passed.group(1) if passed else 'no'} corpus programs pass on the library of --path "
          f"(lit --filter '{LIT_PROGRAMS}')", (proc.stdout + proc.stderr)[-800:])


def check_switch(python, library, check):
    proc = run([python, "-m", "mlir_async_rs", "--check"])
    check(proc.returncode == 0 and "runtime: catalyst" in proc.stdout,
          "--check with nothing switched: Catalyst's own runtime", proc.stdout + proc.stderr[-300:])
    proc = run([python, "-m", "mlir_async_rs", "--check", "--use"])
    check(proc.returncode == 0 and "runtime: ours" in proc.stdout and f"library: {library}" in proc.stdout,
          "--check --use: ours, the package's library", proc.stdout + proc.stderr[-300:])


def check_errors(python, library, check, scratch):
    # A pennylane-catalyst of another version: its metadata first on sys.path.
    fake = scratch / "fake-catalyst"
    info = fake / "pennylane_catalyst-0.99.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pennylane-catalyst\nVersion: 0.99.0\n")
    proc = run([python, "-m", "mlir_async_rs", "--check", "--use"], env=dict(user_env(), PYTHONPATH=str(fake)))
    line = one_line(proc.stderr)
    check(proc.returncode == 1 and line is not None and "pennylane-catalyst 0.99.0" in line
          and "does not know the link command" in line and not proc.stdout,
          f"an unknown Catalyst version: one line, exit 1 ({line})", proc.stderr)

    # The library missing from the package.
    moved = library.with_name(library.name + ".moved")
    library.rename(moved)
    try:
        for args in (["--path"], ["--check", "--use"]):
            proc = run([python, "-m", "mlir_async_rs", *args])
            line = one_line(proc.stderr)
            check(proc.returncode == 1 and line is not None and "missing from the package" in line,
                  f"the library missing, {' '.join(args)}: one line, exit 1 ({line})", proc.stderr)
    finally:
        moved.rename(library)

    # Catalyst's C++ runtime in the global scope (as with LD_PRELOAD or
    # RTLD_GLOBAL): refused, and true: a program linked against ours by
    # hand still binds to it.
    load = ("import ctypes, importlib.util, os, pathlib, sys; "
            "lib = pathlib.Path(importlib.util.find_spec('catalyst').origin).parent / 'lib' / sys.argv[1]; "
            "ctypes.CDLL(str(lib), mode=os.RTLD_GLOBAL | os.RTLD_NOW); "
            "from mlir_async_rs.__main__ import main; sys.exit(main(sys.argv[2:]))")
    proc = run([python, "-c", load, CATALYST_RUNTIME, "--check", "--use"])
    line = one_line(proc.stderr)
    check(proc.returncode == 1 and line is not None and "global symbol scope" in line,
          f"Catalyst's runtime in the global scope: refused in one line, exit 1 ({line})", proc.stderr[-500:])
    link = library.parent / "catalyst-cc"
    proc = run([python, "-c", load, CATALYST_RUNTIME, "--check"],
               env=dict(user_env(), CATALYST_CC=str(link), MLIR_ASYNC_RS_LIB=str(library)))
    check(proc.returncode == 0 and "runtime: catalyst" in proc.stdout,
          "... and a program linked against ours there does bind to Catalyst's", proc.stdout + proc.stderr[-300:])

    # Catalyst's runtime loaded by a program compiled before the switch.
    before = ("import sys, mlir_async_rs; from mlir_async_rs.__main__ import main; "
              "main(['--check']); sys.exit(main(['--check', '--use']))")
    proc = run([python, "-c", before])
    reports = proc.stdout.split("runtime: ")[1:]
    line = one_line(proc.stderr)
    check(proc.returncode == 0 and len(reports) == 2 and reports[0].startswith("catalyst")
          and reports[1].startswith("ours") and line is not None and "already loaded" in line
          and "stay on it" in line,
          f"Catalyst's runtime loaded before the switch: one warning line, the next program is ours ({line})",
          proc.stdout + proc.stderr[-500:])


def check_uninstall(python, check):
    site = site_packages(python)
    proc = run([python, "-m", "pip", "--isolated", "uninstall", "--disable-pip-version-check", "-y", "mlir-async-rs"])
    check(proc.returncode == 0, "pip uninstall -y mlir-async-rs", proc.stderr[-300:])
    left = [p.name for p in site.iterdir() if p.name.lower().startswith("mlir_async_rs")]
    check(not left, "nothing of the package is left in site-packages", " ".join(left))
    proc = run([python, "-c", "import mlir_async_rs"])
    check(proc.returncode != 0 and "No module named 'mlir_async_rs'" in proc.stderr,
          "import mlir_async_rs fails after the uninstall", proc.stderr[-300:])
    # A program compiled now (checkout's child.py, nothing switched).
    proc = run([python, HERE / "child.py", "--programs", "in-for-loop", "--calls", "2"])
    mapped = []
    if proc.returncode == 0:
        mapped = json.loads(proc.stdout.strip().splitlines()[-1])["mapped"]
    check(len(mapped) == 1 and Path(mapped[0]).name == CATALYST_RUNTIME and "/catalyst/lib/" in mapped[0],
          "after the uninstall, a program runs on Catalyst's own runtime", f"mapped {mapped}; {proc.stderr[-300:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, type=Path, help="the venv with pennylane-catalyst (make setup's)")
    parser.add_argument("--wheels", required=True, type=Path, help="where make wheel put the wheel")
    parser.add_argument("--venv", required=True, type=Path, help="the new venv to make (replaced)")
    parser.add_argument("--runs", type=int, default=3, help="rounds of the five programs (run.py)")
    parser.add_argument("--run-args", default="", help="more arguments for run.py")
    parser.add_argument("--lit", help="the corpus's lit command line (make's LIT_CORPUS), to run a few "
                                      "programs on the installed library")
    args = parser.parse_args()
    wheels = sorted(args.wheels.glob("mlir_async_rs-*.whl"))
    if len(wheels) != 1:
        parser.error(f"expected one mlir_async_rs-*.whl in {args.wheels}, found {len(wheels)}: run make wheel")
    if not (args.base / "bin" / "python").exists():
        parser.error(f"{args.base} has no Python: run make setup")
    wheel = wheels[0]
    m = re.match(r"mlir_async_rs-([^-]+)-py3-none-(manylinux_\d+_\d+_x86_64)\.whl$", wheel.name)
    check = Checks()
    check(m is not None, f"the wheel is tagged py3-none-manylinux ({wheel.name})")

    start = time.perf_counter()
    python = make_venv(args.base.resolve(), args.venv.absolute(), wheel.resolve(), check)
    library = check_package(python, check)
    if args.lit:
        check_lit(args.lit, library, check)
    proc = run([python, "-m", "unittest", "discover", "-s", ROOT / "python" / "tests"])
    ran = re.search(r"^Ran (\d+) tests?", proc.stderr, re.M)
    check(proc.returncode == 0 and ran is not None and proc.stderr.rstrip().endswith("OK"),
          f"the switch's unit tests on the installed package (python/tests: {ran.group(1) if ran else 'no'} tests)",
          proc.stderr[-800:])
    check_switch(python, library, check)
    with tempfile.TemporaryDirectory(prefix="wheel-test-") as tmp:
        check_errors(python, library, check, Path(tmp))
    checked = time.perf_counter()
    print(f"wheel-test: the programs through the installed package, {args.runs} rounds", file=sys.stderr, flush=True)
    proc = subprocess.run([sys.executable, HERE / "run.py", "--venv", args.venv, "--package",
                           "--runs", str(args.runs), *args.run_args.split()], env=user_env())
    check(proc.returncode == 0, "the five programs through the installed package: results identical to "
                                "Catalyst's runtime's, each process on the runtime it should be")
    programs = time.perf_counter()
    check_uninstall(python, check)
    end = time.perf_counter()
    print(f"wheel-test: {end - start:.0f} s (checks {checked - start:.0f} s, programs {programs - checked:.0f} s, "
          f"uninstall {end - programs:.0f} s)", file=sys.stderr)
    print(f"wheel-test: {check.passed} passed, {check.failed} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
