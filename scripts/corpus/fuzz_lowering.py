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

class Fn:
    """One program's function body, with fresh SSA names."""

    def __init__(self, k):
        self.k = k
        self.lines = []
        self.args = []       # (name, value) of the dynamic arguments
        self.n = 0
        self.consts = {}
        self.const_lines = []  # hoisted to the entry block: they dominate every use

    def fresh(self, base='v'):
        self.n += 1
        return '%%%s%d' % (base, self.n)

    def emit(self, text, depth=1):
        self.lines.append('  ' * depth + text)

    def const(self, value, ty='index'):
        key = (value, ty)
        if key not in self.consts:
            name = self.fresh('c')
            self.const_lines.append('  %s = arith.constant %d : %s' % (name, value, ty))
            self.consts[key] = name
        return self.consts[key]

    def value(self, v, dynamic, sampler=None):
        """An index: a constant, or an argument of the function (dynamic),
        whose value for each further call `sampler(rng)` draws."""
        if not dynamic:
            return self.const(v)
        name = '%%a%d' % len(self.args)
        self.args.append((name, v, sampler))
        return name

    def bound(self, d, which):
        """A loop dimension's lb (0), ub (1) or step (2), recording in d['src']
        the argument it comes from when dynamic."""
        size = d['size']
        samplers = (lambda r: r.randrange(0, min(4, size)),
                    lambda r: r.randrange(0, size + 1),
                    lambda r: r.choice((1, 1, 2, 3)))
        value = (d['lb'], d['ub'], d['step'])[which]
        name = self.value(value, d['dyn'][which], samplers[which])
        d['src'][which] = len(self.args) - 1 if d['dyn'][which] else None
        return name


def loop_dims(rng, ndims, sizes):
    """Per dimension (lb, ub, step, static trip count?, which dynamic) within size."""
    dims = []
    for d in range(ndims):
        size = sizes[d]
        step = rng.choice((1, 1, 1, 2, 3)) if rng.random() < 0.4 else 1
        lb = rng.randrange(0, min(4, size)) if rng.random() < 0.35 else 0
        ub = rng.randrange(lb + 1, size + 1) if rng.random() < 0.4 else size
        dyn = [rng.random() < 0.3 for _ in range(3)]  # lb, ub, step
        dims.append({'lb': lb, 'ub': ub, 'step': step, 'dyn': dyn, 'size': size,
                     'src': [None, None, None]})
    return dims


def sizes_for(rng, ndims):
    if ndims == 1:
        return [rng.choice((rng.randrange(1, 40), rng.randrange(1, 1200)))]
    if ndims == 2:
        return [rng.randrange(1, 48), rng.randrange(1, 48)]
    return [rng.randrange(1, 12), rng.randrange(1, 12), rng.randrange(1, 12)]


def memref_type(sizes):
    return 'memref<%sxi64>' % 'x'.join(str(s) for s in sizes)


def open_parallel(f, dims, ivs, depth):
    lbs = [f.bound(d, 0) for d in dims]
    ubs = [f.bound(d, 1) for d in dims]
    steps = [f.bound(d, 2) for d in dims]
    f.emit('scf.parallel (%s) = (%s) to (%s) step (%s) {' % (
        ', '.join(ivs), ', '.join(lbs), ', '.join(ubs), ', '.join(steps)), depth)


def increment(f, V, ty, ivs, depth):
    one = f.const(1, 'i64')
    x, y = f.fresh(), f.fresh()
    f.emit('%s = memref.load %s[%s] : %s' % (x, V, ', '.join(ivs), ty), depth)
    f.emit('%s = arith.addi %s, %s : i64' % (y, x, one), depth)
    f.emit('memref.store %s, %s[%s] : %s' % (y, V, ', '.join(ivs), ty), depth)


