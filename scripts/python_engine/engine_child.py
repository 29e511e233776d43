"""The Python client of make python-engine-ci, one process: runs a plan of
corpus programs through one MLIR Python binding's ExecutionEngine, one
engine after the other, as a Python user would. Started by engine_test.py
with the venv's Python (target/python-engine-venv); not a command of its own.

For each engine of the plan, in order, in this one process:
  1. the program is parsed, its entry function gets `llvm.emit_c_interface`
     (so that ExecutionEngine.invoke finds `_mlir_ciface_<entry>`), and the
     bindings' own PassManager lowers it with the project's pipeline
     (mlir-tests/lib/pipelines.txt, the row of the bindings' LLVM version);
  2. ExecutionEngine(module, opt_level, shared_libs=[runtime, runner utils]);
     its init hook runs when the engine loads the libraries;
     initialize() (init() in LLVM 22) runs the global constructors where the
     bindings have it (LLVM 22 and later run them lazily without it);
  3. invoke(entry), with file descriptor 1 (and 2, where the RUN line
     says 2>&1) on the engine's output file:
     the JIT'd code prints through C stdio (libmlir_c_runner_utils), so C's
     stdout is flushed before the descriptor is put back;
  4. the engine is dropped (its destroy hook, __mlir_execution_engine_destroy,
     runs then: the runtime drains and joins its threads), and the next
     engine starts.
A line per engine goes to the status file, flushed at once, so that a
process that dies (the C++ runtime) leaves what it had done:
  `engine N NAME ok SECONDS` or `engine N NAME error MESSAGE`.
With "lower_only" in the plan (make compat's lowering-only column, LLVM
24), step 1 alone, and the line says how many calls of each runtime
function the lowered program makes, and how many async.execute ops
canonicalize alone erases from it:
  `lowered N NAME ok {"calls": {"mlirAsyncRuntimeExecute": 3, ...}, "erased": 0}`.

Usage (argv): engine_child.py PLAN.json STATUS OUT_DIR
PLAN.json: {"package": "mlir" | "torch_mlir", "opt_level": N,
            "shared_libs": [...], "engines": [{"name", "mlir", "pipeline",
            "entry", "env": ["K=V", ...], "stderr_checked": bool,
            optional "shared_libs"}, ...]}
(a job's own shared_libs replace the plan's for its engine). With
"python_path" (a directory where the mlir-async-rs wheel is unpacked), the
name "@mlir_async_rs" in shared_libs is mlir_async_rs.library_path(),
called for each engine as a user would; its warnings go to stderr.
"""
import ctypes
import gc
import importlib
import json
import os
import re
import sys
import time
import warnings

LIBC = ctypes.CDLL(None)


def flush_c_stdout():
    LIBC.fflush(None)


class OutputTo:
    """File descriptor 1 (C's and Python's stdout), and 2 too when
    `stderr` (a RUN line's `2>&1`), on `path` inside the block."""

    def __init__(self, path, stderr):
        self.path = path
        self.fds = (1, 2) if stderr else (1,)

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        flush_c_stdout()
        self.saved = [os.dup(fd) for fd in self.fds]
        out = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for fd in self.fds:
            os.dup2(out, fd)
        os.close(out)

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        flush_c_stdout()
        for fd, saved in zip(self.fds, self.saved):
            os.dup2(saved, fd)
            os.close(saved)


class Env:
    """The program's environment variables (its RUN line's `env K=V`) set
    inside the block: the runtime reads them when it starts, which is at
    the engine's first call after the previous engine's destroy."""

    def __init__(self, pairs):
        self.pairs = [kv.split('=', 1) for kv in pairs]

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k, _ in self.pairs}
        for k, v in self.pairs:
            os.environ[k] = v

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def lower(ir, passmanager, text, pipeline, entry):
    """The program parsed, its entry marked llvm.emit_c_interface, lowered
    by the bindings' PassManager."""
    module = ir.Module.parse(text)
    for op in module.body.operations:
        if (op.operation.name == 'func.func'
                and ir.StringAttr(op.attributes['sym_name']).value == entry):
            op.attributes['llvm.emit_c_interface'] = ir.UnitAttr.get()
            break
    else:
        raise ValueError('no func.func @%s' % entry)
    pm = passmanager.PassManager.parse(pipeline)
    pm.run(module.operation)
    return module


