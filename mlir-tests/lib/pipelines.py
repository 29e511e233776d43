#!/usr/bin/env python3
"""The MLIR lowering pipelines, per MLIR version, read from pipelines.txt
(the one definition; its header documents the format and every key). This
is the Python reader; the Rust one is the crate pipelines/ (mlir-pipelines),
whose tests check that the two agree.

As a module (toolchain.py, lowering.py, corpus.py, lit.cfg.py, the scripts):
    table = load(); v = table[19]
    v.pipeline()                        anchor(async-func?, passes)
    v.pipeline(front='async-parallel-for', async_func=False)
    v.passes(policy=True)               the bare pass list, no anchor
    v.sequential()                      scf.parallel as sequential loops
    v.openmp_pipeline()                 scf.parallel on OpenMP (libomp)
    v.openmp_pipeline(front='convert-linalg-to-parallel-loops')
                                        the same with a pass first
    v.pipeline(front='async-parallel-for{...}', fixed=True)
                                        with async-parallel-for-fixed, the
                                        patched pass of `make lowering-fixes`,
                                        which mlir-opt loads with
                                        v.plugin_args() (--load-pass-plugin)
As a command (the Makefile, scripts/bench/hot_symbols.sh, the README):
    pipelines.py [--mlir-version N | --llvm-prefix P] [--policy] [--no-async-func] [--bare]
                 [--front PASS] [--sequential | --openmp]
        prints the pipeline of MLIR N (default 19, or P's version), with
        PASS (e.g. 'async-parallel-for{num-workers=1}') first
    pipelines.py --fixed-lowering [...] the same with our patched
        async-parallel-for (async-parallel-for-fixed, docs/lowering-bugs.md)
    pipelines.py --plugin [--mlir-version N]
        prints the --load-pass-plugin=PATH option that mlir-opt needs for
        it (exit 1, saying to run make lowering-fixes, when it is not built)
    pipelines.py --versions             prints every version, ascending
    pipelines.py --runner [--mlir-version N]
                                        prints the runner's name
    pipelines.py --toolchain [--mlir-version N]
                                        prints where make setup gets its
                                        tools: debian, pypi or bindings
"""
import argparse
import os
import re
import sys

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pipelines.txt')
DEFAULT_VERSION = 19
SCALAR_KEYS = ('runner', 'anchor', 'async-func', 'to-runtime', 'ref-counting',
               'policy-ref-counting', 'openmp-to-llvm', 'fixed-parallel-for',
               'toolchain')
LIST_KEYS = ('to-llvm', 'openmp')
REQUIRED_KEYS = ('runner', 'to-runtime', 'ref-counting', 'policy-ref-counting',
                 'to-llvm')
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The pass that fixed-parallel-for replaces, and the plugin that holds it
# (lowering-fixes/build.sh writes it, and the MLIR version it is built for
# into `mlir-version` next to it).
PARALLEL_FOR = 'async-parallel-for'
PLUGIN_NAME = 'libmlir_async_lowering_fixes.so'


def rename_pass(passes, old, new):
    """`passes` with every pass named `old` (with or without options, at
    any nesting) renamed `new`; other names containing `old` are kept."""
    return re.sub(r'(?<![\w.-])%s(?![\w.-])' % re.escape(old), new, passes)


def plugin_relpath(number):
    """Where make lowering-fixes puts MLIR `number`'s plugin, relative to
    the repository (the Rust reader has the same rule)."""
    if number == DEFAULT_VERSION:
        return 'target/lowering-fixes/' + PLUGIN_NAME
    return 'target/lowering-fixes/%d/%s' % (number, PLUGIN_NAME)


