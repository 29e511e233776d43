#!/usr/bin/env python3
"""Builds the benchmark pack (make bench-pack): a folder that runs on any
x86-64 Linux with glibc >= 2.34 and python3, and measures the speed-up of
our runtime, MLIR's C++ runtime and libomp against the number of workers
(docs/scaling.md).

    pack_build.py --out DIR --runtime SO --floor SO [--catalyst-venv VENV]
                  [--llvm-prefix P] [--work DIR] [--max-mib 48]

What goes in:
  bin/        the programs, compiled ahead of time (scripts/corpus/aot_compile.sh,
              the AOT step of make aot-test) and linked with bench/pack/driver.c,
              which checks each run's answer:
                bench/*.mlir: fan-out, fib-spawn, nested-chain, value-pipeline,
                  blocking-awaits (bench.py's pipeline);
                bench/loops/*.mlir: the async lowering and the OpenMP one
                  (loops.py's recipes);
                MLIR 19's microbench-{scf,linalg}-async-parallel-for.mlir from
                  the source package in target/mlir-src: their own RUN line,
                  the same with async-dispatch=false, and the OpenMP pipeline;
                many-waiters (bench/pack/many_waiters.c, C over the ABI), with
                  16 and with 64 outside threads.
  runtimes/   ours/, cxx/ (Catalyst's libmlir_async_runtime.so.22.0git, LLVM
              linked in statically), floor/: each a libmlir_async_runtime.so;
              the async programs need that name, and run.py puts one of the
              three folders first on LD_LIBRARY_PATH (RUNPATH: ours).
  lib/        libomp.so.5, Catalyst's libmlir_c_runner_utils.so.22.0git (Debian's
              needs libLLVM) and what they need but glibc; lib/gcc/ the GCC
              runtime (libstdc++, libgcc_s), used only where glibc is new
              enough for it (run.py decides).
  run.sh, run.py, report.py, manifest.json, README.md.
Exits 1, saying why, when a program cannot be lowered, compiled or linked,
or the pack is over --max-mib.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(REPO / "mlir-tests" / "lib"))
sys.path.insert(0, str(HERE))
import bench  # noqa: E402  (bench/*.mlir: directives, pipeline)
import corpus  # noqa: E402  (RUN lines)
import loops  # noqa: E402  (bench/loops: recipes, lowering markers)
import lowering  # noqa: E402  (the one lowering recipe)
import pipelines  # noqa: E402
import toolchain  # noqa: E402

TASK_PROGRAMS = ["fan-out", "fib-spawn", "nested-chain", "value-pipeline",
                 "blocking-awaits"]
MICRO_DIR = "mlir/test/Integration/Dialect/Async/CPU"
MICRO = {"scf": "microbench-scf-async-parallel-for.mlir",
         "linalg": "microbench-linalg-async-parallel-for.mlir"}
# The sanity line of the microbenchmarks (their CHECK line, as
# bench/pack/driver.c's printMemrefF32 prints it).
MICRO_EXPECT = "[2, 2, 2, 2, 2, 2, 2, 2, 2, 2]"
# Libraries that come with glibc itself: never copied.
GLIBC = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2",
         "librt.so.1", "libutil.so.1", "ld-linux-x86-64.so.2",
         "linux-vdso.so.1"}
GCC_RUNTIME = {"libstdc++.so.6", "libgcc_s.so.1"}
GLIBC_MAX = (2, 34)
CATALYST_LIBS = ["libmlir_c_runner_utils.so.22.0git",
                 "libmlir_float16_utils.so.22.0git",
                 "libmlir_apfloat_wrappers.so.22.0git"]
CATALYST_RUNTIME = "libmlir_async_runtime.so.22.0git"
# many-waiters at the two ends of the shape: 16 and 64 outside threads
# (64 is OUTSIDE_ENTRIES, ours' cap on outside threads with a deque of
# their own), 16 tasks each a round, 100 rounds, 2000 steps a task.
MANY_WAITERS = {"many-waiters-16": ["16", "16", "100", "2000"],
                "many-waiters-64": ["64", "16", "100", "2000"]}


class BuildError(Exception):
    pass


def sh(cmd: list[str], what: str) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError(f"{what}: {' '.join(map(str, cmd))}\n{r.stderr.strip()[-3000:]}")
    return r.stdout


class Build:
    def __init__(self, a):
        self.a = a
        self.out: Path = a.out
        self.work: Path = a.work
        self.prefix = a.llvm_prefix
        self.version = pipelines.load()[pipelines.version_of_prefix(self.prefix)]
        self.objcopy = Path(self.prefix) / "bin" / "llvm-objcopy"
        self.rows: list[dict] = []

    # ---- libraries ----------------------------------------------------------
    def copy(self, src: Path, dst: Path, strip: bool = False) -> None:
        dst.parent.mkdir(parents=True, exist_ok=True)
        if strip:
            sh([str(self.objcopy), "--strip-debug", str(src), str(dst)], "strip")
        else:
            shutil.copy2(src, dst)
        dst.chmod(0o755)

    def libraries(self) -> None:
        site = sorted(self.a.catalyst_venv.glob("lib/python3*/site-packages/catalyst/lib"))
        if not site or not (site[0] / CATALYST_RUNTIME).exists():
            raise BuildError(f"no catalyst/lib/{CATALYST_RUNTIME} in {self.a.catalyst_venv} "
                             "(make setup makes the Catalyst venv)")
        cat = site[0]
        rt = self.out / "runtimes"
        self.copy(self.a.runtime, rt / "ours" / "libmlir_async_runtime.so", strip=True)
        self.copy(self.a.floor, rt / "floor" / "libmlir_async_runtime.so", strip=True)
        self.copy(cat / CATALYST_RUNTIME, rt / "cxx" / "libmlir_async_runtime.so")
        self.copy((Path(self.prefix) / "lib" / "libomp.so").resolve(), self.out / "lib" / "libomp.so.5")
        for name in CATALYST_LIBS:
            self.copy(cat / name, self.out / "lib" / name)

    def close_dependencies(self) -> None:
        """Copies into lib/ (lib/gcc/ for the GCC runtime) every library that
        an ELF file of the pack needs and ldd finds outside it, but glibc's."""
        for _ in range(4):
            missing = {}
            for f in self.elf_files():
                env = dict(os.environ, LD_LIBRARY_PATH=":".join(
                    str(d) for d in (self.out / "runtimes" / "ours", self.out / "lib",
                                     self.out / "lib" / "gcc")))
                r = subprocess.run(["ldd", str(f)], capture_output=True, text=True, env=env)
                for name, path in re.findall(r"^\s*(\S+) => (\S+)", r.stdout, re.M):
                    if path == "not":
                        raise BuildError(f"{f}: ldd finds no {name}")
                    if name not in GLIBC and not Path(path).resolve().is_relative_to(self.out.resolve()):
                        missing[name] = Path(path).resolve()
            if not missing:
                return
            for name, path in missing.items():
                sub = "lib/gcc" if name in GCC_RUNTIME else "lib"
                self.copy(path, self.out / sub / name)
        raise BuildError("library dependencies did not close in 4 rounds")

    def elf_files(self) -> list[Path]:
        return sorted(p for p in self.out.rglob("*") if p.is_file()
                      and p.read_bytes()[:4] == b"\x7fELF")

    def glibc_needed(self, files: list[Path]) -> tuple[int, int]:
        need = (2, 0)
        for f in files:
            text = sh(["objdump", "-T", str(f)], "objdump")
            for major, minor in re.findall(r"GLIBC_(\d+)\.(\d+)", text):
                need = max(need, (int(major), int(minor)))
        return need

    # ---- programs -------------------------------------------------------------
    def lower_check(self, kind: str, cmd: list[str] | None, src: Path, pipeline: str | None,
                    name: str) -> Path:
        ll = self.work / f"{name}.ll"
        mlir = self.work / f"{name}.llvm.mlir"
        try:
            if cmd is not None:
                lowering.lower(cmd, str(ll), str(mlir), self.prefix)
            else:
                lowering.lower_file(str(src), str(ll), pipeline, self.prefix, str(mlir))
        except lowering.LoweringError as e:
            raise BuildError(f"{name}: lowering failed: {e}")
        bad = loops.wrong_calls(kind, ll.read_text())
        if bad:
            raise BuildError(f"{name}: the {kind} lowering is not what it claims: {', '.join(bad)}")
        return ll

    def compile_link(self, name: str, ll: Path, entry: str, level: int, expect: str,
                     openmp: bool) -> str:
        obj = self.work / f"{name}.o"
        sh(["bash", str(REPO / "scripts/corpus/aot_compile.sh"), "--llvm-prefix", self.prefix,
            "-O", str(level), str(ll), str(obj), entry, "pack_entry"], f"{name}: aot_compile")
        driver = self.work / f"{name}.driver.o"
        sh([self.a.cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
            f"-DPACK_EXPECT={json.dumps(expect)}", "-c", str(REPO / "bench/pack/driver.c"),
            "-o", str(driver)], f"{name}: driver")
        return self.link(name, [str(driver), str(obj)], openmp)

    def link(self, name: str, inputs: list[str], openmp: bool) -> str:
        exe = self.out / "bin" / name
        exe.parent.mkdir(parents=True, exist_ok=True)
        lib = self.out / "lib"
        if openmp:
            runtime = [str(lib / "libomp.so.5")]
            rpath = "$ORIGIN/../lib"
        else:
            runtime = ["-L" + str(self.out / "runtimes" / "ours"), "-lmlir_async_runtime"]
            rpath = "$ORIGIN/../lib:$ORIGIN/../runtimes/ours"
        sh([self.a.cc, "-o", str(exe)] + inputs + runtime +
           [str(lib / CATALYST_LIBS[0]), "-Wl,-rpath-link," + str(lib),
            "-Wl,--enable-new-dtags,-rpath," + rpath, "-lpthread", "-lm"], f"{name}: link")
        return f"bin/{name}"

    def tasks(self) -> None:
        for name in TASK_PROGRAMS:
            w = bench.Workload(REPO / "bench" / f"{name}.mlir")
            ll = self.lower_check("async", None, w.path, bench.pipeline(w.pipeline, Path(self.prefix) / "bin"),
                                  f"{name}.async")
            exe = self.compile_link(name, ll, "main", opt_level(w.opt), str(w.expect), False)
            self.rows.append({"name": name, "kind": "tasks", "async": exe, "omp": None,
                              "source": f"bench/{name}.mlir", "args": []})

    def loop_kernels(self) -> None:
        for k in loops.select(argparse.Namespace(loops_dir=loops.LOOPS_DIR, no_loops=False), None)[0]:
            recipe = loops.recipes(Path(self.prefix) / "bin", k.pf_options)
            exes = {}
            for kind in ("async", "openmp"):
                ll = self.lower_check(kind, None, k.path, recipe[kind], f"{k.name}.{kind}")
                suffix = "" if kind == "async" else ".omp"
                exes[kind] = self.compile_link(k.name + suffix, ll, "main", opt_level(k.opt),
                                               str(k.expect), kind == "openmp")
            self.rows.append({"name": k.name, "kind": "loop", "async": exes["async"],
                              "omp": exes["openmp"], "source": f"bench/loops/{k.name}.mlir",
                              "args": []})

    def micro_sources(self) -> dict[str, Path]:
        tarballs = sorted((REPO / "target" / "mlir-src" / str(self.version.number)).glob("*.orig.tar.xz"))
        if not tarballs:
            raise BuildError(f"no MLIR {self.version.number} source package in "
                             f"target/mlir-src/{self.version.number} (make setup caches it)")
        dst = self.work / "mlir-src"
        files = {k: dst / MICRO_DIR / f for k, f in MICRO.items()}
        if not all(p.exists() for p in files.values()):
            dst.mkdir(parents=True, exist_ok=True)
            sh(["tar", "-xJf", str(tarballs[0]), "-C", str(dst), "--strip-components=1",
                "--wildcards"] + [f"*/{MICRO_DIR}/{f}" for f in MICRO.values()],
               "extracting MLIR's microbenchmarks")
        return files

    def micro(self) -> None:
        mlir_opt = toolchain.tools(self.prefix)["mlir_opt"]
        for short, path in self.micro_sources().items():
            runs = [r for r in corpus.run_lines(str(path)) if "async-parallel-for" in r]
            run = next(r for r in runs if "async-dispatch=false" not in r)
            stage1, runner = (shlex.split(s) for s in run.split("|")[:2])
            entry = runner[runner.index("-e") + 1]
            level = opt_level(next(t for t in runner if re.fullmatch(r"-O\d", t)))
            cmd = [mlir_opt if t == "mlir-opt" else str(path) if t == "%s" else t for t in stage1]
            # Dispatch off: the same RUN line with async-dispatch=false, as the
            # scf file's second RUN line has it.
            off = [t + "=async-dispatch=false" if t == "-async-parallel-for" else t for t in cmd]
            front = ("convert-linalg-to-parallel-loops"
                     if "-convert-linalg-to-parallel-loops" in cmd else None)
            omp_ll = self.lower_check("openmp", None, path, self.version.openmp_pipeline(front),
                                      f"micro-{short}.openmp")
            omp = self.compile_link(f"micro-{short}.omp", omp_ll, entry, level, MICRO_EXPECT, True)
            for suffix, c in (("", cmd), ("-nodispatch", off)):
                name = f"micro-{short}{suffix}"
                ll = self.lower_check("async", c, path, None, f"{name}.async")
                exe = self.compile_link(name, ll, entry, level, MICRO_EXPECT, False)
                self.rows.append({"name": name, "kind": "micro", "async": exe, "omp": omp,
                                  "source": f"{MICRO_DIR}/{path.name} (MLIR {self.version.number})",
                                  "lowering": "its RUN line" + (", async-dispatch=false" if suffix else ""),
                                  "args": []})

    def many_waiters(self) -> None:
        obj = self.work / "many_waiters.o"
        sh([self.a.cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
            "-I" + str(REPO / "runtime/include"), "-c", str(REPO / "bench/pack/many_waiters.c"),
            "-o", str(obj)], "many-waiters: compile")
        exe = self.link("many-waiters", [str(obj)], False)
        for name, args in MANY_WAITERS.items():
            # Not on the floor: it is a single-thread runtime, and many
            # threads calling it at once is outside what it supports.
            self.rows.append({"name": name, "kind": "waiters", "async": exe, "omp": None,
                              "floor": False, "source": "bench/pack/many_waiters.c",
                              "args": args})

    # ---- the whole pack ----------------------------------------------------------
    def build(self) -> None:
        if self.out.exists():
            shutil.rmtree(self.out)
        self.out.mkdir(parents=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.libraries()
        for step in (self.tasks, self.loop_kernels, self.micro, self.many_waiters):
            step()
            print(f"bench-pack: {len(self.rows)} program(s) built", file=sys.stderr)
        self.close_dependencies()
        gcc = sorted((self.out / "lib" / "gcc").glob("*"))
        need = self.glibc_needed([f for f in self.elf_files() if f not in gcc])
        if need > GLIBC_MAX:
            raise BuildError(f"the pack needs glibc {need[0]}.{need[1]}, above "
                             f"{GLIBC_MAX[0]}.{GLIBC_MAX[1]}")
        for src, dst in ((HERE / "pack_run.py", "run.py"), (HERE / "report.py", "report.py"),
                         (REPO / "bench/pack/run.sh", "run.sh"),
                         (REPO / "bench/pack/README.md", "README.md")):
            shutil.copy2(src, self.out / dst)
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        (self.out / "manifest.json").write_text(json.dumps({
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "commit": commit, "glibc_needed": list(need),
            "gcc_runtime_glibc": list(self.glibc_needed(gcc)) if gcc else None,
            "runtimes": {"ours": "runtimes/ours", "cxx": "runtimes/cxx",
                         "floor": "runtimes/floor"},
            "cxx_runtime": f"PennyLane Catalyst's {CATALYST_RUNTIME} (MLIR 22, LLVM linked in)",
            "programs": self.rows}, indent=1) + "\n")
        size = sum(p.stat().st_size for p in self.out.rglob("*") if p.is_file())
        if size > self.a.max_mib * 2**20:
            raise BuildError(f"the pack is {size / 2**20:.1f} MiB, over {self.a.max_mib} MiB")
        print(f"bench-pack: {self.out}: {len(self.rows)} programs, {size / 2**20:.1f} MiB, "
              f"needs glibc >= {need[0]}.{need[1]}", file=sys.stderr)


def opt_level(flag: str) -> int:
    """opt/llc level for a program's runner level: -O0 programs get 1, the
    level make aot-test compiles at (docs/aot.md); the others keep theirs."""
    return max(1, int(flag.lstrip("-O")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="the pack's folder (emptied first)")
    ap.add_argument("--work", type=Path, default=None, help="build files (default OUT-work)")
    ap.add_argument("--runtime", type=Path, required=True, help="our libmlir_async_runtime.so")
    ap.add_argument("--floor", type=Path, required=True, help="the floor runtime (make floor)")
    ap.add_argument("--catalyst-venv", type=Path, default=REPO / "target" / "catalyst-venv",
                    help="the Catalyst venv of make setup, whose wheel has the C++ runtime "
                    "(default target/catalyst-venv)")
    ap.add_argument("--llvm-prefix", default=toolchain.llvm_prefix())
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--max-mib", type=float, default=48)
    a = ap.parse_args(argv)
    a.work = a.work or a.out.with_name(a.out.name + "-work")
    for p in (a.runtime, a.floor):
        if not p.exists():
            print(f"bench-pack: {p} is missing (make build, make floor)", file=sys.stderr)
            return 2
    try:
        Build(a).build()
    except BuildError as e:
        print(f"bench-pack: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
