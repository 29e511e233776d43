"""Tests of the bench-instr gate's own logic (make bench-instr-check runs them).

    python3 -m unittest discover -s scripts/bench -p 'test_instr.py'
"""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import instr  # noqa: E402
import callgrind  # noqa: E402

# A callgrind output as valgrind 3.19 writes it (name compression on): the
# program calls aligned_alloc (which calls malloc inside libc), operator new
# (which calls malloc) and malloc from a recursive function.
SAMPLE = """\
# callgrind format
version: 1
events: Ir
ob=(1) /usr/lib/x86_64-linux-gnu/libc.so.6
fn=(1) _mid_memalign.constprop.0
0 40
cob=(1)
cfn=(2) malloc
calls=7 0
0 700
ob=(2) /opt/prog
fn=(3) async_execute_fn
0 10
cob=(1)
cfn=(4) memalign
calls=7 0
0 900
cob=(3) /usr/lib/x86_64-linux-gnu/libstdc++.so.6
cfn=(5) _Znwm
calls=3 0
0 300
fn=(6) walk'2
0 5
cob=(1)
cfn=(2)
calls=2 0
0 200
ob=(3)
fn=(5)
0 9
cob=(1)
cfn=(2)
calls=3 0
0 150
totals: 12345
"""


class CallgrindCounts(unittest.TestCase):
    def test_counts_each_allocation_once(self):
        c = callgrind.parse(SAMPLE)
        self.assertEqual(c.instructions, 12345)
        # memalign 7 (its inner malloc is libc's), new 3 (its malloc is not
        # another allocation), malloc 2 from the recursive function.
        self.assertEqual(dict(c.allocations),
                         {"memalign": 7, "_Znwm": 3, "malloc": 2})
        self.assertEqual(c.total_allocations, 12)

    def test_demangled_operator_new_counts(self):
        text = SAMPLE.replace("_Znwm", "operator new(unsigned long)")
        c = callgrind.parse(text)
        self.assertEqual(c.allocations["operator new(unsigned long)"], 3)
        self.assertEqual(c.total_allocations, 12)

    def test_truncated_output_is_an_error(self):
        with self.assertRaises(ValueError):
            callgrind.parse(SAMPLE.replace("totals: 12345\n", ""))


class Budget(unittest.TestCase):
    BUDGET = {"tolerance": 0.03, "workloads": {
        "fan-out": {"instructions_per_task": 1000.0,
                    "allocations_per_task": 4.0}}}

    def measured(self, instr, allocs):
        return {"fan-out": {"instructions_per_task": instr,
                            "allocations_per_task": allocs}}

    def test_within_tolerance_passes(self):
        self.assertEqual(instr.check(self.measured(1030.0, 4.0),
                                           self.BUDGET, 0.03), [])

    def test_above_tolerance_fails_and_names_the_number(self):
        bad = instr.check(self.measured(1031.0, 4.0), self.BUDGET, 0.03)
        self.assertEqual(len(bad), 1)
        self.assertIn("instructions_per_task", bad[0])
        self.assertIn("1031", bad[0])

    def test_one_more_allocation_per_task_fails(self):
        bad = instr.check(self.measured(900.0, 5.0), self.BUDGET, 0.03)
        self.assertEqual(len(bad), 1)
        self.assertIn("allocations_per_task", bad[0])

    def test_workload_missing_from_measurement_fails(self):
        self.assertEqual(len(instr.check({}, self.BUDGET, 0.03)), 1)

    def test_writing_lowers_but_does_not_raise(self):
        nb, kept = instr.new_budget(self.measured(900.0, 4.5),
                                          self.BUDGET, allow_raise=False)
        self.assertEqual(nb["workloads"]["fan-out"],
                         {"instructions_per_task": 900.0,
                          "allocations_per_task": 4.0})
        self.assertEqual(len(kept), 1)
        nb, kept = instr.new_budget(self.measured(900.0, 4.5),
                                          self.BUDGET, allow_raise=True)
        self.assertEqual(nb["workloads"]["fan-out"]["allocations_per_task"], 4.5)
        self.assertEqual(kept, [])

    def test_writing_some_workloads_keeps_the_others(self):
        old = {"workloads": dict(self.BUDGET["workloads"],
                                 chain={"instructions_per_task": 7.0,
                                        "allocations_per_task": 1.0})}
        nb, _ = instr.new_budget(self.measured(900.0, 4.0), old, False)
        self.assertEqual(nb["workloads"]["chain"]["instructions_per_task"], 7.0)
        self.assertEqual(nb["workloads"]["fan-out"]["instructions_per_task"], 900.0)

    def test_per_task_is_the_difference_over_the_task_difference(self):
        g = instr.Gate("x", (10, 30), lambda n: n + 1, lambda n: n, "")
        m = instr.per_task(g, {"instructions": 1000, "allocations": 50},
                                 {"instructions": 5000, "allocations": 110})
        self.assertEqual(m["instructions_per_task"], 200.0)
        self.assertEqual(m["allocations_per_task"], 3.0)

    def test_fib_task_count(self):
        # fib-spawn.mlir's header: fib(26) spawns 196,417 tasks.
        fib = next(g for g in instr.GATES if g.name == "fib-spawn")
        self.assertEqual(fib.tasks(26), 196417)
        self.assertEqual(fib.expect(26), 121393)


if __name__ == "__main__":
    unittest.main()
