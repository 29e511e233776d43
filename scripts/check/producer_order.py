#!/usr/bin/env python3
"""The order of runtime calls that the runtime's producer binding relies on
(`make check-producer-order`, part of `make test`; docs/producer-binding.md,
runtime/src/exec/threads/binding.rs).

A thread outside the pool binds the token and values it creates to the next
task it queues with mlirAsyncRuntimeExecute, and AddTokenToGroup adds the
group to that binding. That is right only if MLIR's lowering, in every
version, creates an execute's token, then its values, then queues its task,
with no other runtime call between, and adds the token to a group after the
Execute that queued its producer, on the same thread. This script lowers
programs with each MLIR version's mlir-opt and pipelines (the corpus's RUN
lines, read and rewritten for the version by mlir-tests/lib/corpus.py, and
lowered by mlir-tests/lib/lowering.py) down to the LLVM dialect, and checks,
function by function:

  1. every `llvm.call @mlirAsyncRuntimeExecute` is preceded, in its block or
     its straight-line predecessors (while a block has one predecessor,
     that one: every path into the block comes from its end), by a
     mlirAsyncRuntimeCreateToken, with no runtime call between but
     mlirAsyncRuntimeCreateValue, and no call of a function that could make
     one (malloc and aligned_alloc, the coroutine frame's, are allowed);
  2. a function with one Execute returns that token, alone or as field 0 of
     its struct, and the values created between, in order, as fields 1..n;
  3. every mlirAsyncRuntimeAddTokenToGroup takes a token that is the result
     (field 0) of a call, earlier on its straight-line path, of a function
     of check 1 (an outlined execute), with fewer than 2 (the binding's
     look-back) other such calls between, and no blocking Await*, no
     coroutine suspension and no other call between (a task run by the
     waiting thread could push the binding out of the look-back, and a
     function that runs in a task on a task stack can move to another thread
     while it waits). A blocking await of the token itself is the one
     exception: its task has then finished, and the group needs no binding
     (counted as "added after awaiting it").

Programs: every mlir-tests/*.mlir with async.execute or scf.parallel, each
RUN line's lowering once, and scripts/check/producer_order.mlir (an execute
with a token only, with one and with three values, with a dependency, and
an scf.parallel loop with async dispatch on and off). MLIR 19 is the
installed one (LLVM_PREFIX), the others are read from --compat-dir
(make setup unpacks them there).

Prints, per version, one line with the counts and one with what the
lowering puts between CreateToken and Execute; for every violation, the
file, the function and the IR lines between. Exit status 1 on a violation
or a program that does not lower, 2 on a usage error.
"""
import argparse
import collections
import glob
import os
import re
import shlex
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(REPO, 'mlir-tests', 'lib'))
import corpus  # noqa: E402
import lowering  # noqa: E402
import pipelines  # noqa: E402
import toolchain  # noqa: E402

DEDICATED = os.path.join(REPO, 'scripts', 'check', 'producer_order.mlir')
# binding.rs: an AddTokenToGroup looks through the two newest pushes.
GROUP_LOOKBACK = 2
# Calls allowed between CreateToken and Execute: the frame's allocation.
ALLOCATORS = ('malloc', 'aligned_alloc')
RUNTIME = re.compile(r'mlirAsyncRuntim\w*')
FUNC = re.compile(r'^(\s*)llvm\.func\s+(?:\w+\s+)*@([\w.$-]+)\(.*\{\s*$')
LABEL = re.compile(r'^\s*\^([\w.$-]+)(?:\(.*\))?:')
BLOCK_REF = re.compile(r'\^([\w.$-]+)')
CALL = re.compile(r'^\s*(?:(%[\w.$-]+)\s*=\s*)?llvm\.call\s+@([\w.$-]+)\((.*?)\)')
DEF = re.compile(r'^\s*(%[\w.$-]+)\s*=\s*([\w.]+)\s*(.*)$')
OP = re.compile(r'^\s*(?:%[\w.$-]+(?::\d+)?\s*=\s*)?"?([a-z_][\w.]*)')


