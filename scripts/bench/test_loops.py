"""Tests of the parallel-loop benchmarks' own logic (scripts/bench/loops.py).

    python3 -m unittest discover -s scripts/bench -p 'test_loops.py'

The lowering tests need LLVM 19's mlir-opt and mlir-translate (make setup);
they are skipped with a reason without them.
"""
import argparse
import os
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loops  # noqa: E402

# The Makefile's LLVM_BIN when it runs the tests, else the toolchain knob's.
LLVM_BIN = Path(os.environ.get("LLVM_BIN") or loops.toolchain.bin_dir())

OMP_IR = """\
declare void @mlirAsyncRuntimeExecute(ptr, ptr)
declare void @__kmpc_fork_call(ptr, i32, ptr, ...)
define void @main() {
  call void (ptr, i32, ptr, ...) @__kmpc_fork_call(ptr @1, i32 1, ptr @main..omp_par, ptr %structArg)
  ret void
}
"""
ASYNC_IR = """\
define void @main() {
  call void @mlirAsyncRuntimeExecute(ptr %5, ptr @__resume)
  ret void
}
"""
SEQ_IR = """\
declare ptr @mlirAsyncRuntimeCreateToken()
define void @main() {
  %1 = call double @rtclock()
  ret void
}
"""


class WrongCalls(unittest.TestCase):
    def test_each_lowering_passes_its_own_check(self):
        self.assertEqual(loops.wrong_calls("openmp", OMP_IR), [])
        self.assertEqual(loops.wrong_calls("async", ASYNC_IR), [])
        self.assertEqual(loops.wrong_calls("sequential", SEQ_IR), [])

    def test_a_declaration_is_not_a_call(self):
        ir = "declare void @__kmpc_fork_call(ptr, i32, ptr, ...)\n"
        self.assertEqual(loops.wrong_calls("openmp", ir),
                         ["never calls __kmpc_fork_call"])

    def test_a_sequential_lowering_is_not_parallel(self):
        self.assertIn("never calls __kmpc_fork_call",
                      loops.wrong_calls("openmp", SEQ_IR))
        self.assertIn("never calls mlirAsyncRuntimeExecute",
                      loops.wrong_calls("async", SEQ_IR))

    def test_a_parallel_lowering_is_not_the_reference(self):
        self.assertEqual(loops.wrong_calls("sequential", OMP_IR),
                         ["calls __kmpc_..."])
        self.assertEqual(loops.wrong_calls("sequential", ASYNC_IR),
                         ["calls mlirAsyncRuntime..."])
        self.assertEqual(loops.wrong_calls("openmp", ASYNC_IR),
                         ["never calls __kmpc_fork_call",
                          "calls mlirAsyncRuntime..."])


KERNEL = """\
// BENCH-EXPECT: 42
// BENCH-LOOPS: 7
// BENCH-PARALLEL-FOR: min-task-size=1
"""


class Select(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        for n in ("triangular", "zeta", "elementwise"):
            (self.dir / f"{n}.mlir").write_text(KERNEL)
        self.args = argparse.Namespace(loops_dir=self.dir, no_loops=False)

    def names(self, kernels):
        return [k.name for k in kernels]

    def test_all_kernels_in_display_order_without_only(self):
        kernels, rest = loops.select(self.args, None)
        self.assertEqual(self.names(kernels),
                         ["elementwise", "triangular", "zeta"])
        self.assertIsNone(rest)

    def test_only_is_split_between_kernels_and_workloads(self):
        kernels, rest = loops.select(
            self.args, ["fan-out", "zeta", "parallel-for"])
        self.assertEqual(self.names(kernels), ["zeta"])
        self.assertEqual(rest, ["fan-out", "parallel-for"])

    def test_only_kernels_leaves_no_workload(self):
        kernels, rest = loops.select(self.args, ["triangular"])
        self.assertEqual(self.names(kernels), ["triangular"])
        self.assertEqual(rest, [])

    def test_no_loops(self):
        self.args.no_loops = True
        self.assertEqual(loops.select(self.args, None), ([], None))

    def test_directives(self):
        k = loops.Kernel(self.dir / "zeta.mlir")
        self.assertEqual((k.expect, k.loops, k.pf_options, k.opt),
                         (42, 7, "min-task-size=1", "-O3"))


class Recipes(unittest.TestCase):
    @unittest.skipUnless(LLVM_BIN.parent.name == "llvm-19", "MLIR 19 recipes")
    def test_three_recipes_of_mlir_19(self):
        r = loops.recipes(LLVM_BIN, "min-task-size=1")
        self.assertTrue(r["async"].startswith(
            "builtin.module(async-parallel-for{min-task-size=1},"), r["async"])
        omp = r["openmp"]
        self.assertLess(omp.index("convert-scf-to-openmp"),
                        omp.index("convert-scf-to-cf"))
        self.assertTrue(omp.endswith(
            "convert-openmp-to-llvm,reconcile-unrealized-casts)"), omp)
        for word in ("async-parallel-for", "openmp", "async-to-async-runtime"):
            self.assertNotIn(word, r["sequential"])


@unittest.skipUnless((LLVM_BIN / "mlir-opt").exists(),
                     "needs LLVM 19's mlir-opt (make setup)")
class Lowering(unittest.TestCase):
    def test_every_kernel_lowers_three_ways_as_claimed(self):
        out = Path(tempfile.mkdtemp())
        kernels, _ = loops.select(
            argparse.Namespace(loops_dir=loops.LOOPS_DIR,
                               no_loops=False), None)
        self.assertGreaterEqual(len(kernels), 4)
        for k in kernels:
            loops.lower(k, LLVM_BIN, out)
            self.assertIsNone(k.lower_error, k.name)
            self.assertEqual(sorted(k.lowered),
                             ["async", "openmp", "sequential"])


if __name__ == "__main__":
    unittest.main()
