# -*- Python -*-
"""lit configuration for the async MLIR corpus.

Run:   lit -sv mlir-tests                                   (our Rust runtime)
       lit -sv mlir-tests --param runtime=$LLVM_PREFIX/lib/libmlir_async_runtime.so
Params:
  runtime=PATH        runtime library under test; default
                      <repo>/target/release/libmlir_async_runtime.so (computed
                      relative to this file)
  runtime_kind=cxx|rust|floor  override the detection below (floor: the
                      single-thread yardstick of bench/floor, `make lit-floor`)
  llvm_prefix=PATH    LLVM/MLIR install (default: $LLVM_PREFIX, else Debian's
                      LLVM 19, lib/toolchain.py); its MLIR
                      version (from the name, .../llvm-N) picks the pipelines
                      of lib/pipelines.txt and the runner; an unpacked one
                      (target/compat/N/root/usr/lib/llvm-N) runs with
                      LD_LIBRARY_PATH set. The corpus is written for MLIR 19:
                      older versions run through `make compat` instead, which
                      rewrites it (lib/downport.py).
  fixed_lowering=1    RUN lines run async-parallel-for-fixed, our patched pass
                      (make lowering-fixes; docs/lowering-bugs.md), where they
                      say async-parallel-for{...}; %mlir_opt loads its plugin;
                      feature `fixed-lowering` (the programs of the pass's two
                      bugs are XFAIL without it)
  timeout=SECONDS     per-test time limit (default 300; only when the Python
                      module psutil is installed, which lit needs for it)

Features: `cxx-runtime` when the runtime path lies under the LLVM prefix (or
runtime_kind=cxx), `floor-runtime` with runtime_kind=floor, otherwise
`rust-runtime`; and `mlir-N`, the MLIR version (`make compat` sets the same
features). Tests the C++ runtime is known to
fail say `// XFAIL: cxx-runtime` with the reason; tests of behaviour only ours
has (MLIR_ASYNC_RUNTIME_WORKERS) say `// REQUIRES: rust-runtime`; a test
that hangs the C++ runtime (so it cannot XFAIL reliably) says
`// UNSUPPORTED: cxx-runtime`.

Substitutions (defined once, in lib/corpus.py, which the lowering script
shares): %mlir_opt %mlir_translate %mlir_cpu_runner FileCheck not
%mlir_c_runner_utils %mlir_runner_utils %mlir_async_runtime %cxx_runtime
%async_passes   the pass list of MLIR's async integration tests (no wrapper),
                plus what MLIR 19 needs on top, as defined once for every MLIR
                version in lib/pipelines.txt (print it with
                `python3 mlir-tests/lib/pipelines.py --bare --no-async-func`).
                Parallel-for tests prepend async-parallel-for{...} inside
                builtin.module(...).
%async_to_llvm  -pass-pipeline="builtin.module(%async_passes)"
%async_func_to_llvm   same, with async-func-to-async-runtime first (async.func)
%async_policy_passes  %async_passes with policy-based ref counting
%run_async      <runner> -e main -entry-point-result=void -O0
                -shared-libs=<c runner utils>,<runner utils>,<runtime>
                (runner: mlir-cpu-runner, or the version's name for it)
%corpus_py %python

Corpus convention (what `corpus.py lower`, i.e. `make corpus`, relies on):
every RUN line of every *.mlir file here has exactly three stages
    %mlir_opt %s <pipeline> | [env VAR=VAL ...] <runner> | FileCheck %s [--check-prefix=P]
Stage 1 is the lowering (mlir-opt only, reading %s); stage 2 the runner, whose
`-e` / `-entry-point-result=` and env prefix go to the manifest; stage 3 the
check. `make corpus` lowers each RUN line to target/corpus/<id>.ll (id = file
stem, or stem.N for the N-th RUN line of a file with several), and to
target/corpus/<id>.llvm.mlir the LLVM dialect it comes from (what the runners
take), and writes target/corpus/manifest.tsv with columns
    name ll check_file check_prefix entry entry_result env requires xfail
    unsupported source mlir pipeline
('-' = empty; pipeline: the RUN line's -pass-pipeline when stage 1 has no
other option, for jit-harness --pipeline). The .ll still holds LLVM coroutine intrinsics: run the
coroutine passes (e.g. opt -passes='default<O0>') before code generation, as
mlir-cpu-runner does. Parsing lives in lib/corpus.py; *.test files are not corpus
programs (they check the corpus itself: ABI coverage and exports).
"""
import os
import sys