class Version:
    """One MLIR version's row of the table."""

    def __init__(self, number, entries):
        self.number = number
        self.runner = entries['runner']
        self.anchor = entries.get('anchor')
        self.async_func = entries.get('async-func')
        self.to_runtime = entries['to-runtime']
        self.ref_counting = entries['ref-counting']
        self.policy_ref_counting = entries['policy-ref-counting']
        self.to_llvm = entries['to-llvm']
        self.openmp = entries.get('openmp')
        self.openmp_to_llvm = entries.get('openmp-to-llvm')
        self.fixed_parallel_for = entries.get('fixed-parallel-for')
        self.toolchain = entries.get('toolchain', 'debian')

    @property
    def has_runner(self):
        """False where the version's toolchain is Python bindings only
        (toolchain bindings): make compat lowers the corpus, runs nothing."""
        return self.toolchain != 'bindings'

    def passes(self, policy=False, async_func=False):
        """The pass list without anchor: [async-func,] to-runtime,
        ref-counting (or the policy-based one), to-llvm."""
        if async_func and not self.async_func:
            raise ValueError('MLIR %d has no async.func lowering' % self.number)
        steps = [self.async_func] if async_func else []
        steps += [self.to_runtime,
                  self.policy_ref_counting if policy else self.ref_counting]
        return ','.join(steps + self.to_llvm)

    def anchored(self, passes):
        return '%s(%s)' % (self.anchor, passes) if self.anchor else passes

    def pipeline(self, policy=False, async_func=None, front=None, fixed=False):
        """The whole pipeline, anchored. async_func=None includes the
        async.func lowering where the version has one; `front` is a pass
        (with options) to run first, e.g. async-parallel-for{...};
        fixed=True runs async-parallel-for-fixed instead of
        async-parallel-for (the plugin of make lowering-fixes: plugin_args())."""
        if async_func is None:
            async_func = self.async_func is not None
        p = self.passes(policy, async_func)
        if front and fixed:
            front = self.fixed(front)
        return self.anchored(front + ',' + p if front else p)

    def fixed(self, passes):
        """`passes` with async-parallel-for renamed to this version's fixed
        pass (ValueError when the version has none)."""
        if not self.fixed_parallel_for:
            raise ValueError('MLIR %d has no fixed %s (no fixed-parallel-for in pipelines.txt)'
                             % (self.number, PARALLEL_FOR))
        return rename_pass(passes, PARALLEL_FOR, self.fixed_parallel_for)

    def plugin(self, repo=REPO):
        """The path of the plugin with the fixed pass; ValueError, with what
        to do, when the version has none, it is not built, or it is built for
        another MLIR."""
        self.fixed('')
        path = os.path.join(repo, plugin_relpath(self.number))
        if not os.path.exists(path):
            raise ValueError('no %s for MLIR %d: run `make lowering-fixes`'
                             % (plugin_relpath(self.number), self.number))
        try:
            with open(os.path.join(os.path.dirname(path), 'mlir-version')) as f:
                built = f.read().strip()
        except OSError:
            built = ''
        if built.split('.')[0] != str(self.number):
            raise ValueError('%s was built for MLIR %s, not MLIR %d: run `make lowering-fixes`'
                             % (path, built or '(unknown)', self.number))
        return path

    def plugin_args(self, repo=REPO):
        """The mlir-opt options that load plugin()."""
        return ['--load-pass-plugin=' + self.plugin(repo)]

    def sequential(self):
        """to-llvm alone: convert-scf-to-cf lowers scf.parallel to nested
        sequential loops, the reference lowering of a parallel loop."""
        return self.anchored(','.join(self.to_llvm))

    def openmp_pipeline(self, front=None):
        """scf.parallel to omp.parallel + omp.wsloop (the `openmp` passes),
        then to-llvm with `openmp-to-llvm` before its last pass; `front`, a
        pass to run first (e.g. convert-linalg-to-parallel-loops, which
        makes linalg ops the scf.parallel loops that the `openmp` passes
        take)."""
        if not (self.openmp and self.openmp_to_llvm):
            raise ValueError('MLIR %d has no openmp/openmp-to-llvm in %s'
                             % (self.number, TABLE))
        if self.to_llvm[-1] != 'reconcile-unrealized-casts':
            raise ValueError('MLIR %d: to-llvm must end with '
                             'reconcile-unrealized-casts' % self.number)
        steps = ([front] if front else []) + self.openmp + self.to_llvm[:-1] + \
            [self.openmp_to_llvm, self.to_llvm[-1]]
        return self.anchored(','.join(steps))


