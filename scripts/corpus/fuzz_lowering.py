#!/usr/bin/env python3
"""Random scf.parallel and async.execute programs, each run against its
sequential reference through jit-harness --reference (docs/lowering-bugs.md).

Many programs make one batch: one module, one function per program
(@p0, @p1, ...; their dynamic bounds are arguments, so that the lowering
sees them as unknown), and a @main that calls them in turn; each prints one
line `pK <sum> <hash>` (or its reduction). A batch is lowered once, with one
random set of async-parallel-for options, and run once in one harness
process on our runtime with a random number of workers; the harness
compares the whole output with the sequential reference (the same module
lowered without async-parallel-for, run inline on the floor). When it says
the batch differs, the lines of the two outputs name the programs that do.

What varies: nest depth (scf.parallel in scf.parallel, scf.for in
scf.parallel, scf.parallel in async.execute), 1 to 3 dimensions, static
and dynamic lower bounds, upper bounds and steps, reductions (which
async-parallel-for leaves alone), async.execute with dependencies, values
and groups; the pass's async-dispatch, num-workers and min-task-size.

Every failing program is classified with a model of the known bug (the
block count of the block-aligned dispatch is computed from the unaligned
block size: docs/lowering-bugs.md); failures the model does not predict
are reported as new, with the batch kept in --out for inspection.

With --fixed-lowering the programs run through async-parallel-for-fixed,
the pass with our patches (make lowering-fixes, docs/lowering-bugs.md),
and every failure counts: the model's predictions are then the programs
the unpatched pass would fail (predicted_but_passed is expected).

  fuzz_lowering.py --programs 100000 --harness H --runtime SO --floor SO \\
      --libs LIBS [--mlir-version 22 --llvm-prefix P] [--seed S] [--batch N]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'mlir-tests', 'lib'))
import harness  # noqa: E402
import pipelines  # noqa: E402
import toolchain  # noqa: E402
# The program generator (scripts/corpus/fuzz_programs.py): the test
# programs, the pass options, the batch module.
from fuzz_programs import CALLS_PER_FUNCTION, GENERATORS, Fn, checksum_function, module, pass_options  # noqa: E402,F401



# ---- the model of the known bug (AsyncParallelFor.cpp, MLIR 19 and 22) ----

def oversharding(workers):
    factor = 8.0
    for begin, f in ((4, 4.0), (8, 2.0), (16, 1.0), (32, 0.8), (64, 0.6)):
        if workers > begin:
            factor = f
    return factor


def ceil_div(a, b):
    return -(-a // b)


def predicts_duplicates(trips, static, workers, min_task):
    """Whether async-parallel-for's block-aligned dispatch launches more
    blocks than the aligned block size needs (the extra blocks start past
    the end and wrap to the first rows): trips are the loop's trip counts,
    static[d] whether dimension d's trip count is a compile-time constant."""
    total = 1
    for t in trips:
        total *= t
    if total == 0:
        return False
    max_blocks = max(1, int(oversharding(workers) * workers))
    block = min(total, max(ceil_div(total, max_blocks), min_task))
    count = ceil_div(total, block)
    n = len(trips)
    iters = [0] * n
    iters[-1] = trips[-1] if static[-1] else 0
    unrollable = 0
    for d in range(n - 2, -1, -1):
        inner = iters[d + 1]
        iters[d] = (trips[d] if static[d] else 0) * inner
        if 0 < inner <= 512:
            unrollable += 1
    if unrollable == 0:
        return False
    aligned_iters = iters[n - unrollable]
    if block < aligned_iters:
        return False
    aligned = ceil_div(block, aligned_iters) * aligned_iters
    return count > ceil_div(total, aligned)


# ---- the generator ----------------------------------------------------------

def trips_of(loop, values):
    """The trip counts (as the pass computes them: ceil_div(ub - lb, step),
    negative when ub < lb) and static flags of a loop's dimensions for one
    call's argument values."""
    trips, static = [], []
    for d in loop:
        lb, ub, step = (values[src] if src is not None else v
                        for src, v in zip(d['src'], (d['lb'], d['ub'], d['step'])))
        trips.append(ceil_div(ub - lb, step))
        static.append(all(src is None for src in d['src']))
    return trips, static


