#!/usr/bin/env python3
"""Single source of truth for the async MLIR corpus in mlir-tests/: how a
program's RUN lines are read, and how the whole corpus is lowered (each RUN
line's stage 1 through lowering.py, the one recipe).

The library around it, one concept a module:
  toolchain.py  LLVM_PREFIX, the one knob, and the toolchain's programs
  pipelines.py  pipelines.txt, the pass pipelines of every MLIR version
  rules.py      the one skip rule: REQUIRES/UNSUPPORTED/XFAIL, lit's
  lowering.py   mlir-opt then mlir-translate, the one lowering recipe
  manifest.py   target/corpus/manifest.tsv, its one writer and reader
  harness.py    the one jit-harness command line
  downport.py   the corpus rewritten for MLIR older than 19

Imported by mlir-tests/lit.cfg.py (lit substitutions),
scripts/corpus/stress.py, scripts/corpus/compat.py and
scripts/corpus/symbol_binding.py, and run as a script by `make corpus`
(mk/corpus.mk) and the coverage tests:

  corpus.py lower    --out DIR [--llvm-prefix P] [--mlir-version N] [--runtime SO] [FILE...]
      lower every RUN line of every corpus program to DIR/<id>.llvm.mlir
      (LLVM dialect, for the runners) and DIR/<id>.ll (LLVM IR, for
      jit-harness) and write DIR/manifest.tsv (see manifest.py). DIR is
      emptied of an earlier run's files first, so a program removed or
      renamed leaves none behind. CORPUS_JOBS: parallel lowerings (default:
      the CPU count).
  corpus.py coverage --out DIR --reference SO [FILE...]
      lower everything, then check that every mlirAsyncRuntim* symbol exported
      by the reference runtime SO is called by at least one corpus program.
  corpus.py exports  --reference SO --runtime SO
      check that the runtime under test defines every symbol of the reference
      ABI (mlirAsyncRuntim* functions and the runner init/destroy hooks).

The pass pipelines come from pipelines.txt (one table for every MLIR
version, see pipelines.py); the MLIR version is that of the LLVM prefix
($LLVM_PREFIX by default, .../llvm-N) unless --mlir-version says otherwise. For a version older than
the corpus's syntax (MLIR 19), each program is first rewritten by
downport.py into DIR/src/, and a program that version cannot express is
left out with the reason.

RUN line convention (every RUN line of every *.mlir corpus file):

  // RUN: %mlir_opt %s <pipeline> | [env VAR=VAL ...] %mlir_cpu_runner <flags> | FileCheck %s [--check-prefix=P]

Stage 1 (everything before the first `|`) is the lowering; it must start with
%mlir_opt and read %s. Stage 2 is the runner (optional `env VAR=VAL` prefix,
entry point from `-e NAME`, result type from `-entry-point-result=T`). Stage 3
is FileCheck on the same file, with an optional check prefix. RUN lines may
be continued with a trailing backslash.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys

import downport
import lowering
import manifest
import pipelines
import toolchain

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_DIR = os.path.dirname(HERE)                 # mlir-tests/
REPO_ROOT = os.path.dirname(TEST_DIR)            # the repository root
DEFAULT_RUNTIME = os.path.join(REPO_ROOT, 'target', 'release',
                               'libmlir_async_runtime.so')

SYMBOL_RE = re.compile(r'\bmlirAsyncRuntim\w*')
HOOKS = ['__mlir_execution_engine_init', '__mlir_execution_engine_destroy']

def substitutions(llvm_prefix=None, runtime=DEFAULT_RUNTIME, version=None, fixed_lowering=False):
    """(pattern, replacement) pairs, longest pattern first, because lit
    replaces substitutions in list order without word boundaries.
    fixed_lowering: RUN lines run our patched async-parallel-for
    (async-parallel-for-fixed, from the plugin of make lowering-fixes,
    which %mlir_opt loads) where they say async-parallel-for{...}."""
    llvm_prefix = toolchain.llvm_prefix(llvm_prefix)
    v = toolchain.mlir_version(llvm_prefix, version)
    t = toolchain.tools(llvm_prefix, v.number)
    shared = ' '.join('-shared-libs=' + x for x in
                      (t['mlir_c_runner_utils'], t['mlir_runner_utils'], runtime))
    # Without async.func, a RUN line asking for its lowering names a pass
    # that does not exist, and mlir-opt says so.
    async_func = (v.pipeline(async_func=True) if v.async_func else
                  v.anchored('async-func-lowering-needs-mlir-16,' + v.passes()))
    mlir_opt = t['mlir_opt']
    fixed = []
    if fixed_lowering:
        mlir_opt = ' '.join([mlir_opt] + v.plugin_args())
        # The pass with options, or followed by the next one; both read
        # the same as a regular expression (lit) and as text (expand()).
        fixed = [(pipelines.PARALLEL_FOR + end, v.fixed(pipelines.PARALLEL_FOR) + end)
                 for end in ('{', ',')]
    subs = fixed + [
        ('%async_func_to_llvm', '-pass-pipeline="%s"' % async_func),
        ('%async_policy_passes', v.passes(policy=True)),
        ('%async_to_llvm', '-pass-pipeline="%s"' % v.pipeline(async_func=False)),
        ('%async_passes', v.passes()),
        ('%run_async', t['mlir_cpu_runner'] +
         ' -e main -entry-point-result=void -O0 ' + shared),
        ('%mlir_opt', mlir_opt),
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


def strip_anchor(stage, version):
    """MLIR 14 and 15 take a bare pass list: drop the builtin.module(...) that a
    RUN line's own -pass-pipeline wraps its passes in."""
    if version is None or version.anchor:
        return stage
    return re.sub(r'(-pass-pipeline=")builtin\.module\((.*)\)(")', r'\1\2\3', stage)