def checksum_function(rank):
    """@sumN(memref<?x...xi64>) -> (sum, sum of V[idx] * (linear index + 1)),
    shared by every program of a batch (one copy, not one per program:
    the batch's size is what lowering and JIT time grow with)."""
    ty = 'memref<%sxi64>' % 'x'.join('?' * rank)
    lines = ['func.func @sum%d(%%V: %s) -> (i64, i64) {' % (rank, ty),
             '  %c0 = arith.constant 0 : index', '  %c1 = arith.constant 1 : index',
             '  %z = arith.constant 0 : i64', '  %w1 = arith.constant 1 : i64']
    for d in range(rank):
        lines.append('  %%n%d = memref.dim %%V, %%c%d : %s' % (d, d, ty) if d < 2 else
                     '  %%k%d = arith.constant %d : index\n  %%n%d = memref.dim %%V, %%k%d : %s' % (d, d, d, d, ty))
    acc_s, acc_h = '%z', '%z'
    for d in range(rank):
        lines.append('  ' * (d + 1) + '%%r%d:2 = scf.for %%i%d = %%c0 to %%n%d step %%c1 iter_args(%%s%d = %s, %%h%d = %s) -> (i64, i64) {'
                     % (d, d, d, d, acc_s, d, acc_h))
        acc_s, acc_h = '%%s%d' % d, '%%h%d' % d
    ind = '  ' * (rank + 1)
    lin = '%c0'
    for d in range(rank):
        lines.append(ind + '%%m%d = arith.muli %s, %%n%d : index' % (d, lin, d))
        lines.append(ind + '%%l%d = arith.addi %%m%d, %%i%d : index' % (d, d, d))
        lin = '%%l%d' % d
    ivs = ', '.join('%%i%d' % d for d in range(rank))
    lines += [ind + '%%x = memref.load %%V[%s] : %s' % (ivs, ty),
              ind + '%%li = arith.index_cast %s : index to i64' % lin,
              ind + '%w = arith.addi %li, %w1 : i64',
              ind + '%p = arith.muli %x, %w : i64',
              ind + '%%sum = arith.addi %s, %%x : i64' % acc_s,
              ind + '%%hash = arith.addi %s, %%p : i64' % acc_h]
    result = ('%sum', '%hash')
    for d in range(rank - 1, -1, -1):
        lines.append('  ' * (d + 2) + 'scf.yield %s, %s : i64, i64' % result)
        lines.append('  ' * (d + 1) + '}')
        result = ('%%r%d#0' % d, '%%r%d#1' % d)
    lines.append('  return %s, %s : i64, i64' % result)
    lines.append('}')
    return '\n'.join(lines) + '\n'


def checksum(f, V, sizes, ty):
    """The checksum of V through the shared @sumN."""
    rank = len(sizes)
    dyn = 'memref<%sxi64>' % 'x'.join('?' * rank)
    D, r = f.fresh('D'), f.fresh('r')
    f.emit('%s = memref.cast %s : %s to %s' % (D, V, ty, dyn))
    f.emit('%s:2 = func.call @sum%d(%s) : (%s) -> (i64, i64)' % (r, rank, D, dyn))
    return ('%s#0' % r, '%s#1' % r)


def print_line(f, values):
    f.emit('vector.print str "p "')
    f.emit('vector.print %pid : i64 punctuation <no_punctuation>')
    f.emit('vector.print str " "')
    for i, v in enumerate(values):
        last = i == len(values) - 1
        f.emit('vector.print %s : i64%s' % (v, '' if last else ' punctuation <no_punctuation>'))
        if not last:
            f.emit('vector.print str " "')


