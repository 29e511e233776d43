"""Tests of the wait-path benchmarks' own logic (scripts/bench/waits.py).

    python3 -m unittest discover -s scripts/bench -p 'test_waits.py'

The lowering test needs LLVM 19's mlir-opt and mlir-translate (make setup);
it is skipped with a reason without them.
"""
import argparse
import os
import statistics
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (the kit waits is given)
import loops  # noqa: E402
import waits  # noqa: E402

LLVM_BIN = Path(os.environ.get("LLVM_BIN") or bench.toolchain.bin_dir())

LINE = ("/tmp/one-task.ll: 3000 runs, 3000 passed, 0 failed, 0 hung, 0 leaked, "
        "median 98.3 us, p99 473.5 us (leak check off: disabled by "
        "--no-leak-check)\n")


def child(stdout="", stderr="", rc=0, timeout=False):
    """A raw result as bench.run_child returns it."""
    return {"rc": rc, "timeout": timeout, "wall_s": 0.3, "maxrss_kib": 80000,
            "stdout": stdout, "stderr": stderr}


class ParseSummary(unittest.TestCase):
    def test_the_harness_line(self):
        s = waits.parse_summary(LINE)
        self.assertEqual((s["runs"], s["passed"], s["failed"], s["hung"],
                          s["leaked"]), (3000, 3000, 0, 0, 0))
        self.assertAlmostEqual(s["median_us"], 98.3)
        self.assertAlmostEqual(s["p99_us"], 473.5)

    def test_units_are_converted_to_microseconds(self):
        s = waits.parse_summary(
            "x: 5 runs, 5 passed, 0 failed, 0 hung, 0 leaked, "
            "median 1.25 ms, p99 2.00 s")
        self.assertAlmostEqual(s["median_us"], 1250.0)
        self.assertAlmostEqual(s["p99_us"], 2e6)

    def test_no_line(self):
        self.assertIsNone(waits.parse_summary("progress 3000/3000\n"))


class JudgeHarness(unittest.TestCase):
    def test_summary_on_stdout_or_stderr(self):
        for res in (child(stdout=LINE), child(stderr=LINE)):
            j = waits.judge_harness(res, 3000)
            self.assertEqual(j["status"], "ok")
            self.assertAlmostEqual(j["elapsed_s"], 98.3e-6)

    def test_missing_line_is_a_fail(self):
        j = waits.judge_harness(child(stdout="", stderr="jit: ok\n"), 3000)
        self.assertEqual(j["status"], "FAIL (no summary)")
        self.assertIsNone(j["elapsed_s"])

    def test_failed_runs_are_a_fail(self):
        line = LINE.replace("3000 passed, 0 failed", "2999 passed, 1 failed")
        j = waits.judge_harness(child(stdout=line, rc=0), 3000)
        self.assertTrue(j["status"].startswith("FAIL (2999/3000 passed"), j)

    def test_fewer_runs_than_asked_are_a_fail(self):
        j = waits.judge_harness(child(stdout=LINE), 5000)
        self.assertTrue(j["status"].startswith("FAIL ("), j)

    def test_exit_status_and_signal(self):
        self.assertEqual(waits.judge_harness(
            child(stdout=LINE, rc=1), 3000)["status"], "FAIL (exit 1)")
        self.assertEqual(waits.judge_harness(
            child(rc=-11), 3000)["status"], "FAIL (SIGSEGV)")
        self.assertEqual(waits.judge_harness(
            child(stdout=LINE, timeout=True), 3000)["status"], "FAIL (timeout)")


def wake_output(lat, median=None, count=None):
    """What wake.mlir prints: the checksum, the median, the sorted latencies."""
    lat = sorted(lat)
    median = statistics.median(lat) if median is None else median
    lines = [str(len(lat) if count is None else count), f"{median:g}"] + \
        [f"{x:g}" for x in lat]
    return "\n".join(lines) + "\n"


