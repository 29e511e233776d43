"""The one skip rule (mlir-tests/lib/rules.py, lit's) in every script that
runs corpus programs: a program UNSUPPORTED on our runtime is never
started, by make run, stress or explore; XFAIL and REQUIRES are lit
boolean expressions, not substrings.

    python3 -m unittest discover -s scripts/corpus -p 'test_skips.py'
(run by lit: mlir-tests/scripts.test)
"""
import contextlib
import io
import os
import stat
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', '..', 'mlir-tests', 'lib'))

import explore  # noqa: E402
import stress  # noqa: E402

# The features of the runs below are those of an MLIR 19 toolchain
# (rust-runtime, mlir-19) with task stacks on, whatever LLVM_PREFIX and
# opt-outs the caller has (make lit-no-stacks runs this with them off).
_PREFIX = mock.patch.dict(os.environ, {'LLVM_PREFIX': '/any/prefix/llvm-19',
                                       'MLIR_ASYNC_RUNTIME_TASK_STACKS': '1'})


def setUpModule():
    _PREFIX.start()


def tearDownModule():
    _PREFIX.stop()

COLUMNS = ['name', 'll', 'check_file', 'check_prefix', 'entry', 'entry_result', 'env',
           'requires', 'xfail', 'unsupported', 'source', 'mlir', 'pipeline']


def program(name, requires='', xfail='', unsupported=''):
    return {'name': name, 'll': '/nonexistent/%s.ll' % name, 'check_file': '/nonexistent/x.mlir',
            'check_prefix': 'CHECK', 'entry': 'main', 'entry_result': 'void', 'env': [],
            'requires': requires, 'xfail': xfail, 'unsupported': unsupported,
            'source': '/nonexistent/x.mlir', 'mlir': '/nonexistent/x.llvm.mlir', 'pipeline': '',
            'unsupported_reason': None}