def gen_parallel(f, rng, workers, min_task, parallel_inside=True):
    """scf.parallel over 1-3 dims incrementing V; possibly an inner scf.parallel
    or scf.for over further dims. Returns the loops' descriptors."""
    total = rng.choice((1, 1, 2, 2, 2, 3))
    outer_n = total if total == 1 or rng.random() < 0.6 else rng.randrange(1, total)
    sizes = sizes_for(rng, total)
    ty = memref_type(sizes)
    V = f.fresh('V')
    f.emit('%s = memref.alloc() : %s' % (V, ty))
    f.emit('linalg.fill ins(%s : i64) outs(%s : %s)' % (f.const(0, 'i64'), V, ty))
    dims = loop_dims(rng, total, sizes)
    outer, inner = dims[:outer_n], dims[outer_n:]
    ivs = [f.fresh('i') for _ in dims]
    inner_kind = None
    if inner:
        inner_kind = rng.choice(('parallel', 'for'))
    open_parallel(f, outer, ivs[:outer_n], 1)
    loops = [{'dims': outer}]
    depth = 2
    if inner_kind == 'parallel':
        open_parallel(f, inner, ivs[outer_n:], depth)
        loops.append({'dims': inner})
        depth += 1
    elif inner_kind == 'for':
        for d, iv in zip(inner, ivs[outer_n:]):
            f.emit('scf.for %s = %s to %s step %s {' % (
                iv, f.bound(d, 0), f.bound(d, 1), f.bound(d, 2)), depth)
            depth += 1
    increment(f, V, ty, ivs, depth)
    while depth > 2 + (inner_kind == 'parallel'):
        depth -= 1
        f.emit('}', depth)
    if inner_kind == 'parallel':
        f.emit('scf.reduce', 3)
        f.emit('}', 2)
    f.emit('scf.reduce', 2)
    f.emit('}', 1)
    print_line(f, checksum(f, V, sizes, ty))
    f.emit('memref.dealloc %s : %s' % (V, ty))
    return {'kind': 'parallel', 'sizes': sizes, 'inner': inner_kind,
            'loops': [l['dims'] for l in loops],
            'for_dims': inner if inner_kind == 'for' else []}


def gen_reduction(f, rng, workers, min_task, parallel_inside=True):
    """scf.parallel with an scf.reduce sum of f(ivs) (async-parallel-for
    leaves loops with reductions to the sequential lowering)."""
    n = rng.choice((1, 2, 3))
    dims = loop_dims(rng, n, sizes_for(rng, n))
    ivs = [f.fresh('i') for _ in dims]
    zero = f.const(0, 'i64')
    r = f.fresh('red')
    lbs = [f.bound(d, 0) for d in dims]
    ubs = [f.bound(d, 1) for d in dims]
    steps = [f.bound(d, 2) for d in dims]
    f.emit('%s = scf.parallel (%s) = (%s) to (%s) step (%s) init (%s) -> i64 {' % (
        r, ', '.join(ivs), ', '.join(lbs), ', '.join(ubs), ', '.join(steps), zero))
    acc = f.const(1, 'i64')
    for d, iv in enumerate(ivs):
        x, m = f.fresh(), f.fresh()
        f.emit('%s = arith.index_cast %s : index to i64' % (x, iv), 2)
        f.emit('%s = arith.muli %s, %s : i64' % (m, x, f.const(7 + 3 * d, 'i64')), 2)
        a = f.fresh()
        f.emit('%s = arith.addi %s, %s : i64' % (a, acc, m), 2)
        acc = a
    sq = f.fresh()
    f.emit('%s = arith.muli %s, %s : i64' % (sq, acc, acc), 2)
    f.emit('scf.reduce(%s : i64) {' % sq, 2)
    f.emit('^bb0(%lhs: i64, %rhs: i64):', 2)
    s = f.fresh()
    f.emit('%s = arith.addi %%lhs, %%rhs : i64' % s, 3)
    f.emit('scf.reduce.return %s : i64' % s, 3)
    f.emit('}', 2)
    f.emit('}')
    print_line(f, [r])
    # Not rewritten by async-parallel-for: no loop the model applies to.
    return {'kind': 'reduction', 'reduced': dims, 'loops': []}