class Op:
    def __init__(self, lineno, text):
        self.lineno, self.text = lineno, text.rstrip()
        m = CALL.match(text)
        self.result = m.group(1) if m else None
        self.callee = m.group(2) if m else None
        self.args = [a.strip() for a in m.group(3).split(',') if a.strip()] if m else []
        if not m and re.search(r'\bllvm\.(call|invoke)\b', text):
            self.callee = '(indirect)'   # through a pointer: could be anything
        m = OP.match(text)
        self.name = m.group(1) if m else ''

    def show(self):
        return '    %d: %s' % (self.lineno, self.text.strip())


class Block:
    def __init__(self, name):
        self.name, self.ops, self.succs, self.preds = name, [], set(), set()


class Func:
    """One llvm.func with a body: blocks of ops, and every SSA definition."""

    def __init__(self, name, lines):
        self.name = name
        self.blocks = [Block('entry')]
        self.defs = {}
        for lineno, text in lines:
            m = LABEL.match(text)
            if m:
                self.blocks.append(Block(m.group(1)))
                continue
            if not text.strip():
                continue
            op = Op(lineno, text)
            b = self.blocks[-1]
            b.ops.append(op)
            # Only terminators name blocks in the LLVM dialect.
            b.succs.update(BLOCK_REF.findall(text))
            d = DEF.match(text)
            if d:
                self.defs[d.group(1)] = op
        by_name = {b.name: b for b in self.blocks}
        for b in self.blocks:
            for s in b.succs:
                if s in by_name:
                    by_name[s].preds.add(b.name)
        self.by_name = by_name
        self.where = {}  # op id -> (block, index)
        for b in self.blocks:
            for i, op in enumerate(b.ops):
                self.where[id(op)] = (b, i)

    def calls(self, callee=None):
        for b in self.blocks:
            for op in b.ops:
                if op.callee and (callee is None or op.callee == callee):
                    yield op

    def backwards(self, op):
        """The ops before `op` on its straight-line path, nearest first: its
    block's, then, while a block has one predecessor, that one's (whatever
    its other successors: every path into the block comes from its end)."""
        b, i = self.where[id(op)]
        seen = {b.name}
        while True:
            for j in range(i - 1, -1, -1):
                yield b.ops[j]
            if len(b.preds) != 1:
                return
            p = self.by_name[next(iter(b.preds))]
            if p.name in seen:
                return
            seen.add(p.name)
            b, i = p, len(p.ops)

    def source(self, name):
        """The op that defines `name`, through bitcasts; None for a block
        or function argument."""
        seen = set()
        while name in self.defs and name not in seen:
            seen.add(name)
            op = self.defs[name]
            m = re.match(r'^\s*%[\w.$-]+\s*=\s*llvm\.bitcast\s+(%[\w.$-]+)', op.text)
            if not m:
                return op
            name = m.group(1)
        return None


def parse_funcs(path):
    with open(path) as f:
        lines = list(enumerate(f.read().splitlines(), 1))
    funcs, i = [], 0
    while i < len(lines):
        m = FUNC.match(lines[i][1])
        if not m:
            i += 1
            continue
        indent, name = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and lines[j][1].rstrip() != indent + '}':
            j += 1
        funcs.append(Func(name, lines[i + 1:j]))
        i = j + 1
    return funcs


def kind_of(op):
    """How an op between CreateToken and Execute is reported: calls and
    intrinsics by name, other ops (constants, arithmetic) not at all."""
    if op.callee:
        return 'call @' + op.callee
    if op.name.startswith('llvm.intr.'):
        return op.name[len('llvm.'):]
    return None


class Result:
    def __init__(self):
        self.executes = 0
        self.values = collections.Counter()   # values per Execute
        self.between = collections.Counter()  # calls and intrinsics between
        self.groups = 0
        self.requeues = 0
        self.awaited_first = 0
        self.group_gaps = collections.Counter()  # other executes between
        self.failed, self.not_lowered = [], []
        self.lowerings = self.files = self.unsupported = 0
        self.violations = []

    def violate(self, where, what, ops):
        self.violations.append('%s: %s\n%s' % (where, what, '\n'.join(o.show() for o in ops)))


