#!/usr/bin/env python3
"""The lowering fuzzer's program generator (fuzz_lowering.py runs them):
random scf.parallel and async.execute test programs, each one function
(`Fn`) that prints `pK <sum> <hash>` (or its reduction), written out as
MLIR text; the random async-parallel-for options of a batch
(`pass_options`); and the batch's module (`module`). What varies, and
why, is in fuzz_lowering.py's header.
"""

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


def module(head, groups):
    """The module text: the functions, and a @main calling `groups` (the
    programs: (id, lines of main)) in order."""
    return head + 'func.func @main() {\n%s\n  return\n}\n' % '\n'.join(
        line for _, lines in groups for line in lines)


# ---- running ----------------------------------------------------------------