def parse_run(run, path, subs, version=None):
    stages = [s.strip() for s in run.split('|')]
    if len(stages) != 3:
        raise ValueError('%s: RUN line must have 3 stages (opt | runner | '
                         'FileCheck): %s' % (path, run))
    lower, runner, check = stages
    if not lower.startswith('%mlir_opt') or '%s' not in lower.split():
        raise ValueError('%s: stage 1 must be `%%mlir_opt %%s ...`: %s' % (path, lower))
    lower = expand(strip_anchor(lower, version), subs).replace('%s', shlex.quote(path))
    pipeline = lowering_pipeline(lower, path)
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
    # `2>&1`: the runner's stderr is checked with its stdout.
    return {'lower': lower, 'env': env, 'entry': entry, 'entry_result': result,
            'check_prefix': prefix, 'pipeline': pipeline, 'stderr_checked': '2>&1' in toks}


def lowering_pipeline(lower, path):
    """The pass pipeline of an expanded stage 1 that is just
    `mlir-opt FILE -pass-pipeline=P` (what jit-harness --pipeline takes, to
    lower the program itself, e.g. for --reference), or '' when it has
    other options."""
    toks = shlex.split(lower)
    rest = [t for t in toks[1:] if t != path]
    if len(rest) == 1:
        for flag in ('-pass-pipeline=', '--pass-pipeline='):
            if rest[0].startswith(flag):
                return rest[0][len(flag):]
    return ''


def version_source(path, version, src_dir):
    """(file to lower and check, reason it is unsupported or None): the
    program itself, or its rewrite for an older MLIR (downport.py) in
    src_dir."""
    if version is None:
        return path, None
    with open(path) as f:
        text = f.read()
    try:
        new = downport.downport(text, version.number)
    except downport.Unsupported as e:
        return path, str(e)
    if new == text:
        return path, None
    if src_dir is None:
        raise ValueError('%s needs rewriting for MLIR %d: give a directory for it'
                         % (path, version.number))
    os.makedirs(src_dir, exist_ok=True)
    out = os.path.join(src_dir, os.path.basename(path))
    with open(out + '.tmp', 'w') as f:
        f.write(new)
    os.replace(out + '.tmp', out)
    return out, None