def check_execute(f, ex, where, r):
    """Check 1 for one Execute; returns (token op, value ops) or None."""
    between, values = [], []
    for op in f.backwards(ex):
        if op.callee == 'mlirAsyncRuntimeCreateToken':
            between.reverse()
            values.reverse()
            bad = [o for o in between if o.callee and o.callee != 'mlirAsyncRuntimeCreateValue'
                   and o.callee not in ALLOCATORS]
            if bad:
                r.violate(where, 'Execute at line %d: %s between CreateToken (line %d) and '
                          'Execute; everything between:' % (
                              ex.lineno, ', '.join('@' + o.callee for o in bad), op.lineno),
                          [op] + between + [ex])
            for o in between:
                k = kind_of(o)
                if k:
                    r.between[k] += 1
            begin = f.source(ex.args[0]) if ex.args else None
            if begin is None or 'coro.begin' not in begin.name or begin not in between:
                r.violate(where, 'Execute at line %d: its handle is not the result of a '
                          'llvm.intr.coro.begin between CreateToken and Execute' % ex.lineno,
                          [op] + between + [ex])
            return op, values
        if op.callee == 'mlirAsyncRuntimeCreateValue':
            values.append(op)
        between.append(op)
    r.violate(where, 'Execute at line %d: no CreateToken before it on its straight-line path '
              '(block %s); the ops before it:' % (ex.lineno, f.where[id(ex)][0].name),
              list(reversed(between[:12])) + [ex])
    return None


def struct_fields(f, name):
    """{index: SSA name} of a struct built by insertvalue into an undef."""
    fields = {}
    op = f.source(name)
    while op is not None:
        m = re.match(r'^\s*%[\w.$-]+\s*=\s*llvm\.insertvalue\s+(%[\w.$-]+),\s*(%[\w.$-]+)\[(\d+)\]',
                     op.text)
        if not m:
            break
        fields.setdefault(int(m.group(3)), m.group(1))
        op = f.source(m.group(2))
    return fields


def check_return(f, token, values, where, r):
    """Check 2: the function returns the token and values it created."""
    want = [token.result] + [v.result for v in values]
    for b in f.blocks:
        for op in b.ops:
            m = re.match(r'^\s*llvm\.return\s+(%[\w.$-]+)', op.text)
            if not m:
                continue
            if len(want) == 1:
                src = f.source(m.group(1))
                got = [src.result if src is not None and src.callee else m.group(1)]
            else:
                fields = struct_fields(f, m.group(1))
                got = [fields.get(i) for i in range(len(want))]
                got = [f.source(g).result if g and f.source(g) is not None
                       and f.source(g).callee else g for g in got]
            if got != want:
                r.violate(where, 'returns %s, not the token and values it created (%s)' % (
                    ', '.join(map(str, got)), ', '.join(want)), [token] + values + [op])


def check_group(f, add, producers, where, r):
    """Check 3 for one AddTokenToGroup."""
    token = add.args[0] if add.args else ''
    src = f.source(token)
    call = src
    if src is not None and src.name == 'llvm.extractvalue':
        m = re.match(r'^\s*%[\w.$-]+\s*=\s*llvm\.extractvalue\s+(%[\w.$-]+)\[(\d+)\]', src.text)
        call = f.source(m.group(1)) if m and m.group(2) == '0' else None
    if call is None or call.callee not in producers:
        r.violate(where, 'AddTokenToGroup at line %d: its token %s is not the token of an '
                  'outlined execute called in this function; defined by:' % (add.lineno, token),
                  [o for o in (src, add) if o is not None])
        return
    between, others, awaited = [], 0, False
    for op in f.backwards(add):
        if op is call:
            break
        between.append(op)
    else:
        r.violate(where, 'AddTokenToGroup at line %d: the call that made its token (line %d) '
                  'is not before it on its straight-line path' % (add.lineno, call.lineno),
                  [call, add])
        return
    between.reverse()
    bad = []
    for op in between:
        if op.callee in producers or op.callee == 'mlirAsyncRuntimeExecute':
            others += 1
        elif op.callee and op.callee.startswith('mlirAsyncRuntimeAwait') \
                and not op.callee.endswith('AndExecute'):
            if op.args and op.args[0] == token:
                awaited = True
            else:
                bad.append(op)
        elif op.callee and not RUNTIME.fullmatch(op.callee):
            bad.append(op)
        elif 'coro.suspend' in op.name:
            bad.append(op)
    if bad or others >= GROUP_LOOKBACK:
        r.violate(where, 'AddTokenToGroup at line %d: %s between it and the execute that made '
                  'its token (line %d):' % (
                      add.lineno, ('%d other executes' % others) if others >= GROUP_LOOKBACK
                      else ', '.join(o.name + (' @' + o.callee if o.callee else '') for o in bad),
                      call.lineno), [call] + between + [add])
    else:
        r.group_gaps[others] += 1
        r.awaited_first += awaited