def predicted(desc, values, workers, min_task):
    """True when the model of the known block-count bug predicts duplicate
    visits for this call that show in its output: the body runs (every
    dimension of the nest, inner scf.for included, has a positive trip
    count), and a rewritten loop of the nest gets too many blocks."""
    nest = desc['loops'] + ([desc['for_dims']] if desc.get('for_dims') else [])
    if any(t <= 0 for loop in nest for t in trips_of(loop, values)[0]):
        return False
    for loop in desc['loops']:
        trips, static = trips_of(loop, values)
        if all(t > 0 for t in trips) and predicts_duplicates(trips, static, workers, min_task):
            return True
    return False


def empty_dimension(desc, values):
    """True when a rewritten loop has a dimension with ub < lb (a negative
    trip count) in a multi-dimensional loop: the pass tests only the
    product of the trip counts for zero (docs/lowering-bugs.md), so such a
    loop may run iterations; whether it does depends on the signs, so this
    explains a failure but predicts none."""
    for loop in desc['loops']:
        trips, _ = trips_of(loop, values)
        if any(t < 0 for t in trips) and all(t != 0 for t in trips):
            return True
    return False


def batch(rng, first, count):
    """(module text, [descriptor per program], pass text, runtime workers).
    A program is one call of a generated function: a function whose bounds
    are all static is called once; one with dynamic bounds (its arguments)
    up to CALLS_PER_FUNCTION times, with the generated values first and then
    with values drawn anew (ub below lb included: zero and negative trip
    counts), each call its own program with its own output line."""
    front, workers, min_task = pass_options(rng)
    runtime_workers = rng.choice((1, 2, 3, 4))
    model_workers = runtime_workers if workers == -1 else workers
    funcs, groups, descs = [], [], []
    k = first
    fn = 0
    while k < first + count:
        f = Fn(k)
        gen = rng.choices([g for g, _ in GENERATORS], [w for _, w in GENERATORS])[0]
        d = gen(f, rng, model_workers, min_task, 'async-dispatch=false' not in front)
        params = ', '.join(['%pid: i64'] + ['%s: index' % n for n, _, _ in f.args])
        funcs.append('func.func @f%d(%s) {\n%s\n  return\n}\n' % (fn, params, '\n'.join(f.const_lines + f.lines)))
        n_calls = 1 if not f.args else min(CALLS_PER_FUNCTION, first + count - k)
        for c in range(n_calls):
            values = [v if c == 0 else sampler(rng) for _, v, sampler in f.args]
            names = ['%%k%d' % k] + ['%%m%d_%d' % (k, i) for i in range(len(values))]
            calls = ['  %s = arith.constant %d : i64' % (names[0], k)]
            for name, v in zip(names[1:], values):
                calls.append('  %s = arith.constant %d : index' % (name, v))
            calls.append('  func.call @f%d(%s) : (%s) -> ()' % (
                fn, ', '.join(names), ', '.join(['i64'] + ['index'] * len(values))))
            groups.append((k, calls))
            descs.append(dict(d, program=k, function=fn, args=values,
                              predicted=predicted(d, values, model_workers, min_task),
                              empty_dimension=empty_dimension(d, values)))
            k += 1
        fn += 1
    head = ''.join(checksum_function(r) for r in (1, 2, 3)) + ''.join(funcs)
    return head, groups, descs, front, runtime_workers, fn