def gen_execute(f, rng, workers, min_task, parallel_inside=True):
    """async.execute tasks over disjoint rows of V, some chained by
    dependencies (incrementing the same rows again), one value task summing
    after them, a group over the rest; optionally an scf.parallel inside a
    task (whose rows it owns). Not under async-dispatch=false, which MLIR
    19 and 22 cannot lower inside async.execute (docs/lowering-bugs.md):
    parallel_inside=False."""
    tasks = rng.randrange(1, 4)
    cols = rng.randrange(1, 24)
    sizes = [tasks, cols]
    ty = memref_type(sizes)
    V = f.fresh('V')
    f.emit('%s = memref.alloc() : %s' % (V, ty))
    f.emit('linalg.fill ins(%s : i64) outs(%s : %s)' % (f.const(0, 'i64'), V, ty))
    c0, c1 = f.const(0), f.const(1)
    cols_dim = {'lb': 0, 'ub': cols, 'step': 1, 'dyn': [False, rng.random() < 0.5, False],
                'size': cols, 'src': [None, None, None]}
    cn = f.bound(cols_dim, 1)
    tokens = []
    loops = []
    for t in range(tasks):
        row = f.const(t)
        deps = [tokens[-1][0]] if tokens and rng.random() < 0.4 else []
        tok = f.fresh('t')
        f.emit('%s = async.execute %s{' % (tok, '[%s] ' % ', '.join(deps) if deps else ''))
        times = 1
        for _ in range(times):
            if parallel_inside and rng.random() < 0.5:
                d = cols_dim
                iv = f.fresh('j')
                f.emit('scf.parallel (%s) = (%s) to (%s) step (%s) {' % (iv, c0, cn, c1), 2)
                increment(f, V, ty, [row, iv], 3)
                f.emit('scf.reduce', 3)
                f.emit('}', 2)
                loops.append([d])
            else:
                iv = f.fresh('j')
                f.emit('scf.for %s = %s to %s step %s {' % (iv, c0, cn, c1), 2)
                increment(f, V, ty, [row, iv], 3)
                f.emit('}', 2)
        f.emit('async.yield', 2)
        f.emit('}')
        tokens.append((tok, deps))
    # Awaits: a value task after the last token, a group for the others.
    last = tokens[-1][0]
    vt, vv = f.fresh('t'), f.fresh('val')
    f.emit('%s, %s = async.execute [%s] -> !async.value<i64> {' % (vt, vv, last))
    row = f.const(tasks - 1)
    s_out, iv, acc = f.fresh('r'), f.fresh('j'), f.fresh('s')
    f.emit('%s = scf.for %s = %s to %s step %s iter_args(%s = %s) -> i64 {' % (
        s_out, iv, c0, f.const(cols), c1, acc, f.const(0, 'i64')), 2)
    x, y = f.fresh(), f.fresh()
    f.emit('%s = memref.load %s[%s, %s] : %s' % (x, V, row, iv, ty), 3)
    f.emit('%s = arith.addi %s, %s : i64' % (y, acc, x), 3)
    f.emit('scf.yield %s : i64' % y, 3)
    f.emit('}', 2)
    f.emit('async.yield %s : i64' % s_out, 2)
    f.emit('}')
    g = f.fresh('g')
    f.emit('%s = async.create_group %s : !async.group' % (g, f.const(tasks - 1)))
    for tok, _ in tokens[:-1]:
        f.emit('%s = async.add_to_group %s, %s : !async.token' % (f.fresh(), tok, g))
    f.emit('async.await_all %s' % g)
    res = f.fresh()
    f.emit('%s = async.await %s : !async.value<i64>' % (res, vv))
    f.emit('async.await %s : !async.token' % vt)
    s, h = checksum(f, V, sizes, ty)
    print_line(f, [s, h, res])
    f.emit('memref.dealloc %s : %s' % (V, ty))
    return {'kind': 'execute', 'tasks': tasks, 'sizes': sizes, 'loops': loops}


GENERATORS = ((gen_parallel, 6), (gen_reduction, 2), (gen_execute, 2))


def pass_options(rng):
    """One async-parallel-for option set per batch: (text, workers the
    pass assumes or None for the runtime's, min-task-size)."""
    if rng.random() < 0.1:
        return 'async-parallel-for', 8, 1000
    dispatch = rng.choice(('true', 'false'))
    workers = rng.choice((-1, 1, 2, 3, 4, 5, 8, 9, 16, 17, 33))
    min_task = rng.choice((1, 1, 2, 3, 4, 5, 7, 8, 10, 16, 32, 100, 1000))
    return ('async-parallel-for{async-dispatch=%s num-workers=%d min-task-size=%d}'
            % (dispatch, workers, min_task), workers, min_task)


CALLS_PER_FUNCTION = 8


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


def module(head, groups):
    """The module text: the functions, and a @main calling `groups` (the
    programs: (id, lines of main)) in order."""
    return head + 'func.func @main() {\n%s\n  return\n}\n' % '\n'.join(
        line for _, lines in groups for line in lines)


# ---- running ----------------------------------------------------------------

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
