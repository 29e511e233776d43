#!/usr/bin/env python3
"""Single source of truth for the async MLIR corpus in mlir-tests/.

Imported by mlir-tests/lit.cfg.py (tool paths, pipelines, lit substitutions)
and run as a script by scripts/lower-corpus.sh and the coverage tests:

  corpus.py lower    --out DIR [--llvm-prefix P] [--runtime SO] [FILE...]
      lower every RUN line of every corpus program to DIR/<id>.ll and write
      DIR/manifest.tsv (see MANIFEST_COLUMNS and the header of lit.cfg.py).
  corpus.py coverage --out DIR --reference SO [FILE...]
      lower everything, then check that every mlirAsyncRuntim* symbol exported
      by the reference runtime SO is called by at least one corpus program.
  corpus.py exports  --reference SO --runtime SO
      check that the runtime under test defines every symbol of the reference
      ABI (mlirAsyncRuntim* functions and the runner init/destroy hooks).

RUN line convention (every RUN line of every *.mlir corpus file):

  // RUN: %mlir_opt %s <pipeline> | [env VAR=VAL ...] %mlir_cpu_runner <flags> | FileCheck %s [--check-prefix=P]

Stage 1 (everything before the first `|`) is the lowering; it must start with
%mlir_opt and read %s. Stage 2 is the runner (optional `env VAR=VAL` prefix,
entry point from `-e NAME`, result type from `-entry-point-result=T`). Stage 3
is FileCheck on the same file, with an optional check prefix. RUN lines may
be continued with a trailing backslash.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_DIR = os.path.dirname(HERE)                 # mlir-tests/
REPO_ROOT = os.path.dirname(TEST_DIR)            # the repository root
DEFAULT_LLVM_PREFIX = '/usr/lib/llvm-19'
DEFAULT_RUNTIME = os.path.join(REPO_ROOT, 'target', 'release',
                               'libmlir_async_runtime.so')

# The lowering passes after the async-specific front (async-parallel-for or
# async-func-to-async-runtime) that a RUN line may prepend. This is the
# pipeline of MLIR's own async integration tests
# (mlir/test/Integration/Dialect/Async/CPU and mlir/test/mlir-cpu-runner/
# async*.mlir), plus convert-vector-to-llvm for vector.print and
# expand-strided-metadata/lower-affine for the code async-parallel-for emits.
ASYNC_PASSES = ','.join([
    'async-to-async-runtime',
    'func.func(async-runtime-ref-counting,async-runtime-ref-counting-opt)',
    'convert-async-to-llvm',
    'func.func(convert-linalg-to-loops,convert-scf-to-cf)',
    'expand-strided-metadata',
    'lower-affine',
    'convert-scf-to-cf',
    'convert-vector-to-llvm',
    'finalize-memref-to-llvm',
    'func.func(arith-expand,convert-arith-to-llvm)',
    'convert-cf-to-llvm',
    'convert-func-to-llvm',
    'reconcile-unrealized-casts',
])

# Same, with the policy-based reference counting pass instead of the
# automatic one (upstream runs its parallel-for tests both ways).
ASYNC_POLICY_PASSES = ASYNC_PASSES.replace(
    'func.func(async-runtime-ref-counting,async-runtime-ref-counting-opt)',
    'async-runtime-policy-based-ref-counting')

SYMBOL_RE = re.compile(r'\bmlirAsyncRuntim\w*')
HOOKS = ['__mlir_execution_engine_init', '__mlir_execution_engine_destroy']

MANIFEST_COLUMNS = ['name', 'll', 'check_file', 'check_prefix', 'entry',
                    'entry_result', 'env', 'requires', 'xfail', 'unsupported',
                    'source']


def tools(llvm_prefix=DEFAULT_LLVM_PREFIX):
    b = os.path.join(llvm_prefix, 'bin')
    l = os.path.join(llvm_prefix, 'lib')
    return {
        'mlir_opt': os.path.join(b, 'mlir-opt'),
        'mlir_translate': os.path.join(b, 'mlir-translate'),
        'mlir_cpu_runner': os.path.join(b, 'mlir-cpu-runner'),
        'filecheck': os.path.join(b, 'FileCheck'),
        'not': os.path.join(b, 'not'),
        'mlir_c_runner_utils': os.path.join(l, 'libmlir_c_runner_utils.so'),
        'mlir_runner_utils': os.path.join(l, 'libmlir_runner_utils.so'),
        'cxx_runtime': os.path.join(l, 'libmlir_async_runtime.so'),
    }


def substitutions(llvm_prefix=DEFAULT_LLVM_PREFIX, runtime=DEFAULT_RUNTIME):
    """(pattern, replacement) pairs, longest pattern first, because lit
    replaces substitutions in list order without word boundaries."""
    t = tools(llvm_prefix)
    shared = ' '.join('-shared-libs=' + x for x in
                      (t['mlir_c_runner_utils'], t['mlir_runner_utils'], runtime))
    subs = [
        ('%async_func_to_llvm', '-pass-pipeline="builtin.module('
         'async-func-to-async-runtime,' + ASYNC_PASSES + ')"'),
        ('%async_policy_passes', ASYNC_POLICY_PASSES),
        ('%async_to_llvm', '-pass-pipeline="builtin.module(' + ASYNC_PASSES + ')"'),
        ('%async_passes', ASYNC_PASSES),
        ('%run_async', t['mlir_cpu_runner'] +
         ' -e main -entry-point-result=void -O0 ' + shared),
        ('%mlir_opt', t['mlir_opt']),
        ('%mlir_translate', t['mlir_translate']),
        ('%mlir_cpu_runner', t['mlir_cpu_runner']),
        ('%mlir_c_runner_utils', t['mlir_c_runner_utils']),
        ('%mlir_runner_utils', t['mlir_runner_utils']),
        ('%mlir_async_runtime', runtime),
        ('%cxx_runtime', t['cxx_runtime']),
        ('%llvm_prefix', llvm_prefix),
        ('%corpus_py', os.path.abspath(__file__)),
    ]
    return sorted(subs, key=lambda kv: -len(kv[0]))


def expand(text, subs):
    for k, v in subs:
        text = text.replace(k, v)
    return text


def corpus_files(paths=None):
    if paths:
        return [os.path.abspath(p) for p in paths]
    return sorted(os.path.join(TEST_DIR, f) for f in os.listdir(TEST_DIR)
                  if f.endswith('.mlir'))


def directive(path, key):
    vals = []
    with open(path) as f:
        for line in f:
            m = re.match(r'\s*//\s*' + key + r':(.*)$', line)
            if m:
                vals += [x.strip() for x in m.group(1).split(',') if x.strip()]
    return vals


def run_lines(path):
    """RUN lines of a file, continuations joined."""
    runs, cur = [], None
    with open(path) as f:
        for line in f:
            m = re.match(r'\s*//\s*RUN:(.*)$', line)
            if not m:
                continue
            text = m.group(1).rstrip()
            cont = text.endswith('\\')
            if cont:
                text = text[:-1]
            cur = text if cur is None else cur + ' ' + text.strip()
            if not cont:
                runs.append(cur.strip())
                cur = None
    if cur is not None:
        runs.append(cur.strip())
    return runs


def parse_run(run, path, subs):
    stages = [s.strip() for s in run.split('|')]
    if len(stages) != 3:
        raise ValueError('%s: RUN line must have 3 stages (opt | runner | '
                         'FileCheck): %s' % (path, run))
    lower, runner, check = stages
    if not lower.startswith('%mlir_opt') or '%s' not in lower.split():
        raise ValueError('%s: stage 1 must be `%%mlir_opt %%s ...`: %s' % (path, lower))
    lower = expand(lower, subs).replace('%s', shlex.quote(path))
    toks = shlex.split(expand(runner, subs))
    env = []
    if toks and toks[0] == 'env':
        toks = toks[1:]
        while toks and '=' in toks[0] and not toks[0].startswith('-'):
            env.append(toks.pop(0))
    entry, result = 'main', 'void'
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == '-e' and i + 1 < len(toks):
            entry = toks[i + 1]
            i += 1
        elif t.startswith('-e='):
            entry = t[3:]
        elif t.startswith('-entry-point-result='):
            result = t.split('=', 1)[1]
        i += 1
    ctoks = shlex.split(check)
    if not ctoks or ctoks[0] != 'FileCheck':
        raise ValueError('%s: stage 3 must be FileCheck: %s' % (path, check))
    prefix = 'CHECK'
    for j, t in enumerate(ctoks):
        if t.startswith('--check-prefix=') or t.startswith('-check-prefix='):
            prefix = t.split('=', 1)[1]
        elif t.startswith('--check-prefixes=') or t.startswith('-check-prefixes='):
            prefix = t.split('=', 1)[1]
        elif t in ('--check-prefix', '-check-prefix') and j + 1 < len(ctoks):
            prefix = ctoks[j + 1]
    return {'lower': lower, 'env': env, 'entry': entry, 'entry_result': result,
            'check_prefix': prefix}


def programs(files, subs):
    """One entry per RUN line: id is the file stem, plus .N (1-based) when
    the file has more than one RUN line."""
    out = []
    for path in files:
        runs = run_lines(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        for n, run in enumerate(runs, 1):
            p = parse_run(run, path, subs)
            p['name'] = stem if len(runs) == 1 else '%s.%d' % (stem, n)
            p['source'] = path
            p['requires'] = ','.join(directive(path, 'REQUIRES'))
            p['xfail'] = ','.join(directive(path, 'XFAIL'))
            p['unsupported'] = ','.join(directive(path, 'UNSUPPORTED'))
            out.append(p)
    return out


def lower_one(p, out_dir, t):
    ll = os.path.join(out_dir, p['name'] + '.ll')
    cmd = '%s | %s --mlir-to-llvmir -o %s' % (
        p['lower'], shlex.quote(t['mlir_translate']), shlex.quote(ll + '.tmp'))
    r = subprocess.run(['bash', '-o', 'pipefail', '-c', cmd],
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return 'lowering %s failed:\n%s\n%s\n' % (p['name'], cmd, r.stderr)
    os.replace(ll + '.tmp', ll)
    p['ll'] = ll
    return None


def lower_all(files, out_dir, llvm_prefix, runtime, quiet=False):
    """Lower every program (in parallel); returns (programs, #failures).
    Programs that lowered have p['ll'] set."""
    from concurrent.futures import ThreadPoolExecutor
    os.makedirs(out_dir, exist_ok=True)
    subs = substitutions(llvm_prefix, runtime)
    t = tools(llvm_prefix)
    progs = programs(files, subs)
    jobs = int(os.environ.get('CORPUS_JOBS', os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        errors = list(ex.map(lambda p: lower_one(p, out_dir, t), progs))
    failed = 0
    for p, err in zip(progs, errors):
        if err:
            failed += 1
            sys.stderr.write(err)
        elif not quiet:
            sys.stderr.write('  LOWER %s -> %s\n' % (p['name'], p['ll']))
    return progs, failed


def write_manifest(progs, out_dir):
    path = os.path.join(out_dir, 'manifest.tsv')
    with open(path + '.tmp', 'w') as f:
        f.write('#' + '\t'.join(MANIFEST_COLUMNS) + '\n')
        for p in progs:
            if 'll' not in p:
                continue
            row = dict(p, check_file=p['source'], env=' '.join(p['env']))
            f.write('\t'.join(row[c] if row[c] else '-' for c in MANIFEST_COLUMNS) + '\n')
    os.replace(path + '.tmp', path)
    return path


def exported(so):
    r = subprocess.run(['nm', '-D', '--defined-only', so], check=True,
                       stdout=subprocess.PIPE, text=True)
    syms = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in 'TtWiV':
            syms.add(parts[2])
    return syms


def abi_symbols(reference):
    return sorted(s for s in exported(reference) if SYMBOL_RE.fullmatch(s))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('cmd', choices=['lower', 'coverage', 'exports', 'list'])
    ap.add_argument('files', nargs='*')
    ap.add_argument('--out')
    ap.add_argument('--llvm-prefix', default=DEFAULT_LLVM_PREFIX)
    ap.add_argument('--runtime', default=DEFAULT_RUNTIME)
    ap.add_argument('--reference')
    a = ap.parse_args()
    files = corpus_files(a.files)
    if a.cmd == 'list':
        for p in programs(files, substitutions(a.llvm_prefix, a.runtime)):
            print(p['name'], p['entry'], p['entry_result'], ' '.join(p['env']) or '-')
        return 0
    if a.cmd == 'exports':
        ref = set(abi_symbols(a.reference)) | set(HOOKS)
        have = exported(a.runtime)
        missing = sorted(ref - have)
        for s in sorted(ref):
            print(('exported ' if s in have else 'MISSING ') + s)
        print('missing exports: %d' % len(missing))
        return 1 if missing else 0
    progs, failed = lower_all(files, a.out, a.llvm_prefix, a.runtime,
                              quiet=(a.cmd == 'coverage'))
    if a.cmd == 'lower':
        print(write_manifest(progs, a.out))
        return 1 if failed else 0
    # coverage: which ABI functions does the lowered corpus call?
    used = {}
    for p in progs:
        if 'll' not in p:
            continue
        with open(p['ll']) as f:
            text = f.read()
        for s in set(re.findall(r'call [^\n]*@(mlirAsyncRuntim\w*)\(', text)):
            used.setdefault(s, set()).add(p['name'])
    syms = abi_symbols(a.reference)
    missing = [s for s in syms if s not in used]
    for s in syms:
        if s in used:
            print('covered %s (%d programs)' % (s, len(used[s])))
        else:
            print('NOT COVERED %s' % s)
    print('abi functions: %d, not covered: %d, lowering failures: %d'
          % (len(syms), len(missing), failed))
    return 1 if (missing or failed) else 0


if __name__ == '__main__':
    sys.exit(main())