def parse(text, source=TABLE):
    """{version: Version} from the table's text."""
    rows = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        parts = line.split(None, 2)
        if len(parts) != 3 or not parts[0].isdigit():
            raise ValueError('%s:%d: expected `VERSION KEY VALUE`: %s' % (source, n, line))
        version, key, value = int(parts[0]), parts[1], parts[2]
        entries = rows.setdefault(version, {})
        if key in LIST_KEYS:
            entries.setdefault(key, []).append(value)
        elif key in SCALAR_KEYS:
            if key in entries:
                raise ValueError('%s:%d: %s given twice for MLIR %d' % (source, n, key, version))
            entries[key] = value
        else:
            raise ValueError('%s:%d: unknown key %s' % (source, n, key))
    for version, entries in rows.items():
        missing = [k for k in REQUIRED_KEYS if k not in entries]
        if missing:
            raise ValueError('%s: MLIR %d lacks %s' % (source, version, ', '.join(missing)))
    return {v: Version(v, e) for v, e in rows.items()}


def load(path=TABLE):
    with open(path) as f:
        return parse(f.read(), path)


def versions(path=TABLE):
    return sorted(load(path))


def version_of_prefix(llvm_prefix, default=DEFAULT_VERSION):
    """The MLIR version of an install prefix named like .../llvm-N (Debian's
    layout, also that of the extracted packages under target/compat)."""
    m = re.fullmatch(r'llvm-(\d+)', os.path.basename(os.path.normpath(llvm_prefix)))
    return int(m.group(1)) if m else default


def main():
    ap = argparse.ArgumentParser(description='Print a lowering pipeline from pipelines.txt.')
    ap.add_argument('--mlir-version', type=int, default=None,
                    help='default: that of --llvm-prefix, else %d' % DEFAULT_VERSION)
    ap.add_argument('--llvm-prefix', help='take the version from this prefix (.../llvm-N)')
    ap.add_argument('--policy', action='store_true',
                    help='policy-based reference counting instead of the automatic one')
    ap.add_argument('--no-async-func', action='store_true',
                    help='leave out the async.func lowering')
    ap.add_argument('--bare', action='store_true', help='the pass list, without the anchor')
    ap.add_argument('--front', metavar='PASS',
                    help='a pass (with options) to run first, e.g. async-parallel-for{num-workers=1}')
    kind = ap.add_mutually_exclusive_group()
    kind.add_argument('--sequential', action='store_true',
                      help='the sequential lowering of scf.parallel (no async passes)')
    kind.add_argument('--openmp', action='store_true',
                      help='the OpenMP lowering of scf.parallel (libomp)')
    ap.add_argument('--versions', action='store_true', help='print every version')
    ap.add_argument('--runner', action='store_true', help="print the version's runner")
    ap.add_argument('--toolchain', action='store_true',
                    help="print where make setup gets the version's tools (debian, pypi, bindings)")
    ap.add_argument('--fixed-lowering', action='store_true',
                    help='async-parallel-for-fixed (our patched pass, make lowering-fixes) '
                         'instead of async-parallel-for in --front')
    ap.add_argument('--plugin', action='store_true',
                    help="print mlir-opt's --load-pass-plugin option for --fixed-lowering")
    a = ap.parse_args()
    try:
        table = load()
    except ValueError as e:
        sys.exit('pipelines: %s' % e)
    if a.versions:
        print(' '.join(str(v) for v in sorted(table)))
        return 0
    if a.mlir_version is None:
        a.mlir_version = (version_of_prefix(a.llvm_prefix) if a.llvm_prefix
                          else DEFAULT_VERSION)
    if a.mlir_version not in table:
        sys.exit('pipelines: no MLIR %d in %s (have %s)'
                 % (a.mlir_version, TABLE, ' '.join(map(str, sorted(table)))))
    v = table[a.mlir_version]
    front = a.front
    if a.fixed_lowering or a.plugin:
        try:
            front = v.fixed(front) if front else front
            if a.plugin:
                print(' '.join(v.plugin_args()))
                return 0
        except ValueError as e:
            sys.exit('pipelines: %s' % e)
    if a.runner:
        print(v.runner)
    elif a.toolchain:
        print(v.toolchain)
    elif a.sequential:
        print(v.sequential())
    elif a.openmp:
        try:
            print(v.openmp_pipeline(front))
        except ValueError as e:
            sys.exit('pipelines: %s' % e)
    elif a.bare:
        p = v.passes(a.policy, not a.no_async_func and v.async_func is not None)
        print(front + ',' + p if front else p)
    else:
        print(v.pipeline(a.policy, False if a.no_async_func else None, front))
    return 0


if __name__ == '__main__':
    sys.exit(main())