def check_file(path, r):
    funcs = parse_funcs(path)
    producers = {f.name for f in funcs if any(f.calls('mlirAsyncRuntimeExecute'))}
    rel = os.path.relpath(path, REPO)
    for f in funcs:
        where = '%s @%s' % (rel, f.name)
        executes = list(f.calls('mlirAsyncRuntimeExecute'))
        found = []
        for ex in executes:
            r.executes += 1
            got = check_execute(f, ex, where, r)
            if got:
                found.append(got)
                r.values[len(got[1])] += 1
        if len(executes) == 1 and found:
            check_return(f, found[0][0], found[0][1], where, r)
        for add in f.calls('mlirAsyncRuntimeAddTokenToGroup'):
            r.groups += 1
            check_group(f, add, producers, where, r)
        r.requeues += sum(1 for op in f.calls() if RUNTIME.fullmatch(op.callee)
                          and op.callee.endswith('AndExecute'))


def prefix_of(version, compat_dir):
    if version == pipelines.DEFAULT_VERSION:
        prefix = toolchain.llvm_prefix()
        hint = 'make setup installs it'
    else:
        prefix = os.path.join(compat_dir, str(version), 'root', 'usr', 'lib', 'llvm-%d' % version)
        hint = 'make setup unpacks it there'
    if not os.path.exists(os.path.join(prefix, 'bin', 'mlir-opt')):
        sys.exit('producer_order: no mlir-opt of MLIR %d in %s (%s)' % (version, prefix, hint))
    return prefix


def programs_of(version, prefix, out):
    """The RUN lines to lower for `version`, one per distinct lowering,
    and the number of programs the version cannot express."""
    files = [p for p in corpus.corpus_files()
             if re.search(r'\b(async\.execute|scf\.parallel)\b', open(p).read())]
    files.append(DEDICATED)
    v = toolchain.mlir_version(prefix, version)
    subs = corpus.substitutions(prefix, corpus.DEFAULT_RUNTIME, v.number)
    progs = corpus.programs(files, subs, v, os.path.join(out, 'src'))
    seen, todo = set(), []
    for p in progs:
        if not p['unsupported_reason'] and p['lower'] not in seen:
            seen.add(p['lower'])
            todo.append(p)
    unsupported = len({p['source'] for p in progs if p['unsupported_reason']})
    return todo, len(files), unsupported


def check_version(version, a, jobs):
    prefix = prefix_of(version, a.compat_dir)
    out = os.path.join(a.out, str(version))
    os.makedirs(out, exist_ok=True)
    for old in glob.glob(os.path.join(out, '*.llvm.mlir*')):
        os.remove(old)
    shutil.rmtree(os.path.join(out, 'src'), ignore_errors=True)
    todo, nfiles, unsupported = programs_of(version, prefix, out)

    def lower(p):
        mlir = os.path.join(out, p['name'] + '.llvm.mlir')
        try:
            lowering.lower(shlex.split(p['lower']), mlir + '.ll', mlir, prefix, to_ir=False)
        except lowering.LoweringError as e:
            lines = str(e).splitlines()
            line = next((l.strip() for l in lines if 'error:' in l), lines[-1].strip())
            return None, line.replace(REPO + os.sep, '')
        return mlir, None

    r = Result()
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        lowered = list(ex.map(lower, todo))
    for p, (mlir, err) in zip(todo, lowered):
        if mlir is None:
            # A corpus program rewritten for an older MLIR (downport.py)
            # that its mlir-opt still rejects is a gap of the rewrite, which
            # make compat reports: said here, not checked. Anything else
            # that does not lower fails.
            old = version < pipelines.DEFAULT_VERSION and p['source'] != DEDICATED
            (r.not_lowered if old else r.failed).append('%s did not lower: %s' % (p['name'], err))
        else:
            check_file(mlir, r)
    r.lowerings, r.files, r.unsupported = len(todo), nfiles, unsupported
    return r