def output_lines(path):
    """{program: line} of an output file."""
    out = {}
    try:
        with open(path, errors='replace') as f:
            for line in f:
                words = line.split(None, 2)
                if len(words) >= 2 and words[0] == 'p' and words[1].isdigit():
                    out[int(words[1])] = words[2].strip() if len(words) > 2 else ''

    except FileNotFoundError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--programs', type=int, default=2000, help='programs to run (default 2000)')
    ap.add_argument('--batch', type=int, default=500, help='programs per module (default 500)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--harness', required=True)
    ap.add_argument('--runtime', required=True, help='the runtime under test (ours)')
    ap.add_argument('--floor', required=True, help='the reference runtime')
    ap.add_argument('--libs', required=True, help='runner utils, comma-separated')
    ap.add_argument('--llvm-prefix', default=toolchain.llvm_prefix(),
                    help="the MLIR whose async-parallel-for runs (default: $LLVM_PREFIX's, "
                         "MLIR 19); the rest of the lowering and the JIT are $LLVM_PREFIX's")
    ap.add_argument('--out', default=os.path.join(ROOT, 'target', 'fuzz-lowering'))
    ap.add_argument('--timeout', type=float, default=120)
    ap.add_argument('--from-batch', type=int, default=1, metavar='N',
                    help='generate the earlier batches but run from batch N on (to reproduce one)')
    ap.add_argument('--expect-known', action='store_true',
                    help='exit 0 when every failing program is one the model of the known bug '
                         'predicts (make test); otherwise any failure fails')
    ap.add_argument('--fixed-lowering', action='store_true',
                    help='run async-parallel-for-fixed, the patched pass of make lowering-fixes, '
                         'instead of async-parallel-for: any failure fails')
    a = ap.parse_args()

    version = pipelines.version_of_prefix(a.llvm_prefix)
    v19 = toolchain.mlir_version()  # the JIT's toolchain: $LLVM_PREFIX, MLIR 19
    plugin_flags = []
    if a.fixed_lowering:
        try:
            plugin = pipelines.load()[version].plugin()
        except (ValueError, KeyError) as e:
            sys.exit('fuzz-lowering: --fixed-lowering: %s' % e)
        # The harness renames the pass (pipelines.txt's fixed-parallel-for)
        # and loads the plugin that pipelines.py found and checked.
        plugin_flags = ['--fixed-lowering', '--pass-plugin', plugin]
    os.makedirs(a.out, exist_ok=True)
    env = toolchain.toolchain_env(a.llvm_prefix)
    rng = random.Random(a.seed)
    stats = {'mlir': version, 'fixed_lowering': a.fixed_lowering, 'seed': a.seed, 'programs': 0, 'functions': 0, 'batches': 0, 'failed': 0,
             'predicted_and_failed': 0, 'predicted_but_passed': 0, 'empty_dimension_failed': 0,
             'unexplained': 0, 'crashed': 0,
             'batch_errors': 0, 'by_kind': {}}
    tag = 'mlir%d%s-seed%d' % (version, '-fixed' if a.fixed_lowering else '', a.seed)
    findings_path = os.path.join(a.out, 'findings-%s.jsonl' % tag)
    findings = open(findings_path, 'w')
    start = time.time()
    done = 0
    def run(head, groups, repeat=1):
        """Lowers and runs a module of `groups` once (or `repeat` times) in one
        harness process against the reference: (harness process, outputs by
        program of the run and of the reference, whether the harness
        crashed or could not compare)."""
        src = os.path.join(a.out, 'batch.mlir')
        with open(src, 'w') as f:
            f.write(module(head, groups))
        ref_out, run_out = os.path.join(a.out, 'reference.out'), os.path.join(a.out, 'run.out')
        cmd = harness.command(a.harness, src, a.runtime, a.libs,
                              pipeline=v19.pipeline(async_func=False, front=front),
                              reference_runtime=a.floor, timeout=a.timeout, json=True,
                              repeat=repeat,
                              extra=['--save-reference', ref_out, '--save-output', run_out] + plugin_flags)
        if version != v19.number:
            cmd += ['--front-mlir-bin', os.path.join(a.llvm_prefix, 'bin')]
        for path in (ref_out, run_out):
            if os.path.exists(path):
                os.remove(path)
        p = subprocess.run(cmd, env=dict(env, MLIR_ASYNC_RUNTIME_WORKERS=str(runtime_workers)),
                           capture_output=True, text=True)
        broken = (p.returncode not in (0, 1) or not os.path.exists(run_out)
                  or 'sequential reference run failed' in p.stderr)
        return p, output_lines(run_out), output_lines(ref_out), broken

    def crashing(head, groups):
        """The programs of `groups` that crash the harness (a miscompiled
        program can write out of bounds and corrupt the heap), by
        bisection. The heap's checks catch a corruption at a later malloc
        or free, so a corrupting program can run alone unnoticed: when
        neither half crashes, each program runs alone, 5 times; when none
        crashes so, the set is returned whole."""
        if len(groups) == 1:
            return [groups[0][0]]
        halves = (groups[:len(groups) // 2], groups[len(groups) // 2:])
        found = []
        for h in halves:
            if run(head, h, repeat=3)[3]:
                found += crashing(head, h)
        if not found:
            found = [k for k, lines in groups if run(head, [(k, lines)], repeat=5)[3]]
        return found or [k for k, _ in groups]

    batch_no = 0
    while done < a.programs:
        count = min(a.batch, a.programs - done)
        head, groups, descs, front, runtime_workers, functions = batch(rng, done, count)
        batch_no += 1
        done += count
        if batch_no < a.from_batch:
            continue
        stats['functions'] += functions
        p, got, want, broken = run(head, groups)
        stats['batches'] += 1
        stats['programs'] += count
        for d in descs:
            stats['by_kind'][d['kind']] = stats['by_kind'].get(d['kind'], 0) + 1
        crashed = set()
        if broken:
            why = (p.stderr.strip().splitlines() or ['?'])[-1]
            crashed = set(crashing(head, groups))
            sys.stderr.write('fuzz-lowering: batch %d: harness exit %d (%s): crashed by program(s) %s\n'
                             % (batch_no, p.returncode, why, ' '.join(map(str, sorted(crashed)))))
            p, got, want, broken = run(head, [g for g in groups if g[0] not in crashed])
        if broken:
            stats['batch_errors'] += 1
            keep = os.path.join(a.out, 'error-%s-batch%d.mlir' % (tag, batch_no))
            os.replace(os.path.join(a.out, 'batch.mlir'), keep)
            why = (p.stderr.strip().splitlines() or ['?'])[-1]
            findings.write(json.dumps({'batch_error': why, 'kept': keep, 'front': front}) + '\n')
            sys.stderr.write('fuzz-lowering: batch %d: harness exit %d: %s (kept %s)\n'
                             % (batch_no, p.returncode, why, keep))
            continue
        new_in_batch = False
        batch_failed = 0
        for d in descs:
            k = d['program']
            failed = k in crashed or got.get(k) != want.get(k)
            if failed:
                batch_failed += 1
                stats['failed'] += 1
                stats['crashed'] += k in crashed
                if a.fixed_lowering:
                    stats['unexplained'] += 1
                    new_in_batch = True
                elif d['predicted']:
                    stats['predicted_and_failed'] += 1
                elif d['empty_dimension']:
                    stats['empty_dimension_failed'] += 1
                else:
                    stats['unexplained'] += 1
                    new_in_batch = True
                findings.write(json.dumps(dict(d, front=front, runtime_workers=runtime_workers,
                                               crashed=k in crashed, got=got.get(k),
                                               reference=want.get(k))) + '\n')
            elif d['predicted']:
                stats['predicted_but_passed'] += 1
        if p.returncode == 1 and batch_failed == len(crashed):
            # The harness saw a difference the per-program lines do not show.
            new_in_batch = True
            stats['unexplained'] += 1
        if new_in_batch:
            keep = os.path.join(a.out, 'unexplained-%s-batch%d.mlir' % (tag, batch_no))
            with open(keep, 'w') as f:
                f.write(module(head, groups))
            sys.stderr.write('fuzz-lowering: batch %d: a failure the known bugs do not explain (kept %s)\n'
                             % (batch_no, keep))
        secs = time.time() - start
        sys.stderr.write('\rfuzz-lowering: MLIR %d%s: %d/%d programs, %d failed (%d aligned blocks, %d empty '
                         'dimension, %d unexplained; %d crashed), %d batch errors, %.1f programs/s '
                         % (version, ' fixed' if a.fixed_lowering else '', done, a.programs, stats['failed'], stats['predicted_and_failed'],
                            stats['empty_dimension_failed'], stats['unexplained'], stats['crashed'],
                            stats['batch_errors'], stats['programs'] / max(secs, 1e-9)))
    findings.close()
    secs = time.time() - start
    stats['seconds'] = round(secs, 1)
    stats['programs_per_second'] = round(stats['programs'] / max(secs, 1e-9), 1)
    stats['findings'] = findings_path
    sys.stderr.write('\n')
    print(json.dumps(stats))
    if a.fixed_lowering:
        # The patched pass: the model's predictions are the unpatched
        # pass's failures, and any failure is one too many.
        return 1 if stats['failed'] or stats['unexplained'] or stats['batch_errors'] else 0
    bad = stats['unexplained'] or stats['batch_errors'] or stats['predicted_but_passed']
    if a.expect_known:
        return 1 if bad else 0
    return 1 if bad or stats['failed'] else 0


if __name__ == '__main__':
    sys.exit(main())
