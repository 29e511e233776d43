#!/usr/bin/env python3
"""Deterministic schedules (docs/exploration.md) over the project's programs.

  explore.py corpus   every corpus program of target/corpus/manifest.tsv under
                      a few seeds of both strategies (jit-harness --explore),
                      and replayed twice in one process with the same output
                      (--replay --repeat 2): what passes normally must pass in
                      the deterministic mode too (make explore-ci, make test).
                      With --reference, every run is also compared with the
                      program's sequential reference (jit-harness --reference:
                      the program lowered from its MLIR source without
                      async-parallel-for, run on the floor), and each program
                      runs once more without a deterministic schedule; XFAIL
                      programs run that once only and must fail (an XPASS
                      fails).
  explore.py table    the runs-to-failure table of the racy programs
                      (mlir-tests/racy/): runs of the multithreaded runtime
                      with and without MLIR_ASYNC_RUNTIME_FUZZ until the
                      failure shows, schedules --explore needs (random, PCT),
                      and --replay reproducing it in 100 of 100 processes
                      (same output bytes, same trace file). --write FILE puts
                      the table between the explore-table markers of FILE.
"""
import argparse
import hashlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'mlir-tests', 'lib'))
import harness  # noqa: E402
import lowering  # noqa: E402
import manifest  # noqa: E402
import rules  # noqa: E402
import toolchain  # noqa: E402


