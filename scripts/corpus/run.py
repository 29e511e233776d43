#!/usr/bin/env python3
"""Runs every program of the lowered corpus (target/corpus/manifest.tsv,
written by `make corpus`) through jit-harness, N checked runs each, against
one runtime library; one result row per program, then a summary line.
This is `make run` (mk/harness.mk).

  scripts/corpus/run.py --harness H --runtime SO [--runner-utils A.so,B.so]
      [--kind rust|cxx|floor] [--llvm-prefix P] [--repeat N] [--timeout S] MANIFEST

The runtime's kind (lit's feature rust-runtime, cxx-runtime or
floor-runtime) is cxx when SO lies under the LLVM prefix, unless --kind
says. Which programs run is lit's rule (mlir-tests/lib/rules.py), on the
manifest's requires/unsupported/xfail columns:
  REQUIRES     skipped unless every expression holds
  UNSUPPORTED  skipped when one holds (for example a program that hangs
               there: it is never started)
  XFAIL        a failure is expected and not counted; it is one line,
               `expected failure: NAME: ...; XFAIL: ..., see docs/X.md`
               (the doc the program names), with no FileCheck dump or
               crash report unless --verbose
Exit status: 0 when no program failed, 1 otherwise, 2 on bad arguments.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'mlir-tests', 'lib'))
import harness  # noqa: E402
import manifest  # noqa: E402
import rules  # noqa: E402
import toolchain  # noqa: E402


def parse_args(argv):
    ap = argparse.ArgumentParser(prog='run.py', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--harness', required=True)
    ap.add_argument('--runtime', required=True)
    ap.add_argument('--runner-utils', default='', help='comma-separated shared libraries')
    ap.add_argument('--kind', choices=rules.KINDS)
    ap.add_argument('--llvm-prefix', default=toolchain.llvm_prefix(),
                    help='default: $LLVM_PREFIX, else %s' % toolchain.DEFAULT_LLVM_PREFIX)
    ap.add_argument('--repeat', type=int, default=100)
    ap.add_argument('--timeout', type=int, default=30)
    ap.add_argument('--verbose', '-v', action='store_true',
                    help="describe an expected failure's runs in full too (FileCheck's dump)")
    ap.add_argument('manifest')
    return ap.parse_args(argv)


def run_expected_failure(name, note, cmd, env, verbose):
    """Runs an XFAIL program; prints its one line (all the harness said,
    with --verbose). True if it failed, as expected. A crash or a hang ends
    the harness before its summary: the line then gives the harness's first
    message."""
    if verbose:
        return subprocess.run(cmd, env=dict(os.environ, **env), stdin=subprocess.DEVNULL).returncode != 0
    r = subprocess.run(cmd, env=dict(os.environ, **env), stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, errors='replace')
    lines = r.stdout.splitlines()
    if r.returncode == 0:
        print(lines[-1] if lines else '%s: passed, though expected to fail (%s)' % (name, note), flush=True)
        return False
    said = [l for l in lines if l.startswith('expected failure: ')]
    if said:
        print(said[-1], flush=True)
    else:
        first = next((l for l in r.stderr.splitlines() if l.strip()), 'exit status %d' % r.returncode)
        first = first.removeprefix('jit-harness: ')
        print('expected failure: %s: %s; %s' % (name, first, note), flush=True)
    return True


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    for f in (a.harness, a.runtime, a.manifest):
        if not os.path.exists(f):
            print('run.py: %s not found' % f, file=sys.stderr)
            return 2
    try:
        rows = manifest.read(a.manifest)
        kind = a.kind or rules.runtime_kind(a.runtime, a.llvm_prefix)
        feats = rules.features(kind, toolchain.mlir_version(a.llvm_prefix).number, env=os.environ)
    except ValueError as e:
        print('run.py: %s' % e, file=sys.stderr)
        return 2
    feature = kind + '-runtime'
    total = bad = skipped = xfailed = 0
    print('jit-harness: %d runs per program against %s (%s)' % (a.repeat, a.runtime, feature),
          flush=True)
    for row in rows:
        expected, why = rules.expectation(row, feats)
        if expected == 'unsupported':
            print('%s: skipped (%s on %s)' % (row['name'], why, feature)
                  if not why.startswith('UNSUPPORTED') else
                  '%s: skipped (unsupported on %s)' % (row['name'], feature), flush=True)
            skipped += 1
            continue
        note = rules.xfail_note(row, why) if expected == 'xfail' else None
        cmd, env = harness.for_row(a.harness, row, a.runtime, a.runner_utils, repeat=a.repeat,
                                   timeout=a.timeout, expect_failure=note, verbose=a.verbose)
        total += 1
        if note is None:
            ok = subprocess.run(cmd, env=dict(os.environ, **env), stdin=subprocess.DEVNULL).returncode == 0
            bad += not ok
            continue
        if run_expected_failure(row['name'], note, cmd, env, a.verbose):
            xfailed += 1
    print('jit-harness: %d passed, %d failed, %d expected failures, %d skipped'
          % (total - bad - xfailed, bad, xfailed, skipped))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
