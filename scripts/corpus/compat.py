#!/usr/bin/env python3
"""Runs the async MLIR corpus under the runners of several MLIR versions,
against each version's own C++ async runtime and against ours, and prints a
matrix: program x version x runtime (make compat; make test runs MLIR 22).

For each MLIR version N of mlir-tests/lib/pipelines.txt (or --versions):
  1. the toolchain: MLIR 19 is the installed one ($LLVM_PREFIX); every
     other version is fetched, never installed, by scripts/toolchain/fetch_mlir.sh
     into target/compat/N (cached: reruns need no network);
  2. the corpus is lowered with that version's mlir-opt by the corpus's one
     recipe (mlir-tests/lib/corpus.py lower_all: RUN-line stage 1 with
     version N's pipelines, programs rewritten into N's syntax by
     downport.py, or unsupported with the reason);
  3. every program runs under N's runner (mlir-cpu-runner, or mlir-runner)
     with N's runner utils and (a) N's libmlir_async_runtime.so, (b) ours,
     and its output goes through N's FileCheck.
A version whose toolchain is Python bindings only (pipelines.txt
`toolchain bindings`: LLVM 24, torch-mlir's) has no runner: every program
is lowered through the bindings' own PassManager
(scripts/python_engine/engine_test.py lower_corpus), and its cell is
`lower` when the lowered program calls each runtime function as often as
the same program lowered by MLIR 22's bindings (xtc's) and canonicalize
alone erases none of its async.execute ops (from LLVM 20 an unused
execute whose body has no side effect goes), FAIL otherwise.
The lit directives of a program decide what is expected, with the features
`cxx-runtime` or `rust-runtime` and `mlir-N` (so `XFAIL: cxx-runtime &&
mlir-14` is possible).

Cells: pass; xfail (failed, as expected); unsup (not run: the reason is
listed under the matrix); FAIL (failed unexpectedly) and XPASS (passed,
but expected to fail) are errors, and so is a program that does not lower:
the exit status is then 1. The matrix goes to stdout and to
<out>/matrix.txt; --readme FILE also puts it between the compat-matrix
markers of FILE.
"""
import argparse
import datetime
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(REPO, 'mlir-tests', 'lib'))
import corpus  # noqa: E402
import pipelines  # noqa: E402
import rules  # noqa: E402
import toolchain as toolchain_lib  # noqa: E402
sys.path.insert(0, os.path.join(REPO, 'scripts', 'python_engine'))
import engine_test  # noqa: E402

SYSTEM_VERSION = pipelines.DEFAULT_VERSION     # installed by scripts/toolchain/setup.sh
SYSTEM_PREFIX = toolchain_lib.llvm_prefix()
KINDS = ('cxx', 'rust')
README_BEGIN = '<!-- compat-matrix:begin (scripts/corpus/compat.py writes this block) -->'
README_END = '<!-- compat-matrix:end -->'


def parse_args():
    ap = argparse.ArgumentParser(
        description='The corpus under the runners of several MLIR versions, '
                    'against their C++ async runtime and ours.')
    ap.add_argument('--versions', default=None,
                    help='comma-separated MLIR versions (default: every version '
                         'of mlir-tests/lib/pipelines.txt)')
    ap.add_argument('--runtime', default=corpus.DEFAULT_RUNTIME,
                    help='our runtime library (default: %(default)s)')
    ap.add_argument('--cache', default=os.path.join(REPO, 'target', 'compat'),
                    help='toolchain cache and work directory (default: %(default)s)')
    ap.add_argument('--offline', action='store_true',
                    help='never fetch: fail if a version is not in the cache')
    ap.add_argument('--only', action='append', default=None, metavar='NAME',
                    help='run only this program (repeatable)')
    ap.add_argument('--timeout', type=float, default=300,
                    help='seconds per run (default: %(default)s)')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1,
                    help='runs at a time (default: %(default)s)')
    ap.add_argument('--readme', metavar='FILE',
                    help='also write the matrix into FILE between its markers')
    a = ap.parse_args()
    table = pipelines.load()
    if a.versions:
        try:
            a.versions = [int(v) for v in a.versions.split(',') if v.strip()]
        except ValueError:
            ap.error('--versions takes numbers, e.g. 16,22')
        unknown = [v for v in a.versions if v not in table]
        if unknown:
            ap.error('no MLIR %s in %s' % (unknown, pipelines.TABLE))
    else:
        a.versions = sorted(table)
    if not os.path.exists(a.runtime):
        ap.error('no runtime library at %s (make build)' % a.runtime)
    return a