def harness_json(cmd, env=None, timeout=600):
    """Runs the harness with --json; (exit code, summary dict or None, stderr)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env=full_env, timeout=timeout)
    summary = None
    lines = p.stdout.strip().splitlines()
    if lines:
        try:
            summary = json.loads(lines[-1])
        except json.JSONDecodeError:
            pass
    return p.returncode, summary, p.stderr


def corpus(a):
    light = set(filter(None, a.light.split(',')))
    failures = 0
    # The failing programs' lines again at the end: CI keeps only the tail
    # of a long log, and the line that names the failure must be in it.
    failed_lines = []
    total_start = time.time()
    print(f"explore: {a.schedules} schedule(s) per strategy from seed {a.seed}, then a replay "
          f"twice in one process; light programs ({', '.join(sorted(light)) or 'none'}): one "
          f"schedule per strategy, no replay")
    if a.reference:
        print('explore: every run also compared with its sequential reference (jit-harness --reference)')
    xfailed = 0
    # What lit's rule (rules.py) says for a run on our runtime, and for the
    # reference's runtime, the floor: a program UNSUPPORTED on the floor
    # (with its reason in the program) has no reference.
    mlir = toolchain.mlir_version(toolchain.prefix_of_bin(a.mlir_bin)).number
    # Our runtime under a deterministic schedule: one task at a time.
    feats, reference_feats = rules.features('rust', mlir, deterministic=True), rules.features('floor', mlir)
    for row in manifest.read(a.manifest):
        expected, why = rules.expectation(row, feats)
        if expected == 'unsupported' or (expected == 'xfail' and not a.reference):
            continue
        no_reference, no_reference_why = rules.expectation(row, reference_feats)
        no_reference = no_reference == 'unsupported'
        reference = (a.reference, a.mlir_bin) if a.reference and row['pipeline'] else None
        if no_reference:
            reference = None
        elif a.reference and not reference:
            failed_lines.append(f"{row['name']:30} FAIL  no pipeline in the manifest: the reference needs it")
            print(failed_lines[-1])
            failures += 1
            continue
        args, env = harness.for_row(a.harness, row, a.runtime, a.libs, reference)
        n = 1 if row['name'] in light else a.schedules
        # A light program's deterministic run is millions of baton handoffs
        # (nested-chain-1m: 5M steps, 70-110 s here, more on a slower CI
        # machine): it gets its own, longer limit.
        timeout = a.light_timeout if row['name'] in light else a.timeout
        if expected == 'xfail':
            start = time.time()
            code, summary, err = harness_json(args + ['--json', '--timeout', str(timeout)], env,
                                              timeout=timeout * 3)
            secs = time.time() - start
            if code == 1 and summary and summary['failed']:
                xfailed += 1
                print(f"expected failure: {row['name']}: {summary.get('first_failure', '')[:160]}; "
                      f"{rules.xfail_note(row, why)} ({secs:.1f}s)", flush=True)
            else:
                failures += 1
                failed_lines.append(f"{row['name']:30} FAIL  XPASS: {why}, but it passed (exit {code})")
                print(failed_lines[-1], flush=True)
            continue
        runs = []
        if a.reference:
            runs.append(('once', args + ['--json']))
        runs += [('random', args + ['--explore', str(n), '--seed', str(a.seed), '--json']),
                 ('pct', args + ['--explore', str(n), '--seed', str(a.seed), '--strategy', 'pct', '--json'])]
        if row['name'] not in light:
            runs.append(('replay', args + ['--replay', str(a.seed), '--repeat', '2', '--json']))
        cells = []
        ok = True
        for label, cmd in runs:
            start = time.time()
            try:
                code, summary, err = harness_json(cmd + ['--timeout', str(timeout)], env, timeout=timeout * (n + 3))
            except subprocess.TimeoutExpired:
                code, summary, err = -1, None, 'timed out'
            secs = time.time() - start
            if code == 0 and summary:
                sched = summary.get('schedule', {})
                extra = f", k={sched['steps']}" if label == 'pct' and sched.get('steps') else ''
                cells.append(f"{label} {summary['passed']}/{summary['runs']}{extra} {secs:.1f}s")
            else:
                ok = False
                why = (summary or {}).get('first_failure') or (err.strip().splitlines() or ['?'])[-1]
                cells.append(f"{label} FAILED ({why[:200]})")
                if summary and summary.get('schedule', {}).get('replay'):
                    cells.append('replay: ' + summary['schedule']['replay'])
        failures += 0 if ok else 1
        if a.reference and no_reference:
            cells.append(f'no reference ({no_reference_why} in the program)')
        line = f"{row['name']:30} {'pass' if ok else 'FAIL'}  " + '; '.join(cells)
        print(line, flush=True)
        if not ok:
            failed_lines.append(line)
    for line in failed_lines:
        print(f"explore: failed: {line}")
    print(f"explore: {failures} program(s) failed, {xfailed} expected failure(s), "
          f"{time.time() - total_start:.0f} s")
    return 1 if failures else 0


def first_failing_run(summary):
    f = summary.get('first_failure') or ''
    if f.startswith('run '):
        return int(f.split()[1].rstrip(':'))
    return None


def replay_many(command, times, tmp):
    """Runs a printed replay command `times` times with --echo and --trace;
    (runs that failed their check again, identical outputs, identical traces)."""
    outputs, traces, failed = [], [], 0
    for i in range(times):
        trace = os.path.join(tmp, f'replay-{i}.json')
        extra = f' --echo --trace {shlex.quote(trace)}' + ('' if ' --json' in command else ' --json')
        p = subprocess.run(command + extra, shell=True, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        lines = p.stdout.splitlines()
        if not lines:
            sys.exit(f'explore table: the replay printed nothing: {command}{extra}\n{p.stderr}')
        summary = json.loads(lines[-1])
        failed += 1 if p.returncode == 1 and summary['failed'] == 1 else 0
        outputs.append(hashlib.sha256('\n'.join(lines[:-1]).encode()).hexdigest())
        with open(trace, 'rb') as f:
            traces.append(hashlib.sha256(f.read()).hexdigest())
        os.remove(trace)
    return failed, outputs.count(outputs[0]), traces.count(traces[0])


def table(a):
    racy_dir = os.path.join(ROOT, 'mlir-tests/racy')
    names = sorted(f[:-5] for f in os.listdir(racy_dir) if f.endswith('.mlir'))
    if a.only:
        names = [n for n in names if n in a.only.split(',')]
    tmp = tempfile.mkdtemp(prefix='explore-table-')
    rows = []
    for name in names:
        src = os.path.join(racy_dir, name + '.mlir')
        ll = os.path.join(tmp, name + '.ll')
        # The pipeline of --llvm-bin's MLIR version, by the one recipe.
        lowering.lower_file(src, ll, prefix=toolchain.prefix_of_bin(a.llvm_bin))
        base = harness.command(a.harness, ll, a.runtime, a.libs, check=src, json=True)
        row = {'name': name}
        for label, env in (('threads', {}), ('fuzz', {'MLIR_ASYNC_RUNTIME_FUZZ': '1'})):
            _, s, _ = harness_json(base + ['--repeat', str(a.runs)], env)
            row[label] = (first_failing_run(s), s['failed'] + s['leaked'], s['runs'])
        for strategy in ('random', 'pct'):
            needed = []
            first = None
            for start in range(a.starts):
                seed = 1 + 1000 * start
                cmd = base + ['--explore', str(a.max_schedules), '--seed', str(seed)]
                if strategy == 'pct':
                    cmd += ['--strategy', 'pct']
                _, s, _ = harness_json(cmd)
                sched = s['schedule']
                if sched.get('failing_seed') is None:
                    needed.append(None)
                    continue
                # PCT's calibration run is counted in `schedules` too.
                needed.append(sched['schedules'])
                if first is None:
                    first = sched
            row[strategy] = needed
            if first is not None:
                row[strategy + '_replay'] = (first['failing_seed'],) + replay_many(first['replay'], a.replays, tmp)
            else:
                row[strategy + '_replay'] = None
        rows.append(row)
        print(f"explore table: {name} done", file=sys.stderr, flush=True)
    text = render(rows, a)
    print(text)
    if a.write:
        with open(a.write) as f:
            doc = f.read()
        begin, end = '<!-- explore-table:begin', '<!-- explore-table:end -->'
        i, j = doc.index(begin), doc.index(end)
        i = doc.index('\n', i) + 1
        with open(a.write, 'w') as f:
            f.write(doc[:i] + text + '\n' + doc[j:])
    return 0


def render(rows, a):
    def seen(cell):
        first, bad, runs = cell
        if first is None:
            return f"not seen in {runs:,}"
        return f"run {first:,} ({bad:,} of {runs:,} fail)"

    def needed(cells):
        found = [c for c in cells if c is not None]
        if not found:
            return f"not found in {a.max_schedules} ({a.starts} starts)"
        missed = len(cells) - len(found)
        s = f"median {statistics.median(found):g}, max {max(found)}"
        return s + (f", {missed} of {len(cells)} starts found none in {a.max_schedules}" if missed else '')

    def replayed(cell):
        if cell is None:
            return '-'
        seed, failed, outs, traces = cell
        return f"seed {seed}: {failed}/{a.replays} fail, {outs}/{a.replays} same output, {traces}/{a.replays} same trace"

    out = [f"| program | multithreaded runtime, {a.runs:,} runs: first failure | with MLIR_ASYNC_RUNTIME_FUZZ=1 "
           f"| --explore, random: schedules to the failure | --explore, PCT depth 3: schedules to the failure "
           f"| --replay of random's seed, {a.replays} processes | --replay of PCT's seed, {a.replays} processes |",
           '|---|---|---|---|---|---|---|']
    for r in rows:
        out.append(f"| `{r['name']}` | {seen(r['threads'])} | {seen(r['fuzz'])} | {needed(r['random'])} "
                   f"| {needed(r['pct'])} | {replayed(r['random_replay'])} | {replayed(r['pct_replay'])} |")
    return '\n'.join(out)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest='cmd', required=True)
    for name in ('corpus', 'table'):
        s = sub.add_parser(name)
        s.add_argument('--harness', required=True)
        s.add_argument('--runtime', required=True)
        s.add_argument('--libs', required=True, help='comma-separated runner utils')
    c = sub.choices['corpus']
    c.add_argument('--manifest', required=True)
    c.add_argument('--schedules', type=int, default=2)
    c.add_argument('--seed', type=int, default=1)
    c.add_argument('--light', default='', help='programs run with one schedule per strategy, no replay')
    c.add_argument('--timeout', type=int, default=120, help='seconds a run may take (jit-harness --timeout)')
    c.add_argument('--light-timeout', type=int, default=600,
                   help="seconds a run of a --light program may take")
    c.add_argument('--reference', metavar='FLOOR_SO',
                   help='also compare every run with the sequential reference, run on FLOOR_SO')
    c.add_argument('--mlir-bin', default=toolchain.bin_dir(),
                   help='mlir-opt and mlir-translate for --reference (default: $LLVM_PREFIX/bin); '
                        'its MLIR version gives the features of the skip rule')
    t = sub.choices['table']
    t.add_argument('--llvm-bin', default=toolchain.bin_dir(),
                   help='the toolchain that lowers the racy programs, with its MLIR '
                        "version's pipeline (default: $LLVM_PREFIX/bin)")
    t.add_argument('--runs', type=int, default=10000)
    t.add_argument('--starts', type=int, default=20, help='explorations from different first seeds')
    t.add_argument('--max-schedules', type=int, default=1000)
    t.add_argument('--replays', type=int, default=100)
    t.add_argument('--only', default='')
    t.add_argument('--write', help='a file with explore-table markers to update')
    return p.parse_args(argv)


def main():
    a = parse_args()
    sys.exit(corpus(a) if a.cmd == 'corpus' else table(a))


if __name__ == '__main__':
    main()
