#!/usr/bin/env python3
"""Checks that the runners bind a program to the runtime whose init hook put
its functions into the engine's symbol map, not to whichever library with
those names the process loaded first (docs/symbol-binding.md).

For each MLIR version N (default: 19 and 22), the program
mlir-tests/Inputs/symbol-binding.mlir is lowered with N's pipeline, then

1. run under N's runner with both runtimes in one engine, in both orders:

     -shared-libs=<utils>,<C++ runtime>,<ours>   both init hooks fill the
     -shared-libs=<utils>,<ours>,<C++ runtime>   same map; the later one wins

   and once with ours alone;
2. (MLIR 17 and later, whose execution engine calls the init hooks) run by
   two engines in one process, one after the other, the first given the C++
   runtime and the second ours, and in the other order
   (scripts/corpus/two_engines.cpp, compiled against N's headers and libraries).

Which runtime ran shows twice: the program first prints the runtime's worker
count, with MLIR_ASYNC_RUNTIME_WORKERS=W set (ours says W, the C++ runtime
the machine's parallelism; W differs from it), and under the runner
MLIR_ASYNC_RUNTIME_STATS=1 makes ours print its counters at the destroy
hook (it ran iff it created tokens). Expected: in 1, ours when its hook came
last, the C++ runtime when its hook came last, ours alone; in 2, each
engine runs the runtime it was given. Before our hook filled the map, the
C++ runtime ran wherever it was loaded first.

Versions other than 19 are fetched like make compat (scripts/toolchain/fetch_mlir.sh
into target/compat/N, with --dev for the headers of 2). A version from PyPI
(MLIR 21) has no headers: 2 is left out; one with Python bindings only
(LLVM 24) has no runner: it is left out, and make python-engine-ci says how
its engines bind. Prints one line per
check and a verdict; exit status 1 on any failure.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(REPO, 'mlir-tests', 'lib'))
import corpus  # noqa: E402
import pipelines  # noqa: E402
import toolchain  # noqa: E402

PROGRAM = os.path.join(REPO, 'mlir-tests', 'Inputs', 'symbol-binding.mlir')
DRIVER = os.path.join(REPO, 'scripts', 'corpus', 'two_engines.cpp')
RESULT = ['42', '1']
# Our worker count in these runs: anything but the machine's parallelism,
# which the C++ runtime reports.
WORKERS = 7 if os.cpu_count() != 7 else 5


def fetch(version, cache, offline, dev):
    marker = os.path.join(cache, str(version), *(['dev'] if dev else []), 'packages.txt')
    if os.path.exists(marker):
        return
    if offline:
        sys.exit('symbol-binding: MLIR %d%s is not in %s' % (
            version, ' (headers)' if dev else '', cache))
    subprocess.run(['bash', os.path.join(REPO, 'scripts', 'toolchain', 'fetch_mlir.sh'), '--cache', cache]
                   + (['--dev'] if dev else []) + [str(version)], check=True)


def prefix_of(version, cache, offline):
    if version == pipelines.DEFAULT_VERSION:
        return toolchain.llvm_prefix()
    fetch(version, cache, offline, dev=False)
    return os.path.join(cache, str(version), 'root', 'usr', 'lib', 'llvm-%d' % version)


def one_library(pattern_dirs, names):
    for d in pattern_dirs:
        for name in names:
            found = sorted(glob.glob(os.path.join(d, name)))
            if found:
                return found[0]
    sys.exit('symbol-binding: none of %s in %s' % (names, pattern_dirs))


def build_driver(version, prefix, out, a):
    """scripts/corpus/two_engines.cpp compiled against MLIR `version`."""
    if version == pipelines.DEFAULT_VERSION:
        include = os.path.join(prefix, 'include')
    else:
        fetch(version, a.cache, a.offline, dev=True)
        include = os.path.join(a.cache, str(version), 'dev', 'usr', 'lib',
                               'llvm-%d' % version, 'include')
    lib = os.path.join(prefix, 'lib')
    multiarch = sorted(glob.glob(os.path.join(os.path.dirname(prefix), '*-linux-gnu*')))
    libs = [one_library([lib], ['libMLIR.so.%d*' % version]),
            one_library([lib], ['libMLIRExecutionEngineShared.so.%d*' % version]),
            one_library([lib] + multiarch, ['libLLVM.so.%d*' % version, 'libLLVM-%d.so' % version])]
    exe = os.path.join(out, 'two-engines')
    if not (os.path.exists(exe) and os.path.getmtime(exe) > os.path.getmtime(DRIVER)):
        rpath = ':'.join(os.path.dirname(os.path.abspath(l)) for l in libs)
        cmd = [a.cxx, '-std=c++17', '-O0', '-w', '-I' + include, DRIVER, '-o', exe + '.tmp',
               '-Wl,-rpath,' + rpath] + libs
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit('symbol-binding: building %s failed:\n%s\n%s' % (
                DRIVER, ' '.join(cmd), r.stderr[-3000:]))
        os.replace(exe + '.tmp', exe)
    return exe


def tokens_created(stderr):
    m = re.search(r'^\s*tokens created\s+(\d+)\s*$', stderr, re.M)
    return int(m.group(1)) if m else None


def run_version(version, a):
    """[(label, ok, detail)] for one MLIR version."""
    prefix = prefix_of(version, a.cache, a.offline)
    out = os.path.join(a.cache, str(version), 'symbol-binding')
    progs, failed = corpus.lower_all([PROGRAM], out, prefix, a.runtime, quiet=True,
                                     version=version)
    if failed or 'mlir' not in progs[0]:
        return [('lowering', False, progs[0].get('unsupported_reason') or 'did not lower')]
    p = progs[0]
    t = toolchain.tools(prefix, version)
    env = toolchain.toolchain_env(prefix)
    env['MLIR_ASYNC_RUNTIME_STATS'] = '1'
    env['MLIR_ASYNC_RUNTIME_WORKERS'] = str(WORKERS)
    ours, cxx = os.path.abspath(a.runtime), t['cxx_runtime']
    cases = [('c++ then ours', [cxx, ours], 'ours'),
             ('ours then c++', [ours, cxx], 'c++'),
             ('ours alone', [ours], 'ours')]
    results = []
    for label, libs, expected in cases:
        shared = ','.join([t['mlir_c_runner_utils'], t['mlir_runner_utils']] + libs)
        cmd = [t['mlir_cpu_runner'], p['mlir'], '-e', 'main', '-entry-point-result=void',
               '-O0', '-shared-libs=' + shared]
        r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=a.timeout)
        if expected == 'c++' and 'symbol already exists' in r.stderr:
            # A C++ runtime built with assertions (xtc's wheels, MLIR 21)
            # aborts in its init hook when ours filled the map before it.
            results.append(('%s: c++ refused' % label, True, 'its init hook asserts "symbol '
                            'already exists" (a build with assertions; ours filled the map first)'))
            continue
        created = tokens_created(r.stderr)
        ran = 'ours' if created else 'c++'
        lines = [l.strip() for l in r.stdout.splitlines() if l.strip()]
        problems = []
        if r.returncode != 0:
            problems.append('exit status %d: %s' % (r.returncode, corpus_first_line(r.stderr)))
        if lines[1:] != RESULT:
            problems.append('output %r, expected a worker count and %r' % (lines, RESULT))
        elif (lines[0] == str(WORKERS)) != (ran == 'ours'):
            problems.append('the worker count %s and the counters disagree on who ran' % lines[0])
        if created is None:
            problems.append('our runtime printed no counters (was its destroy hook called?)')
        elif ran != expected:
            problems.append('%s ran, expected %s' % (ran, expected))
        if 'symbol map was not filled' in r.stderr:
            problems.append(corpus_first_line(r.stderr[r.stderr.index('mlir_async_runtime'):]))
        results.append(('%s: %s ran' % (label, ran), not problems, '; '.join(problems)))
    source = pipelines.load()[version].toolchain
    if version >= 17 and source == 'debian':
        results += two_engines(version, prefix, p, t, env, out, a)
    elif version >= 17:
        results.append(('two engines: not built', True, 'its %s toolchain has no C++ headers; '
                         'make python-engine-ci runs many engines of MLIR 22 and 24' % source))
    return results


def two_engines(version, prefix, p, t, env, out, a):
    """Two engines in one process, the C++ runtime's then ours, and the
    other way round: each engine must run the runtime it was given."""
    exe = build_driver(version, prefix, out, a)
    ours, cxx = os.path.abspath(a.runtime), t['cxx_runtime']
    results = []
    for label, runtimes in (('engines c++, ours', (cxx, ours)), ('engines ours, c++', (ours, cxx))):
        cmd = [exe, p['mlir'], t['mlir_c_runner_utils']] + list(runtimes)
        r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=a.timeout)
        outputs = re.findall(r'^engine (\d): (\d+)\n(\S+)\n(\S+)$', r.stdout, re.M)
        problems = []
        if r.returncode != 0:
            problems.append('exit status %d: %s' % (r.returncode, corpus_first_line(r.stderr)))
        if len(outputs) != 2:
            problems.append('output %r' % r.stdout[-300:])
        ran = []
        for (n, workers, *result), runtime in zip(outputs, runtimes):
            if result != RESULT:
                problems.append('engine %s printed %r, expected %r' % (n, result, RESULT))
            got = 'ours' if workers == str(WORKERS) else 'c++'
            want = 'ours' if runtime == ours else 'c++'
            ran.append(got)
            if got != want:
                problems.append('engine %s ran %s, given %s' % (n, got, want))
        results.append(('%s: %s ran' % (label, ', '.join(ran) or '?'), not problems,
                        '; '.join(problems)))
    return results


def corpus_first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--versions', default='19,22',
                    help='comma-separated MLIR versions (default: %(default)s)')
    ap.add_argument('--runtime', default=corpus.DEFAULT_RUNTIME,
                    help='our runtime library (default: %(default)s)')
    ap.add_argument('--cache', default=os.path.join(REPO, 'target', 'compat'),
                    help='toolchain cache (default: %(default)s)')
    ap.add_argument('--offline', action='store_true', help='never fetch')
    ap.add_argument('--timeout', type=float, default=120, help='seconds per run')
    ap.add_argument('--cxx', default='g++', help='C++ compiler for scripts/corpus/two_engines.cpp')
    a = ap.parse_args()
    try:
        versions = [int(v) for v in a.versions.split(',') if v.strip()]
    except ValueError:
        ap.error('--versions takes numbers, e.g. 19,22')
    table = pipelines.load()
    unknown = [v for v in versions if v not in table]
    if unknown:
        ap.error('no MLIR %s in %s' % (unknown, pipelines.TABLE))
    if not os.path.exists(a.runtime):
        ap.error('no runtime library at %s (make build)' % a.runtime)
    failures = 0
    for version in versions:
        if not table[version].has_runner:
            print('MLIR %d: no runner (pipelines.txt: toolchain %s): its binding is checked by '
                  'make python-engine-ci' % (version, table[version].toolchain))
            continue
        for label, ok, detail in run_version(version, a):
            print('MLIR %d %-36s %s%s' % (version, label, 'ok' if ok else 'FAIL',
                                           ': ' + detail if detail else ''))
            failures += not ok
    print('symbol binding: %d failure(s)' % failures)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