import lit.formats

config.name = 'mlir-async-corpus'
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = ['.mlir', '.test']
# racy/: programs whose output depends on the order of unordered tasks, for
# the schedule explorer (docs/exploration.md): they fail by design under
# some schedules, so they are not passing tests.
config.excludes = ['lib', 'Inputs', 'racy', 'lit.cfg.py']
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(os.path.dirname(config.test_source_root),
                                     'target', 'lit-mlir-tests')

sys.path.insert(0, os.path.join(config.test_source_root, 'lib'))
import corpus  # noqa: E402
import rules  # noqa: E402
import toolchain  # noqa: E402

llvm_prefix = os.path.abspath(toolchain.llvm_prefix(lit_config.params.get('llvm_prefix')))
runtime = os.path.abspath(lit_config.params.get('runtime', corpus.DEFAULT_RUNTIME))
kind = lit_config.params.get('runtime_kind') or rules.runtime_kind(runtime, llvm_prefix)
if not os.path.exists(runtime):
    lit_config.fatal('runtime library under test not found: %s '
                     '(build it, or pass --param runtime=PATH)' % runtime)
fixed_lowering = lit_config.params.get('fixed_lowering') == '1'
# --param task_stacks=0: every program with task stacks off (a task that
# blocks blocks its thread; make lit-no-stacks, issue 25's opt-out).
if lit_config.params.get('task_stacks', '1') == '0':
    config.environment['MLIR_ASYNC_RUNTIME_TASK_STACKS'] = '0'
    lit_config.note('task stacks off (MLIR_ASYNC_RUNTIME_TASK_STACKS=0)')
# --param waiters_run_tasks=0: a thread waiting in an Await* outside the
# pool does not run queued tasks, every task runs on the pool (make
# lit-no-waiters, the opt-out; by default waiters run tasks).
if lit_config.params.get('waiters_run_tasks', '1') == '0':
    config.environment['MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS'] = '0'
    lit_config.note('waiters do not run tasks (MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=0)')
try:
    mlir = toolchain.mlir_version(llvm_prefix)
    # With the features of the opt-outs just set (rules.features' env: one
    # rule for lit and the scripts that run the corpus).
    config.available_features.update(
        rules.features(kind, mlir.number, fixed_lowering, env=config.environment))
    subs = corpus.substitutions(llvm_prefix, runtime, mlir.number, fixed_lowering)
except ValueError as e:
    lit_config.fatal(str(e))
lit_config.note('async runtime under test: %s (%s-runtime), MLIR %d at %s'
                % (runtime, kind, mlir.number, llvm_prefix))

if fixed_lowering:
    lit_config.note('async-parallel-for is async-parallel-for-fixed (%s)' % mlir.plugin())
for k, v in subs:
    config.substitutions.append((k, v))
config.substitutions.append(('%python', sys.executable))
if 'LD_LIBRARY_PATH' in toolchain.toolchain_env(llvm_prefix, {}):
    config.environment['LD_LIBRARY_PATH'] = \
        toolchain.toolchain_env(llvm_prefix, config.environment)['LD_LIBRARY_PATH']
# The scripts that tests run (scripts/*/test_*.py, lib/test_*.py) take the same prefix.
config.environment[toolchain.ENV_VAR] = llvm_prefix

# FileCheck / not / count resolve through PATH: put the toolchain's first.
config.environment['PATH'] = os.pathsep.join(
    [os.path.join(llvm_prefix, 'bin'), config.environment.get('PATH', '')])
try:
    import psutil  # noqa: F401  (lit's per-test timeout needs it)
    config.maxIndividualTestTime = int(lit_config.params.get('timeout', 300))
except ImportError:
    pass

# Never inherit a worker count from the caller: tests set it explicitly.
config.environment.pop('MLIR_ASYNC_RUNTIME_WORKERS', None)
