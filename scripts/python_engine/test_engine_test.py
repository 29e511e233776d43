"""engine_test.py's own logic, without bindings or engines: which corpus
programs the Python client runs, the engine plan, and how a child's status
lines become results (mlir-tests/scripts.test runs it under lit).

    python3 -m unittest discover -s scripts/python_engine
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine_test  # noqa: E402


class SelectionTest(unittest.TestCase):
    def program(self, text):
        f = tempfile.NamedTemporaryFile('w', suffix='.mlir', delete=False)
        self.addCleanup(os.unlink, f.name)
        f.write(text)
        f.close()
        return f.name

    def test_declared_functions_must_resolve(self):
        path = self.program('func.func private @printMemrefI64(memref<*xi64>)\n'
                            'func.func private @printI64(i64)\n'
                            'func.func private @usleep(i32) -> i32\n'
                            'func.func private @mlirAsyncRuntimePrintCurrentThreadId()\n')
        libs = [{'mlirAsyncRuntimePrintCurrentThreadId'}, {'printI64', 'printNewline'}]
        # printI64 (runner utils), usleep (libc), the runtime's: resolved.
        self.assertEqual(engine_test.unresolved(path, libs), ['printMemrefI64'])

    def test_the_plan_cycles_through_every_program(self):
        progs = [{'name': n, 'check_file': n + '.mlir', 'pipeline': 'p', 'entry': 'main',
                  'env': [], 'check_prefix': 'CHECK', 'stderr_checked': False} for n in 'abc']
        self.assertEqual([j['name'] for j in engine_test.plan(progs, 7)], list('abcabca'))
        self.assertEqual([j['name'] for j in engine_test.plan(progs, 2)], list('abc'))

    def test_every_binding_has_a_pipeline_row(self):
        import pipelines
        for name, info in engine_test.BINDINGS.items():
            self.assertIn(info['mlir'], pipelines.load(), name)
            self.assertEqual(engine_test.binding_of(info['mlir']), name)
        self.assertIsNone(engine_test.binding_of(14))


class StatusTest(unittest.TestCase):
    def test_a_died_process_leaves_the_rest_not_run(self):
        jobs = [{'name': 'a', 'mlir': 'a.mlir', 'check_prefix': 'CHECK'},
                {'name': 'b', 'mlir': 'b.mlir', 'check_prefix': 'CHECK'}]

        class A:
            filecheck = '/bin/true'
        out = tempfile.mkdtemp()
        open(os.path.join(out, '001-a.out'), 'w').close()
        results = engine_test.check(A, jobs, ['engine 1 a ok 0.25'], out)
        self.assertEqual([(n, ok, why) for n, _, ok, why in results],
                         [(1, True, '0.25 s'), (2, False, 'not run')])


if __name__ == '__main__':
    unittest.main()
