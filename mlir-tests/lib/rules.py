#!/usr/bin/env python3
"""Whether a corpus program runs on a given runtime: the one skip rule,
lit's own. A program's REQUIRES, UNSUPPORTED and XFAIL lines hold lit
boolean expressions over features (`rust-runtime && !mlir-22`), evaluated
with lit's BooleanExpression, as lit does:
  REQUIRES     every expression must hold, else the program is unsupported;
  UNSUPPORTED  any expression holding makes it unsupported (never started:
               for example a program that hangs there);
  XFAIL        any expression holding (or `*`) makes a failure expected,
               and a pass unexpected.
Features of a run (features()): `<kind>-runtime` (rust, cxx or floor) and
`mlir-N`, as lit.cfg.py sets them; `fixed-lowering` when the programs'
async-parallel-for is our patched one (lit --param fixed_lowering=1, make
lowering-fixes-ci): the programs of its two bugs say `XFAIL: !fixed-lowering`.
Two more, set by the runs that need them: `no-task-stacks` (lit --param
task_stacks=0, make lit-no-stacks, or any run of our runtime whose
environment has MLIR_ASYNC_RUNTIME_TASK_STACKS=0: env_features()), and
`deterministic-schedule` when the runs are under a deterministic schedule
(scripts/corpus/explore.py), which runs one task at a time, and no task on
a stack of its own (a blocked task holds a thread): a program whose task
spins on memory until another task writes it, or that needs 10,000 tasks
blocked at once, says `UNSUPPORTED: deterministic-schedule`.

Used by lit.cfg.py (the features), corpus.py, and every script that runs
corpus programs (scripts/corpus/: run.py, stress.py, explore.py,
compat.py, aot_test.sh through manifest.py).
"""
import os
import re

from lit.BooleanExpression import BooleanExpression

KINDS = ('rust', 'cxx', 'floor')


def runtime_kind(runtime, llvm_prefix):
    """'cxx' for the C++ runtime of the toolchain (a library under the LLVM
    prefix), 'rust' otherwise."""
    prefix = os.path.realpath(llvm_prefix)
    return 'cxx' if os.path.realpath(runtime).startswith(prefix + os.sep) else 'rust'


def features(kind, mlir_number, fixed_lowering=False, deterministic=False, env=None):
    """The features of a run; `env`, the environment its programs run
    with, adds those of the runtime's opt-outs set there (env_features)."""
    if kind not in KINDS:
        raise ValueError('runtime kind must be one of %s, not %r' % (', '.join(KINDS), kind))
    return ({kind + '-runtime', 'mlir-%d' % mlir_number}
            | ({'fixed-lowering'} if fixed_lowering else set())
            | ({'deterministic-schedule'} if deterministic else set())
            | (env_features(env) if kind == 'rust' and env is not None else set()))


def env_features(env):
    """The features of our runtime's opt-outs that `env` (a mapping)
    sets: `no-task-stacks` for MLIR_ASYNC_RUNTIME_TASK_STACKS off, as the
    runtime reads it (0, off or false, spaces around ignored)."""
    stacks = (env.get('MLIR_ASYNC_RUNTIME_TASK_STACKS') or '').strip()
    return {'no-task-stacks'} if stacks in ('0', 'off', 'false') else set()


def _split(value):
    """The expressions of a directive's value (a list, or lit's
    comma-separated text)."""
    if isinstance(value, (list, tuple)):
        return [e.strip() for e in value if e.strip()]
    return [e.strip() for e in (value or '').split(',') if e.strip()]


def _holds(expr, feats):
    return expr == '*' or BooleanExpression.evaluate(expr, feats)


def expectation(p, feats):
    """What lit makes of program `p` (its 'requires', 'unsupported' and
    'xfail' directives, and 'unsupported_reason' when its MLIR version
    cannot express it) given the run's features: ('unsupported', why),
    ('xfail', why) or ('pass', None)."""
    feats = set(feats)
    if p.get('unsupported_reason'):
        return 'unsupported', p['unsupported_reason']
    missing = [e for e in _split(p.get('requires')) if not _holds(e, feats)]
    if missing:
        return 'unsupported', 'REQUIRES: ' + ', '.join(missing)
    unsupported = [e for e in _split(p.get('unsupported')) if _holds(e, feats)]
    if unsupported:
        return 'unsupported', 'UNSUPPORTED: ' + ', '.join(unsupported)
    xfail = [e for e in _split(p.get('xfail')) if _holds(e, feats)]
    if xfail:
        return 'xfail', 'XFAIL: ' + ', '.join(xfail)
    return 'pass', None


DOC = re.compile(r'\bdocs/[\w.-]+\.md\b')


def xfail_note(p, why):
    """The note of an expected failure: `why` (from expectation()) and the
    doc that the program's header comment names, if any: `XFAIL:
    rust-runtime, see docs/lowering-bugs.md`. The one line that make run,
    explore and the harness (--expect-failure) print for it."""
    doc = None
    try:
        with open(p.get('source') or p['check_file']) as f:
            for line in f:
                if not line.startswith('//'):
                    break
                m = DOC.search(line)
                if m:
                    doc = m.group(0)
                    break
    except (OSError, KeyError):
        pass
    return '%s, see %s' % (why, doc) if doc else why
