#!/usr/bin/env python3
"""Checks that the runners bind a program to the runtime whose init hook put
its functions into the engine's symbol map, not to whichever library with
those names the process loaded first (docs/symbol-binding.md).

For each MLIR version N (default: 19 and 22), the program
mlir-tests/Inputs/symbol-binding.mlir is lowered with N's pipeline and run
under N's runner with both runtimes in one engine, in both orders:

  -shared-libs=<utils>,<C++ runtime>,<ours>   both init hooks fill the same
  -shared-libs=<utils>,<ours>,<C++ runtime>   map; the later one wins

and once with ours alone. MLIR_ASYNC_RUNTIME_STATS=1 makes our runtime print
its counters at the destroy hook: it ran the program iff it created tokens.
Expected: ours runs when its hook came last (before our hook filled the map,
the C++ runtime, loaded first, ran in both orders), the C++ runtime when its
hook came last, ours when alone; the program's output is right every time.

Versions other than 19 are fetched like make compat (scripts/compat-fetch.sh
into target/compat/N). Prints one line per run and a verdict; exit status 1
on any failure.
"""
import argparse
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, 'mlir-tests', 'lib'))
import corpus  # noqa: E402
import pipelines  # noqa: E402

PROGRAM = os.path.join(REPO, 'mlir-tests', 'Inputs', 'symbol-binding.mlir')
EXPECTED_OUTPUT = ['42', '1']


def prefix_of(version, cache, offline):
    if version == pipelines.DEFAULT_VERSION:
        return corpus.DEFAULT_LLVM_PREFIX
    prefix = os.path.join(cache, str(version), 'root', 'usr', 'lib', 'llvm-%d' % version)
    if not os.path.exists(os.path.join(cache, str(version), 'packages.txt')):
        if offline:
            sys.exit('symbol-binding: MLIR %d is not in %s' % (version, cache))
        subprocess.run(['bash', os.path.join(REPO, 'scripts', 'compat-fetch.sh'),
                        '--cache', cache, str(version)], check=True)
    return prefix


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
    t = corpus.tools(prefix, version)
    env = corpus.toolchain_env(prefix)
    env['MLIR_ASYNC_RUNTIME_STATS'] = '1'
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
        created = tokens_created(r.stderr)
        ran = 'ours' if created else 'c++'
        lines = [l.strip() for l in r.stdout.splitlines() if l.strip()]
        problems = []
        if r.returncode != 0:
            problems.append('exit status %d: %s' % (r.returncode, corpus_first_line(r.stderr)))
        if lines != EXPECTED_OUTPUT:
            problems.append('output %r, expected %r' % (lines, EXPECTED_OUTPUT))
        if created is None:
            problems.append('our runtime printed no counters (was its destroy hook called?)')
        elif ran != expected:
            problems.append('%s ran, expected %s' % (ran, expected))
        if 'symbol map was not filled' in r.stderr:
            problems.append(corpus_first_line(r.stderr[r.stderr.index('mlir_async_runtime'):]))
        results.append(('%s: %s ran' % (label, ran), not problems, '; '.join(problems)))
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
        for label, ok, detail in run_version(version, a):
            print('MLIR %d %-28s %s%s' % (version, label, 'ok' if ok else 'FAIL',
                                           ': ' + detail if detail else ''))
            failures += not ok
    print('symbol binding: %d failure(s)' % failures)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
