#!/usr/bin/env python3
"""Stress the async runtime with every corpus program (docs/reliability.md).

For each program of mlir-tests (one per RUN line, lowered the way lit runs
it, through mlir-tests/lib/corpus.py):
  1. jit-harness runs it --runs times in one process with schedule fuzzing
     off, then --runs times with MLIR_ASYNC_RUNTIME_FUZZ=<seed>; every run's
     output is FileChecked and checked for leaked objects;
  2. --procs separate mlir-cpu-runner processes (half with fuzzing off, half
     on, each with its own seed), output piped to LLVM's FileCheck; a run
     whose runtime reports objects still alive at teardown is a leak.
Prints a table (program, mode, runs, failed, hung, leaked, seconds) and
exits 1 on any failure, hang or leak (2 on a usage or setup error).

  scripts/corpus/stress.py --runs 10000 --procs 200          # make stress
  scripts/corpus/stress.py --runs 300 --procs 10             # make stress-ci
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'mlir-tests', 'lib'))
import corpus  # noqa: E402
import harness  # noqa: E402
import rules  # noqa: E402
import toolchain  # noqa: E402

FUZZ_ENV = 'MLIR_ASYNC_RUNTIME_FUZZ'


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--runs', type=int, default=10000,
                    help='in-process runs per program and fuzz mode (0: skip)')
    ap.add_argument('--max-seconds', type=float, default=0,
                    help='cap each in-process mode at about this many seconds: a program '
                         'whose calibration run is slow gets fewer than --runs runs, never '
                         'fewer than --min-runs (0: no cap)')
    ap.add_argument('--min-runs', type=int, default=200,
                    help='floor of in-process runs under --max-seconds')
    ap.add_argument('--procs', type=int, default=200,
                    help='mlir-cpu-runner processes per program (0: skip)')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 2,
                    help='mlir-cpu-runner processes at a time')
    ap.add_argument('--seed', type=int, default=1,
                    help='base fuzz seed (each harness run and process adds its index)')
    ap.add_argument('--timeout', type=float, default=30.0,
                    help='seconds one run may take before it counts as hung')
    ap.add_argument('--runtime', default=os.path.join(ROOT, 'target', 'release',
                                                      'libmlir_async_runtime.so'))
    ap.add_argument('--harness', default=os.path.join(ROOT, 'target', 'release', 'jit-harness'))
    ap.add_argument('--llvm-prefix', default=toolchain.llvm_prefix(),
                    help='default: $LLVM_PREFIX, else %s' % toolchain.DEFAULT_LLVM_PREFIX)
    ap.add_argument('--out', default=os.path.join(ROOT, 'target', 'stress'),
                    help='directory for lowered programs and failure logs')
    ap.add_argument('--only', action='append', default=[],
                    help='run only this program (repeatable)')
    return ap.parse_args()


def skipped(prog, feats=None):
    """Why a program is not stressed, or None: lit's rule (rules.py) for the
    run's features (default: our runtime on the toolchain's MLIR), and an
    expected failure is not stressed either."""
    if feats is None:
        feats = rules.features('rust', toolchain.mlir_version().number, env=os.environ)
    expected, why = rules.expectation(prog, feats)
    return None if expected == 'pass' else why


def lower(args, out_dir):
    """Lowers every RUN line to LLVM dialect MLIR (for mlir-cpu-runner) and
    LLVM IR (for jit-harness) with the corpus's one recipe (corpus.lower_all,
    as `make corpus` does)."""
    only = set(args.only) if args.only else None
    progs, failed = corpus.lower_all(corpus.corpus_files(), out_dir, args.llvm_prefix,
                                     args.runtime, quiet=True, only=only)
    if failed:
        sys.exit('stress: %d program(s) did not lower (see above)' % failed)
    progs = [p for p in progs if 'll' in p]
    if not progs:
        sys.exit('stress: no corpus program selected')
    return progs


def program_env(prog, fuzz_seed):
    env = dict(os.environ)
    env.pop(FUZZ_ENV, None)
    env.update(harness.row_env(prog))
    if fuzz_seed is not None:
        env[FUZZ_ENV] = str(fuzz_seed)
    return env


def log_failure(args, name, text):
    path = os.path.join(args.out, 'failures', name + '.log')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'a') as f:
        f.write(text.rstrip() + '\n\n')
    return path


def harness_cmd(args, prog, tools, runs):
    cmd, _ = harness.for_row(args.harness, prog, args.runtime,
                             [tools['mlir_c_runner_utils'], tools['mlir_runner_utils']],
                             repeat=runs, timeout=args.timeout, json=True)
    return cmd


def planned_runs(args, prog, fuzz_seed, tools):
    """(runs, seconds a run): --runs, or fewer when --max-seconds is set and
    a short calibration (3 runs) says --runs would take longer (never fewer
    than --min-runs); the seconds a run as calibrated (0 without
    --max-seconds)."""
    if not args.max_seconds:
        return args.runs, 0.0
    start = time.monotonic()
    r = subprocess.run(harness_cmd(args, prog, tools, 3), env=program_env(prog, fuzz_seed),
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       timeout=600 + 3 * args.timeout)
    # The harness's own per-run time excludes its start-up (JIT compile);
    # fall back to wall time if it printed no summary.
    per_run = (time.monotonic() - start) / 3
    for line in r.stdout.splitlines():
        try:
            per_run = max(json.loads(line)['p99_us'] / 1e6, 1e-6)
        except (ValueError, KeyError, TypeError):
            pass
    return max(min(args.runs, int(args.max_seconds / per_run)), min(args.min_runs, args.runs)), per_run


def harness_row(args, prog, fuzz_seed, tools):
    """One jit-harness process running the program --runs times."""
    mode = 'harness, fuzz %s' % ('off' if fuzz_seed is None else 'seed %d' % fuzz_seed)
    runs, per_run = planned_runs(args, prog, fuzz_seed, tools)
    cmd = harness_cmd(args, prog, tools, runs)
    start = time.monotonic()
    row = {'program': prog['name'], 'mode': mode, 'runs': runs,
           'failed': 0, 'hung': 0, 'leaked': 0}
    if runs < args.runs:
        row['note'] = 'capped from %d runs by --max-seconds' % args.runs
    # Generous overall limit: the harness's own watchdog reports hung runs;
    # this only catches a harness that cannot report at all. --min-runs may
    # plan more runs than --max-seconds allows (nested-chain-1m under
    # fuzzing: 200 runs of 4.3 s, past a limit of 676 s with --max-seconds
    # 12, reported as hung): twice the calibrated time a run covers them.
    limit = 600 + runs * max(0.2, 2 * per_run) + (3 * args.max_seconds if args.max_seconds else 0)
    try:
        r = subprocess.run(cmd, env=program_env(prog, fuzz_seed), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=limit)
        summary = None
        for line in r.stdout.splitlines():
            line = line.strip()
            if line.startswith('{'):
                try:
                    summary = json.loads(line)
                except ValueError:
                    pass
        if summary is None:
            row['failed'] = 1
            row['note'] = 'no summary (exit %d)' % r.returncode
            log_failure(args, prog['name'], '%s\n$ %s\nexit %d\n%s\n%s' % (
                mode, shlex.join(cmd), r.returncode, r.stdout[-4000:], r.stderr[-4000:]))
        else:
            row.update(runs=summary['runs'], failed=summary['failed'],
                       hung=summary['hung'], leaked=summary['leaked'])
            if not summary.get('leak_check', False):
                row['failed'] += 1
                row['note'] = 'leak check off: %s' % summary.get('leak_check_note')
            if r.returncode != 0 or row['failed'] or row['hung'] or row['leaked']:
                row['note'] = summary.get('first_failure') or 'exit %d' % r.returncode
                if not (row['failed'] or row['hung'] or row['leaked']):
                    row['failed'] = 1
                log_failure(args, prog['name'], '%s\n$ %s\n%s\n%s' % (
                    mode, shlex.join(cmd), r.stdout[-4000:], r.stderr[-4000:]))
    except subprocess.TimeoutExpired:
        row['hung'] = 1
        row['note'] = 'harness did not finish in %.0f s' % limit
    row['seconds'] = time.monotonic() - start
    return row


def one_process(args, prog, tools, index):
    """One mlir-cpu-runner process piped to FileCheck: 'ok', 'failed', 'hung'
    or 'leaked', and a log text for failures."""
    fuzz_seed = None if index % 2 == 0 else args.seed + index
    runner = [tools['mlir_cpu_runner'], '-e', prog['entry'],
              '-entry-point-result=' + prog['entry_result'], '-O0',
              '-shared-libs=%s,%s,%s' % (tools['mlir_c_runner_utils'],
                                         tools['mlir_runner_utils'], args.runtime),
              prog['mlir']]
    env = program_env(prog, fuzz_seed)
    desc = 'process %d, fuzz %s\n$ %s%s' % (
        index, 'off' if fuzz_seed is None else fuzz_seed,
        '' if fuzz_seed is None else '%s=%d ' % (FUZZ_ENV, fuzz_seed), shlex.join(runner))
    try:
        r = subprocess.run(runner, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return 'hung', desc + '\ntimed out after %.0f s' % args.timeout
    stderr = r.stderr.decode(errors='replace')
    if r.returncode != 0:
        return 'failed', '%s\nexit %d\n%s' % (desc, r.returncode, stderr[-4000:])
    check = subprocess.run([tools['filecheck'], prog['check_file'],
                            '--check-prefix=' + prog['check_prefix']],
                           input=r.stdout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if check.returncode != 0:
        return 'failed', '%s\nFileCheck:\n%s' % (desc, check.stdout.decode(errors='replace')[-4000:])
    if 'still alive' in stderr:
        return 'leaked', '%s\n%s' % (desc, stderr[-4000:])
    return 'ok', None


def process_row(args, prog, tools, pool):
    start = time.monotonic()
    futures = [pool.submit(one_process, args, prog, tools, i) for i in range(args.procs)]
    row = {'program': prog['name'], 'mode': 'mlir-cpu-runner, fuzz off/on',
           'runs': args.procs, 'failed': 0, 'hung': 0, 'leaked': 0}
    for f in futures:
        outcome, text = f.result()
        if outcome != 'ok':
            row[outcome] += 1
            row.setdefault('note', log_failure(args, prog['name'], text))
    row['seconds'] = time.monotonic() - start
    return row


def print_table(rows):
    if not rows:
        return
    cols = ['program', 'mode', 'runs', 'failed', 'hung', 'leaked', 'seconds']
    cells = [[str(r[c]) if c != 'seconds' else '%.1f' % r[c] for c in cols] for r in rows]
    widths = [max(len(c), *(len(x[i]) for x in cells)) for i, c in enumerate(cols)]
    line = lambda xs: '  '.join(x.ljust(w) if i < 2 else x.rjust(w)
                                for i, (x, w) in enumerate(zip(xs, widths)))
    print(line(cols))
    print(line(['-' * w for w in widths]))
    for r, x in zip(rows, cells):
        print(line(x) + ('   ' + r['note'] if r.get('note') else ''))
    sys.stdout.flush()


def main():
    args = parse_args()
    for path in (args.runtime, args.harness if args.runs else None):
        if path and not os.path.exists(path):
            print('stress: %s not found (run make build)' % path, file=sys.stderr)
            return 2
    tools = toolchain.tools(args.llvm_prefix)
    kind = rules.runtime_kind(args.runtime, args.llvm_prefix)
    feats = rules.features(kind, toolchain.mlir_version(args.llvm_prefix).number, env=os.environ)
    progs = lower(args, os.path.join(args.out, 'corpus'))
    rows, skips = [], []
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for i, prog in enumerate(progs):
            why = skipped(prog, feats)
            if why:
                skips.append('%s (%s)' % (prog['name'], why))
                continue
            if args.runs:
                rows.append(harness_row(args, prog, None, tools))
                rows.append(harness_row(args, prog, args.seed + 1000 * (i + 1), tools))
            if args.procs:
                rows.append(process_row(args, prog, tools, pool))
            print('stress: %s done' % prog['name'], file=sys.stderr, flush=True)
    print_table(rows)
    bad = [r for r in rows if r['failed'] or r['hung'] or r['leaked']]
    total = sum(r['runs'] for r in rows)
    print('\n%d runs of %d programs in %.0f s; %d row(s) with failures%s' % (
        total, len(progs) - len(skips), time.monotonic() - started, len(bad),
        '; skipped: ' + ', '.join(skips) if skips else ''))
    if bad:
        print('failure logs: %s' % os.path.join(args.out, 'failures'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