class Corpus:
    """A manifest of programs, and a fake jit-harness that records the
    programs it is started on and passes them all."""

    def __init__(self, tmp, progs):
        self.log = os.path.join(tmp, 'started')
        self.harness = os.path.join(tmp, 'jit-harness')
        with open(self.harness, 'w') as f:
            f.write('#!/bin/sh\nall="$*"\n'
                    'while [ $# -gt 0 ]; do [ "$1" = --name ] && echo "$2" >> %s; shift; done\n'
                    'case "$all" in *--json*) echo \'{"runs": 1, "passed": 1, "failed": 0, "hung": 0, "leaked": 0, '
                    '"leak_check": true, "schedule": {}}\' ;; esac\n' % self.log)
        os.chmod(self.harness, os.stat(self.harness).st_mode | stat.S_IEXEC)
        self.manifest = os.path.join(tmp, 'manifest.tsv')
        with open(self.manifest, 'w') as f:
            f.write('#' + '\t'.join(COLUMNS) + '\n')
            for p in progs:
                f.write('\t'.join(('-' if not p[c] else ' '.join(p[c]) if c == 'env' else p[c])
                                  for c in COLUMNS) + '\n')
        self.runtime = os.path.join(tmp, 'libmlir_async_runtime.so')
        open(self.runtime, 'w').close()

    def started(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return f.read().split()


PROGRAMS = [program('plain'),
            program('hangs-on-ours', unsupported='rust-runtime'),
            program('hangs-on-cxx', unsupported='cxx-runtime'),
            program('only-cxx', requires='cxx-runtime'),
            program('unsupported-by-expression', unsupported='rust-runtime && mlir-19'),
            program('not-on-22', unsupported='mlir-22'),
            program('xfail-substring', xfail='rust-runtime-old')]
RUN_ON_OURS = ['plain', 'hangs-on-cxx', 'not-on-22', 'xfail-substring']


class StressSkips(unittest.TestCase):
    def test_stress_never_starts_a_program_unsupported_on_our_runtime(self):
        self.assertIsNotNone(stress.skipped(program('p', unsupported='rust-runtime')))

    def test_stress_reads_directives_as_lit_expressions(self):
        self.assertIsNotNone(stress.skipped(program('p', unsupported='rust-runtime && mlir-19')))
        self.assertIsNotNone(stress.skipped(program('p', requires='cxx-runtime || floor-runtime')))
        self.assertIsNone(stress.skipped(program('p', requires='rust-runtime || cxx-runtime')))
        self.assertIsNone(stress.skipped(program('p', unsupported='cxx-runtime')))
        self.assertIsNotNone(stress.skipped(program('p', xfail='rust-runtime')))
        self.assertIsNone(stress.skipped(program('p', xfail='rust-runtime-old')))

    def test_stress_with_task_stacks_off_skips_what_lit_no_stacks_skips(self):
        needs_stacks = program('p', unsupported='no-task-stacks, deterministic-schedule')
        self.assertIsNone(stress.skipped(needs_stacks))
        for off in ('0', ' off', 'false'):
            with mock.patch.dict(os.environ, {'MLIR_ASYNC_RUNTIME_TASK_STACKS': off}):
                self.assertIsNotNone(stress.skipped(needs_stacks), off)

    def test_stress_picks_the_programs_lit_runs(self):
        self.assertEqual([p['name'] for p in PROGRAMS if stress.skipped(p) is None], RUN_ON_OURS)


class ExploreSkips(unittest.TestCase):
    def test_explore_starts_only_the_programs_lit_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            c = Corpus(tmp, PROGRAMS)
            args = explore.parse_args(['corpus', '--harness', c.harness, '--runtime', c.runtime,
                                       '--libs', '', '--manifest', c.manifest, '--schedules', '1'])
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(explore.corpus(args), 0)
            self.assertEqual(sorted(set(c.started())), sorted(RUN_ON_OURS))


class RunCorpusSkips(unittest.TestCase):
    def test_make_run_starts_only_the_programs_lit_runs(self):
        import run
        with tempfile.TemporaryDirectory() as tmp:
            c = Corpus(tmp, PROGRAMS)
            with contextlib.redirect_stdout(io.StringIO()):
                code = run.main(['--harness', c.harness, '--runtime', c.runtime,
                                        '--runner-utils', '', '--repeat', '1', c.manifest])
            self.assertEqual(code, 0)
            self.assertEqual(sorted(c.started()), sorted(RUN_ON_OURS))

    def test_an_expected_failure_is_one_line_without_the_dump(self):
        import run
        with tempfile.TemporaryDirectory() as tmp:
            c = Corpus(tmp, [program('bug', xfail='rust-runtime')])
            src = os.path.join(tmp, 'bug.mlir')
            with open(src, 'w') as f:
                f.write('// A lowering bug (docs/lowering-bugs.md).\n// XFAIL: rust-runtime\n')
            with open(c.manifest) as f:
                text = f.read().replace('/nonexistent/x.mlir', src)
            with open(c.manifest, 'w') as f:
                f.write(text)
            # A harness that fails its check with a dump, and prints its
            # one line when told the failure is expected.
            with open(c.harness, 'w') as f:
                f.write('#!/bin/sh\necho "jit-harness: run 1: check failed" >&2\necho "  Input was:" >&2\n'
                        'case "$*" in *--verbose*) ;; *--expect-failure*) '
                        'echo "expected failure: bug: 1 of 1 runs failed their check; $(echo "$*" | '
                        'sed "s/.*--expect-failure \\(.*\\)/\\1/")"; exit 1;; esac\n'
                        'echo "bug: 1 runs, 0 passed, 1 failed"; exit 1\n')
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                code = run.main(['--harness', c.harness, '--runtime', c.runtime, c.manifest])
            self.assertEqual(code, 0)
            lines = out.getvalue().splitlines()
            self.assertEqual(lines[1], 'expected failure: bug: 1 of 1 runs failed their check; '
                                       'XFAIL: rust-runtime, see docs/lowering-bugs.md')
            self.assertEqual(lines[2], 'jit-harness: 0 passed, 0 failed, 1 expected failures, 0 skipped')
            self.assertNotIn('Input was', out.getvalue())


if __name__ == '__main__':
    unittest.main()