def report(version, r, limit):
    """Prints the version's lines; True if it passed."""
    vals = ', '.join('%s %d' % ('token only' if n == 0 else '%d value%s' % (n, 's' * (n > 1)), c)
                     for n, c in sorted(r.values.items()))
    ok = not r.violations and not r.failed
    print('MLIR %d: %s: %d programs (%d not expressible in MLIR %d, %d not lowered), '
          '%d lowerings; %d Execute calls (%s); %d AddTokenToGroup (%d right after the call '
          'of their execute, at most %d other executes between, %d added after awaiting '
          'their token); %d Await*AndExecute re-queues; %d violations' % (
              version, 'pass' if ok else 'FAIL', r.files, r.unsupported, version,
              len(r.not_lowered), r.lowerings, r.executes, vals or 'none', r.groups,
              r.group_gaps[0], max(r.group_gaps, default=0), r.awaited_first, r.requeues,
              len(r.violations) + len(r.failed)))
    print('MLIR %d: between CreateToken and Execute: %s' % (
        version, ', '.join('%s x%d' % kv for kv in sorted(r.between.items())) or 'nothing'))
    if max(r.values, default=0) > 3:
        print('MLIR %d: note: %d Execute calls have more than 3 values; the binding keeps the '
              'token and the first 3' % (version, sum(c for n, c in r.values.items() if n > 3)))
    for line in r.not_lowered:
        print('MLIR %d: note: not checked: %s' % (version, line))
    for line in r.failed:
        print('MLIR %d: FAIL %s' % (version, line))
    for v in r.violations[:limit]:
        print('MLIR %d: FAIL %s' % (version, v))
    if len(r.violations) > limit:
        print('MLIR %d: ... and %d more violations' % (version, len(r.violations) - limit))
    return ok


def main():
    ap = argparse.ArgumentParser(prog='producer_order.py', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--versions', default=None,
                    help='comma-separated MLIR versions (default: every version of '
                         'mlir-tests/lib/pipelines.txt)')
    ap.add_argument('--compat-dir', default=os.path.join(REPO, 'target', 'compat'),
                    help='where make setup unpacked the MLIR versions other than %d '
                         '(default: %%(default)s)' % pipelines.DEFAULT_VERSION)
    ap.add_argument('--out', default=os.path.join(REPO, 'target', 'producer-order'),
                    help='where the lowered programs go, one directory per version '
                         '(default: %(default)s)')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1,
                    help='lowerings at a time (default: %(default)s)')
    ap.add_argument('--limit', type=int, default=20,
                    help='violations printed per version (default: %(default)s)')
    a = ap.parse_args()
    try:
        table = pipelines.load()
    except (OSError, ValueError) as e:
        sys.exit('producer_order: %s' % e)
    if a.versions:
        try:
            versions = [int(v) for v in a.versions.split(',') if v.strip()]
        except ValueError:
            ap.error('--versions takes numbers, e.g. 16,22')
        unknown = [v for v in versions if v not in table]
        if unknown:
            ap.error('no MLIR %s in %s' % (', '.join(map(str, unknown)), pipelines.TABLE))
    else:
        versions = sorted(table)
    a.compat_dir = os.path.abspath(a.compat_dir)
    # A version whose toolchain is Python bindings only (pipelines.txt's
    # `toolchain bindings`: LLVM 24) has no mlir-opt; make compat lowers the
    # corpus with it through the bindings' PassManager.
    for v in [v for v in versions if not table[v].has_runner]:
        print('MLIR %d: note: not checked: its toolchain is Python bindings only, no mlir-opt '
              '(make compat lowers the corpus with it)' % v)
    versions = [v for v in versions if table[v].has_runner]
    for v in versions:   # every toolchain first: a missing one fails at once
        prefix_of(v, a.compat_dir)
    ok = True
    for v in versions:
        ok = report(v, check_version(v, a, max(1, a.jobs)), max(0, a.limit)) and ok
        sys.stdout.flush()
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