def programs(files, subs, version=None, src_dir=None):
    """One entry per RUN line: id is the file stem, plus .N (1-based) when
    the file has more than one RUN line. With `version` (a pipelines.Version)
    the RUN lines are read for that MLIR: its rewrite of the program (see
    version_source) is what %s names, and a program it cannot express has
    p['unsupported_reason']."""
    out = []
    for path in files:
        runs = run_lines(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        src, reason = version_source(path, version, src_dir)
        for n, run in enumerate(runs, 1):
            p = parse_run(run, src, subs, version)
            p['name'] = stem if len(runs) == 1 else '%s.%d' % (stem, n)
            p['source'] = path
            p['check_file'] = src
            p['unsupported_reason'] = reason
            p['requires'] = ','.join(directive(path, 'REQUIRES'))
            p['xfail'] = ','.join(directive(path, 'XFAIL'))
            p['unsupported'] = ','.join(directive(path, 'UNSUPPORTED'))
            out.append(p)
    return out


def lower_one(p, out_dir, prefix):
    """RUN line stage 1 to <id>.llvm.mlir, then LLVM IR <id>.ll, by the one
    recipe (lowering.py); an error text, or None."""
    mlir = os.path.join(out_dir, p['name'] + '.llvm.mlir')
    ll = os.path.join(out_dir, p['name'] + '.ll')
    try:
        lowering.lower(shlex.split(p['lower']), ll, mlir, prefix)
    except lowering.LoweringError as e:
        return 'lowering %s failed: %s\n' % (p['name'], e)
    p['mlir'], p['ll'] = mlir, ll
    return None


def lower_all(files, out_dir, llvm_prefix, runtime, quiet=False, version=None,
              only=None):
    """Lowers every program (in parallel) with the toolchain at llvm_prefix
    for MLIR `version` (default: the prefix's); returns (programs,
    #failures). Programs that lowered have p['mlir'] and p['ll'] set; those
    the version cannot express, p['unsupported_reason']. `only`: names to
    keep (None: all)."""
    from concurrent.futures import ThreadPoolExecutor
    os.makedirs(out_dir, exist_ok=True)
    llvm_prefix = toolchain.llvm_prefix(llvm_prefix)
    v = toolchain.mlir_version(llvm_prefix, version)
    subs = substitutions(llvm_prefix, runtime, v.number)
    progs = programs(files, subs, v, os.path.join(out_dir, 'src'))
    if only is not None:
        progs = [p for p in progs if p['name'] in only]
    todo = [p for p in progs if not p['unsupported_reason']]
    jobs = int(os.environ.get('CORPUS_JOBS', os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        errors = list(ex.map(lambda p: lower_one(p, out_dir, llvm_prefix), todo))
    failed = 0
    for p, err in zip(todo, errors):
        if err:
            failed += 1
            sys.stderr.write(err)
        elif not quiet:
            sys.stderr.write('  LOWER %s -> %s\n' % (p['name'], p['ll']))
    return progs, failed


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


def clean(out_dir):
    """Removes what an earlier `lower` wrote to out_dir (its .ll,
    .llvm.mlir, temporaries, downported sources and manifest), nothing
    else."""
    import glob
    import shutil
    for pattern in ('*.ll', '*.llvm.mlir', '*.tmp', 'manifest.tsv'):
        for path in glob.glob(os.path.join(out_dir, pattern)):
            os.remove(path)
    shutil.rmtree(os.path.join(out_dir, 'src'), ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(prog='corpus.py', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('cmd', choices=['lower', 'coverage', 'exports', 'list'])
    ap.add_argument('files', nargs='*')
    ap.add_argument('--out')
    ap.add_argument('--llvm-prefix', default=toolchain.llvm_prefix(),
                    help='default: $LLVM_PREFIX, else %s' % toolchain.DEFAULT_LLVM_PREFIX)
    ap.add_argument('--runtime', default=DEFAULT_RUNTIME)
    ap.add_argument('--reference')
    ap.add_argument('--mlir-version', type=int,
                    help='MLIR version of the toolchain (default: from --llvm-prefix, .../llvm-N)')
    a = ap.parse_args()
    files = corpus_files(a.files)
    try:
        version = toolchain.mlir_version(a.llvm_prefix, a.mlir_version)
    except ValueError as e:
        sys.exit('corpus.py: %s' % e)
    if a.cmd == 'list':
        for p in programs(files, substitutions(a.llvm_prefix, a.runtime, version.number)):
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
    if not a.out:
        sys.exit('corpus.py: %s needs --out DIR' % a.cmd)
    if a.cmd == 'lower':
        clean(a.out)
    progs, failed = lower_all(files, a.out, a.llvm_prefix, a.runtime,
                              quiet=(a.cmd == 'coverage'), version=version.number)
    for p in progs:
        if p['unsupported_reason']:
            sys.stderr.write('  UNSUPPORTED %s: %s\n' % (p['name'], p['unsupported_reason']))
    if a.cmd == 'lower':
        print(manifest.write(progs, a.out))
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