class JudgeWake(unittest.TestCase):
    LAT = [(i % 37 + 3) * 1e-6 for i in range(300)]

    def judge(self, stdout, rc=0):
        return waits.judge_runner(child(stdout=stdout, rc=rc), 300, bench)

    def test_the_median_is_the_figure(self):
        j = self.judge(wake_output(self.LAT))
        self.assertEqual(j["status"], "ok", j)
        self.assertAlmostEqual(j["elapsed_s"], statistics.median(self.LAT))

    def test_a_median_that_is_not_the_latencies_median_fails(self):
        j = self.judge(wake_output(self.LAT, median=1e-3))
        self.assertEqual(j["status"], "FAIL (median)")

    def test_unsorted_latencies_fail(self):
        out = wake_output(self.LAT).splitlines()
        out[2], out[-1] = out[-1], out[2]
        self.assertEqual(self.judge("\n".join(out) + "\n")["status"],
                         "FAIL (latencies not sorted)")

    def test_missing_latencies_fail(self):
        out = wake_output(self.LAT).splitlines()[:-1]
        self.assertEqual(self.judge("\n".join(out) + "\n")["status"],
                         "FAIL (299 latencies)")

    def test_missing_median_line_fails(self):
        self.assertEqual(self.judge("300\n")["status"], "FAIL (no output)")

    def test_a_failed_pause_is_a_wrong_checksum(self):
        j = self.judge(wake_output(self.LAT, count=299))
        self.assertEqual(j["status"], "FAIL (checksum)")


class JudgeIdleCpu(unittest.TestCase):
    """idle-cpu.mlir's output: the counter, the window's CPU seconds, the
    settle's CPU seconds, the pauses that slept."""

    def judge(self, stdout, rc=0):
        return waits.judge_runner(child(stdout=stdout, rc=rc), 1999000,
                                        bench, "cpu")

    def test_the_window_cpu_is_the_figure(self):
        j = self.judge("1999000\n0.0012\n0.03\n2\n")
        self.assertEqual(j["status"], "ok", j)
        self.assertAlmostEqual(j["elapsed_s"], 0.0012)
        self.assertAlmostEqual(j["settle_cpu_s"], 0.03)

    def test_a_wrong_counter_fails(self):
        self.assertEqual(self.judge("1998999\n0.0012\n0.03\n2\n")["status"],
                         "FAIL (checksum)")

    def test_a_pause_that_did_not_sleep_fails(self):
        self.assertEqual(self.judge("1999000\n0.0012\n0.03\n1\n")["status"],
                         "FAIL (1 pause(s) did not sleep)")

    def test_missing_lines_fail(self):
        self.assertEqual(self.judge("1999000\n0.0012\n0.03\n")["status"],
                         "FAIL (3 output lines, not 4)")

    def test_negative_cpu_fails(self):
        self.assertEqual(self.judge("1999000\n-0.5\n0.03\n2\n")["status"],
                         "FAIL (negative CPU time)")

    def test_the_program_declares_the_cpu_figure(self):
        p = waits.Program(waits.WAITS_DIR / "idle-cpu.mlir")
        self.assertEqual((p.tool, p.figure, p.expect), ("runner", "cpu", 1999000))
        self.assertEqual(sum(range(2000)), p.expect)


class JudgeLongTask(unittest.TestCase):
    """long-task.mlir's output: L's result, the lag of the await of S, the
    time to the return of the await of L (seconds since S completed)."""

    EXPECT = -5339366761872953856

    def judge(self, stdout, rc=0):
        return waits.judge_runner(child(stdout=stdout, rc=rc), self.EXPECT,
                                  bench, "lag")

    def test_the_lag_is_the_figure(self):
        j = self.judge(f"{self.EXPECT}\n0.0179\n0.0180\n")
        self.assertEqual(j["status"], "ok", j)
        self.assertAlmostEqual(j["elapsed_s"], 0.0179)

    def test_a_wrong_result_fails(self):
        self.assertEqual(self.judge("1\n0.0179\n0.0180\n")["status"],
                         "FAIL (checksum)")

    def test_negative_or_out_of_order_times_fail(self):
        self.assertEqual(self.judge(f"{self.EXPECT}\n-1e-06\n0.0180\n")["status"],
                         "FAIL (negative lag)")
        self.assertEqual(self.judge(f"{self.EXPECT}\n0.02\n0.0180\n")["status"],
                         "FAIL (L's await returned before S's)")

    def test_missing_line_fails(self):
        self.assertEqual(self.judge(f"{self.EXPECT}\n0.0179\n")["status"],
                         "FAIL (2 output lines, not 3)")

    def test_the_program_declares_the_lag_figure(self):
        p = waits.Program(waits.WAITS_DIR / "long-task.mlir")
        self.assertEqual((p.tool, p.figure, p.expect, p.opt),
                         ("runner", "lag", self.EXPECT, "-O0"))