def runtime_calls(module):
    """{runtime function: number of llvm.call sites} of a lowered module."""
    counts = {}
    for name in re.findall(r'llvm\.call @(mlirAsyncRuntim\w+)', str(module)):
        counts[name] = counts.get(name, 0) + 1
    return counts


def shared_libs(plan, job):
    """The engine's libraries: the job's or the plan's, "@mlir_async_rs"
    being the wheel's library_path()."""
    libs = job.get('shared_libs', plan['shared_libs'])
    if '@mlir_async_rs' in libs:
        import mlir_async_rs
        libs = [str(mlir_async_rs.library_path()) if l == '@mlir_async_rs' else l for l in libs]
    return libs


def erased_executes(ir, passmanager, text):
    """How many async.execute ops canonicalize erases from the program (from
    LLVM 20, async.execute has RecursiveMemoryEffects: an unused execute
    whose body has no side effect goes)."""
    module = ir.Module.parse(text)
    before = str(module).count('async.execute')
    passmanager.PassManager.parse('builtin.module(canonicalize)').run(module.operation)
    return before - str(module).count('async.execute')


def run_engine(mods, plan, job, out):
    ir, passmanager, execution_engine = mods
    with open(job['mlir']) as f:
        text = f.read()
    module = lower(ir, passmanager, text, job['pipeline'], job['entry'])
    libs = shared_libs(plan, job)
    with Env(job['env']), OutputTo(out, job.get('stderr_checked', False)):
        engine = execution_engine.ExecutionEngine(
            module, opt_level=plan['opt_level'], shared_libs=libs)
        init = getattr(engine, 'initialize', None) or getattr(engine, 'init', None)
        if init is not None:
            init()
        del init                      # a bound method holds the engine
        engine.invoke(job['entry'])
        del engine                    # the destroy hook runs here
        gc.collect()


def main(argv):
    plan_path, status_path, out_dir = argv
    with open(plan_path) as f:
        plan = json.load(f)
    pkg = plan['package']
    if plan.get('python_path'):
        sys.path.insert(0, plan['python_path'])
        warnings.formatwarning = lambda message, *_: '%s\n' % message
    mods = tuple(importlib.import_module('%s.%s' % (pkg, m))
                 for m in ('ir', 'passmanager')
                 + (() if plan.get('lower_only') else ('execution_engine',)))
    status = open(status_path, 'w', buffering=1)
    with mods[0].Context():
        for n, job in enumerate(plan['engines'], 1):
            if plan.get('lower_only'):
                try:
                    with open(job['mlir']) as f:
                        text = f.read()
                    module = lower(mods[0], mods[1], text, job['pipeline'], job['entry'])
                    result = {'calls': runtime_calls(module),
                              'erased': erased_executes(mods[0], mods[1], text)}
                    status.write('lowered %d %s ok %s\n' % (n, job['name'], json.dumps(result)))
                except Exception as e:  # noqa: BLE001 (the next program is lowered)
                    msg = ' '.join(str(e).split())[:300]
                    status.write('lowered %d %s error %s\n' % (n, job['name'], msg))
                continue
            out = os.path.join(out_dir, '%03d-%s.out' % (n, job['name']))
            start = time.monotonic()
            try:
                run_engine(mods, plan, job, out)
            except Exception as e:  # one engine's failure is reported, the next runs
                msg = ' '.join(str(e).split())[:300]
                status.write('engine %d %s error %s: %s\n' % (n, job['name'], type(e).__name__, msg))
                continue
            status.write('engine %d %s ok %.2f\n' % (n, job['name'], time.monotonic() - start))
    status.close()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