def toolchain(version, a):
    """(LLVM prefix, one line describing the packages) of MLIR `version`."""
    if version == SYSTEM_VERSION:
        if not os.path.exists(os.path.join(SYSTEM_PREFIX, 'bin', 'mlir-opt')):
            sys.exit('compat: MLIR %d is not installed (make setup)' % version)
        return SYSTEM_PREFIX, installed_packages(version)
    prefix = os.path.join(a.cache, str(version), 'root', 'usr', 'lib', 'llvm-%d' % version)
    listing = os.path.join(a.cache, str(version), 'packages.txt')
    if not os.path.exists(listing):
        if a.offline:
            sys.exit('compat: MLIR %d is not in %s (run without --offline)' % (version, a.cache))
        subprocess.run(['bash', os.path.join(REPO, 'scripts', 'toolchain', 'fetch_mlir.sh'),
                        '--cache', a.cache, str(version)], check=True)
    with open(listing) as f:
        lines = [l.strip() for l in f if not l.startswith('#') and l.strip()]
    if lines and lines[0].startswith('PyPI '):   # pipelines.txt `toolchain pypi`
        return prefix, 'PyPI ' + ', '.join(l[len('PyPI '):] for l in lines)
    return prefix, 'Debian ' + ', '.join(lines)


def installed_packages(version):
    r = subprocess.run(['dpkg-query', '-W', '-f', '${Package} ${Version}\\n',
                        'mlir-%d-tools' % version, 'libmlir-%d' % version],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return 'Debian ' + ', '.join(r.stdout.split('\n')[:-1]) + ' (installed)'


def first_line(text, limit=150):
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[:limit - 3] + '...'
    return ''


def run_one(p, kind, prefix, a, env):
    """Runs program p under the runner with runtime kind; returns (passed,
    why not, seconds)."""
    t = toolchain_lib.tools(prefix)
    runtime = t['cxx_runtime'] if kind == 'cxx' else os.path.abspath(a.runtime)
    libs = ','.join([t['mlir_c_runner_utils'], t['mlir_runner_utils'], runtime])
    cmd = [t['mlir_cpu_runner'], p['mlir'], '-e', p['entry'],
           '-entry-point-result=' + p['entry_result'], '-O0', '-shared-libs=' + libs]
    run_env = dict(env)
    run_env.pop('MLIR_ASYNC_RUNTIME_WORKERS', None)  # programs set their own
    for kv in p['env']:
        k, v = kv.split('=', 1)
        run_env[k] = v
    start = time.monotonic()
    try:
        r = subprocess.run(cmd, env=run_env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=a.timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return False, 'timed out after %.0f s' % a.timeout, time.monotonic() - start
    elapsed = time.monotonic() - start
    if r.returncode != 0:
        err = first_line(r.stderr.decode(errors='replace'))
        if r.returncode < 0:
            why = 'killed by %s' % signal.Signals(-r.returncode).name
        else:
            why = 'exit status %d' % r.returncode
        return False, why + (': ' + err if err else ''), elapsed
    check = subprocess.run([t['filecheck'], p['check_file'],
                            '--check-prefix=' + p['check_prefix']],
                           input=r.stdout, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    if check.returncode != 0:
        msg = check.stdout.decode(errors='replace')
        m = re.search(r'error: (.*)', msg)
        return False, 'FileCheck: ' + (m.group(1).strip() if m else first_line(msg)), elapsed
    return True, None, elapsed


def lowering_only(version, a):
    """run_version() for a version with Python bindings only: every program
    lowered through them and compared with MLIR 22's bindings' lowering."""
    table = pipelines.load()
    binding = engine_test.binding_of(version)
    reference = engine_test.binding_of(22)
    if binding is None:
        sys.exit('compat: no Python binding of MLIR %d in %s' % (version, engine_test.__file__))
    site = engine_test.site_packages(engine_test.DEFAULT_VENV)
    info = engine_test.BINDINGS[binding]
    packages = 'PyPI %s %s (Python bindings, target/python-engine-venv): lowering only' % (
        info['dist'].replace('_', '-'), engine_test.dist_version(site, info['dist']))
    print('compat: MLIR %d (%s): lowering the corpus through %s' % (version, packages, binding),
          file=sys.stderr)
    results = {}
    for v, name in ((version, binding), (22, reference)):
        subs = corpus.substitutions('/nonexistent/llvm-%d' % v, a.runtime, v)
        progs = corpus.programs(corpus.corpus_files(), subs, table[v], None)
        if a.only:
            progs = [p for p in progs if p['name'] in a.only]
        results[v] = engine_test.lower_corpus(name, progs)
    note = ('lowered through %s\'s PassManager, calling the runtime as MLIR 22\'s lowering '
            'does; canonicalize erases no async.execute; no runner' % binding)
    cells, failed = {}, 0
    for name, (got, error) in results[version].items():
        ref = (results[22].get(name, (None, 'not lowered by MLIR 22'))[0] or {}).get('calls')
        if got is None:
            cell = ('FAIL', 'did not lower: ' + error)
        elif got['calls'] != ref:
            cell = ('FAIL', 'runtime calls %s, MLIR 22\'s lowering %s' % (got['calls'], ref))
        elif got['erased']:
            cell = ('FAIL', 'canonicalize erases %d async.execute (RecursiveMemoryEffects, LLVM 20 '
                            'and later): give its body a side effect' % got['erased'])
        else:
            cell = ('lower', note)
        failed += cell[0] == 'FAIL'
        print('compat: MLIR %d %-20s %s%s' % (version, name, cell[0],
                                              ': ' + cell[1] if cell[0] == 'FAIL' else ''),
              file=sys.stderr)
        for kind in KINDS:
            cells[(name, kind)] = cell
    return cells, list(results[version]), packages, failed


def run_version(version, a):
    """{(program, kind): (cell, reason)}, program names in order, packages,
    #lowering failures."""
    if not pipelines.load()[version].has_runner:
        return lowering_only(version, a)
    prefix, packages = toolchain(version, a)
    out = os.path.join(a.cache, str(version), 'corpus')
    print('compat: MLIR %d (%s): lowering the corpus into %s' % (version, packages, out),
          file=sys.stderr)
    progs, failed = corpus.lower_all(corpus.corpus_files(), out, prefix, a.runtime,
                                     quiet=True, version=version,
                                     only=set(a.only) if a.only else None)
    env = toolchain_lib.toolchain_env(prefix)
    cells, jobs = {}, []
    for p in progs:
        for kind in KINDS:
            expected, why = rules.expectation(p, rules.features(kind, version))
            if why and why.split(':')[0] in ('REQUIRES', 'UNSUPPORTED', 'XFAIL'):
                why += ' in ' + os.path.relpath(p['source'], REPO)
            if expected == 'unsupported':
                cells[(p['name'], kind)] = ('unsup', why)
            elif 'mlir' not in p:
                cells[(p['name'], kind)] = ('FAIL', 'did not lower (see above)')
            else:
                jobs.append((p, kind, expected, why))

    def work(job):
        p, kind, expected, why = job
        ok, fail_why, elapsed = run_one(p, kind, prefix, a, env)
        if expected == 'xfail':
            cell = ('XPASS', why + ', but it passed') if ok else ('xfail', '%s (%s)' % (why, fail_why))
        else:
            cell = ('pass', None) if ok else ('FAIL', fail_why)
        print('compat: MLIR %d %-20s %-4s %-5s %5.1f s%s' % (
            version, p['name'], kind, cell[0], elapsed,
            ': ' + cell[1] if cell[1] and cell[0] != 'pass' else ''), file=sys.stderr)
        return (p['name'], kind), cell

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        for key, cell in ex.map(work, jobs):
            cells[key] = cell
    return cells, [p['name'] for p in progs], packages, failed


def matrix(results, versions, names):
    """The matrix as text, then the notes (every cell other than pass)."""
    col = 7
    head1 = '%-20s' % 'MLIR' + ''.join(('%d' % v).center(2 * col) for v in versions)
    head2 = '%-20s' % 'program' + ''.join(k.center(col) for v in versions
                                          for k in ('c++', 'ours'))
    lines = [head1.rstrip(), head2.rstrip()]
    notes, numbers = [], {}
    for name in names:
        row = '%-20s' % name
        for v in versions:
            for kind in KINDS:
                cell, why = results[v]['cells'].get((name, kind), ('-', None))
                mark = ''
                if why and cell != 'pass':
                    if why not in numbers:
                        numbers[why] = len(numbers) + 1
                        notes.append('[%d] %s' % (numbers[why], why))
                    mark = str(numbers[why])
                row += (cell + mark).center(col)
        lines.append(row.rstrip())
    return lines, notes


def verdict(results, versions, names):
    """Errors: FAIL/XPASS cells, lowering failures, and every program where
    ours fails while the C++ runtime passes."""
    errors = []
    for v in versions:
        if results[v]['lower_failures']:
            errors.append('MLIR %d: %d program(s) did not lower as they should' % (v, results[v]['lower_failures']))
        cells = results[v]['cells']
        for name in names:
            cxx = cells.get((name, 'cxx'), ('-', None))[0]
            ours = cells.get((name, 'rust'), ('-', None))[0]
            for kind, cell in (('c++', cxx), ('ours', ours)):
                if cell in ('FAIL', 'XPASS'):
                    errors.append('MLIR %d %s on %s: %s' % (v, name, kind, cell))
            if cxx == 'pass' and ours != 'pass':
                errors.append('MLIR %d %s: passes on the C++ runtime, %s on ours' % (v, name, ours))
    return errors


def update_readme(path, text):
    with open(path) as f:
        doc = f.read()
    if README_BEGIN not in doc or README_END not in doc:
        sys.exit('compat: %s lacks the markers %s ... %s' % (path, README_BEGIN, README_END))
    before, rest = doc.split(README_BEGIN, 1)
    _, after = rest.split(README_END, 1)
    with open(path + '.tmp', 'w') as f:
        f.write(before + README_BEGIN + '\n```\n' + text + '```\n' + README_END + after)
    os.replace(path + '.tmp', path)


def main():
    a = parse_args()
    started = time.monotonic()
    results, names = {}, []
    for v in a.versions:
        cells, progs, packages, failed = run_version(v, a)
        results[v] = {'cells': cells, 'packages': packages, 'lower_failures': failed}
        names += [n for n in progs if n not in names]
    lines, notes = matrix(results, a.versions, names)
    errors = verdict(results, a.versions, names)
    text = '\n'.join(
        ['Async runtime compatibility, %s (scripts/corpus/compat.py)'
         % datetime.date.today().isoformat(),
         'c++: the MLIR version\'s own libmlir_async_runtime.so; ours: %s'
         % os.path.relpath(os.path.abspath(a.runtime), REPO), '']
        + ['MLIR %d: %s' % (v, results[v]['packages']) for v in a.versions] + ['']
        + lines + [''] + notes
        + ['', 'ours passes wherever the C++ runtime passes: %s'
           % ('yes' if not any('passes on the C++' in e for e in errors) else 'NO')]) + '\n'
    sys.stdout.write(text)
    os.makedirs(a.cache, exist_ok=True)
    with open(os.path.join(a.cache, 'matrix.txt'), 'w') as f:
        f.write(text)
    if a.readme:
        if a.only or a.versions != sorted(pipelines.load()):
            print('compat: %s left as it is: the matrix covers only part of the '
                  'versions or programs' % a.readme, file=sys.stderr)
        else:
            update_readme(a.readme, text)
    print('compat: %d version(s) in %.0f s' % (len(a.versions), time.monotonic() - started),
          file=sys.stderr)
    for e in errors:
        print('compat: error: ' + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