class Statistics(unittest.TestCase):
    """The figures of a configuration and the per-round ratios, as
    waits.run takes them from bench.py."""

    def test_median_iqr_and_per_round_ratio(self):
        runs = lambda xs: [{"status": "ok", "elapsed_s": x, "wall_s": 1.0,  # noqa: E731
                            "maxrss_kib": 1, "round": i}
                           for i, x in enumerate(xs)]
        entry = {"runs": {"harness/cxx": runs([10e-6, 20e-6, 30e-6]),
                          "harness/ours": runs([20e-6, 10e-6, 60e-6])}}
        entry["summary"] = {k: bench.summarize(v)
                            for k, v in entry["runs"].items()}
        self.assertAlmostEqual(entry["summary"]["harness/ours"]
                               ["elapsed_median_s"], 20e-6)
        r = bench.paired_ratio(entry, "harness/cxx", "harness/ours")
        self.assertEqual([round(x, 3) for x in r["per_run"]], [0.5, 2.0, 0.5])
        self.assertAlmostEqual(r["median"], 0.5)
        self.assertEqual(waits.us_cell(entry["summary"]["harness/ours"]),
                         "20.0 (125%)")

    def test_targets(self):
        ok = {"status": "ok", "elapsed_median_s": 9e-6}
        slow = {"status": "ok", "elapsed_median_s": 11e-6}
        _, wake = waits.TARGETS["wake"]
        self.assertTrue(wake(ok, {}))
        self.assertFalse(wake(slow, {}))
        self.assertFalse(wake({"status": "FAIL (exit 1)"}, {}))
        _, one = waits.TARGETS["one-task"]
        self.assertTrue(one(ok, {"cxx/ours": {"median": 1.0}}))
        self.assertFalse(one(ok, {"cxx/ours": {"median": 0.2}}))
        self.assertFalse(one(ok, {"cxx/ours": None}))


class Select(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        (self.dir / "wake.mlir").write_text(
            "// BENCH-WAIT: runner\n// BENCH-EXPECT: 300\n")
        (self.dir / "one-task.mlir").write_text("// BENCH-WAIT: harness\n")
        self.args = argparse.Namespace(waits_dir=self.dir, no_waits=False)

    def test_all_in_display_order_without_only(self):
        progs, rest = waits.select(self.args, None)
        self.assertEqual([p.name for p in progs], ["one-task", "wake"])
        self.assertEqual([p.tool for p in progs], ["harness", "runner"])
        self.assertEqual(progs[1].expect, 300)
        self.assertIsNone(rest)

    def test_only_is_split(self):
        progs, rest = waits.select(self.args, ["fan-out", "wake"])
        self.assertEqual([p.name for p in progs], ["wake"])
        self.assertEqual(rest, ["fan-out"])

    def test_no_waits(self):
        self.args.no_waits = True
        self.assertEqual(waits.select(self.args, None), ([], None))

    def test_bad_directive_names_the_file(self):
        (self.dir / "wake.mlir").write_text("// BENCH-WAIT: both\n")
        with self.assertRaises(SystemExit) as e:
            waits.select(self.args, None)
        self.assertIn("wake.mlir", str(e.exception))


@unittest.skipUnless((LLVM_BIN / "mlir-opt").exists(),
                     "needs LLVM 19's mlir-opt (make setup)")
class Lowering(unittest.TestCase):
    def test_every_program_lowers_and_runs_tasks(self):
        out = Path(tempfile.mkdtemp())
        progs, _ = waits.select(argparse.Namespace(
            waits_dir=waits.WAITS_DIR, no_waits=False), None)
        self.assertEqual([p.name for p in progs],
                         ["one-task", "wake", "idle-cpu", "long-task"])
        awaits = {"one-task": "mlirAsyncRuntimeAwaitToken",
                  "wake": "mlirAsyncRuntimeAwaitToken",
                  "idle-cpu": "mlirAsyncRuntimeAwaitAllInGroup",
                  "long-task": "mlirAsyncRuntimeAwaitValue"}
        for p in progs:
            bench.lower(p, LLVM_BIN, out, want_ir=True)
            self.assertIsNone(p.lower_error, p.name)
            called = set(loops.CALL.findall(p.llvm_ir.read_text()))
            self.assertIn("mlirAsyncRuntimeExecute", called, p.name)
            self.assertIn(awaits[p.name], called, p.name)
        self.assertIn("usleep", set(loops.CALL.findall(
            progs[1].llvm_ir.read_text())))
        self.assertTrue({"usleep", "clock"} <= set(loops.CALL.findall(
            progs[2].llvm_ir.read_text())))

if __name__ == "__main__":
    unittest.main()
