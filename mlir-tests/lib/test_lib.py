"""The corpus library's one manifest reader, harness command line,
toolchain knob and OpenMP pipeline (mlir-tests/lib/manifest.py, harness.py,
toolchain.py, pipelines.py).

    python3 -m unittest discover -s mlir-tests/lib -p 'test_*.py'
(run by lit: mlir-tests/scripts.test)
"""
import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import manifest  # noqa: E402
import pipelines  # noqa: E402
import toolchain  # noqa: E402


def write(tmp, text):
    path = os.path.join(tmp, 'manifest.tsv')
    with open(path, 'w') as f:
        f.write(text)
    return path


class ManifestReader(unittest.TestCase):
    def test_columns_by_header_name_and_dashes_empty(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = write(tmp, '#ll\tname\tcheck_file\tcheck_prefix\tentry\tenv\trequires\txfail\tunsupported\n'
                              'a.ll\ta\ta.mlir\t-\tmain\tA=1 B=2\t-\t-\tcxx-runtime\n')
            [row] = manifest.read(path)
        self.assertEqual((row['name'], row['ll'], row['check_prefix']), ('a', 'a.ll', ''))
        self.assertEqual(row['env'], ['A=1', 'B=2'])
        self.assertEqual(row['unsupported'], 'cxx-runtime')
        self.assertEqual(row['pipeline'], '', 'a column the manifest lacks reads as empty')

    def test_a_manifest_without_a_needed_column_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = write(tmp, '#name\tll\n' 'a\ta.ll\n')
            with self.assertRaisesRegex(ValueError, 'no column check_file'):
                manifest.read(path)


ROW = {'name': 'p', 'll': 'p.ll', 'check_file': 'p.mlir', 'check_prefix': 'CHECK', 'entry': 'main',
       'env': ['MLIR_ASYNC_RUNTIME_WORKERS=3'], 'pipeline': 'builtin.module(x)'}


class HarnessCommand(unittest.TestCase):
    def test_a_row_runs_its_ll_checked(self):
        cmd, env = harness.for_row('H', ROW, 'R.so', ['a.so', 'b.so'], repeat=5, json=True)
        self.assertEqual(cmd, ['H', 'p.ll', '--runtime', 'R.so', '--shared-lib', 'a.so,b.so',
                               '--check', 'p.mlir', '--entry', 'main', '--name', 'p',
                               '--repeat', '5', '--json'])
        self.assertEqual(env, {'MLIR_ASYNC_RUNTIME_WORKERS': '3'})

    def test_with_a_reference_the_source_is_lowered_by_the_harness(self):
        cmd, _ = harness.for_row('H', dict(ROW, check_prefix='P'), 'R.so', '', reference=('F.so', 'B'))
        self.assertEqual(cmd[:9], ['H', 'p.mlir', '--pipeline', 'builtin.module(x)', '--mlir-bin', 'B',
                                   '--reference', '--reference-runtime', 'F.so'])
        self.assertIn('--check-prefix', cmd)
        self.assertNotIn('--shared-lib', cmd)


class Knob(unittest.TestCase):
    def test_llvm_prefix_comes_from_the_environment_then_the_default(self):
        with mock.patch.dict(os.environ, {'LLVM_PREFIX': '/x/llvm-22'}):
            self.assertEqual(toolchain.llvm_prefix(), '/x/llvm-22')
            self.assertEqual(toolchain.llvm_prefix('/y'), '/y')
            self.assertEqual(toolchain.tools()['mlir_cpu_runner'], '/x/llvm-22/bin/mlir-runner')
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual(toolchain.llvm_prefix(), toolchain.DEFAULT_LLVM_PREFIX)


class OpenmpPipeline(unittest.TestCase):
    def test_a_front_pass_runs_before_the_openmp_passes(self):
        v = pipelines.load()[19]
        plain = v.openmp_pipeline()
        front = v.openmp_pipeline(front='convert-linalg-to-parallel-loops')
        self.assertTrue(plain.startswith('builtin.module(convert-scf-to-openmp,'))
        self.assertEqual(front, plain.replace(
            'builtin.module(', 'builtin.module(convert-linalg-to-parallel-loops,', 1))


if __name__ == '__main__':
    unittest.main()
