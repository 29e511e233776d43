"""Tests of scripts/bench/blocked.py's own logic (make bench-blocked-check):
the variants of mlir-tests/blocked-tasks.mlir, how a run's output and exit
are judged, which stderr line is its note, which targets --check holds a
run to, and the thread counter threadpeak.so (on a Python process that
starts threads). No MLIR program runs here."""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import blocked  # noqa: E402


def run(tasks, status="completed", threads=4, per=10.0, note=""):
    return {"tasks": tasks, "status": status, "peak_threads": threads,
            "rss_per_task_kib": per, "note": note}


ARGS = argparse.Namespace(workers=2, max_rss_per_task=64.0, limit_tasks=100000)


class Variant(unittest.TestCase):
    def test_program_parameters_replaced(self):
        text = blocked.PROGRAM.read_text()
        v = blocked.variant(text, 123, 7.5)
        self.assertIn("%n_tasks = arith.constant 123 : index", v)
        self.assertIn("%deadline_s = arith.constant 7.5 : f64", v)
        self.assertNotIn("%n_tasks = arith.constant 10000 : index", v)

    def test_default_matches_check_lines(self):
        # The lit RUN line checks the program as written: its CHECK lines
        # must be the output of a completed run of its own N.
        text = blocked.PROGRAM.read_text()
        n = int(re.search(r"%n_tasks = arith\.constant (\d+) : index", text).group(1))
        self.assertIn("// CHECK: blocked tasks: %d\n" % n, text)
        self.assertIn("// CHECK-NEXT: started before the gate opened: %d\n" % n, text)
        self.assertIn("// CHECK-NEXT: sum of index + 1: %d\n" % (n * (n + 1) // 2), text)

    def test_missing_line_is_an_error(self):
        with self.assertRaises(ValueError):
            blocked.variant("func.func @main() { return }", 10, 1.0)


class Judge(unittest.TestCase):
    OK = "blocked tasks: 3\nstarted before the gate opened: 3\nsum of index + 1: 6\n"

    def status(self, stdout, rc=0, timed_out=False, n=3):
        return blocked.status_of(n, rc, timed_out, blocked.parse_output(stdout))

    def test_completed(self):
        self.assertEqual(self.status(self.OK), "completed")

    def test_gate_at_deadline(self):
        out = self.OK.replace("opened: 3", "opened: 2")
        self.assertEqual(self.status(out), "gate at deadline (2 of 3 started)")

    def test_wrong_sum_and_missing_lines(self):
        self.assertTrue(self.status(self.OK.replace(": 6", ": 5")).startswith("wrong output (sum 5"))
        self.assertEqual(self.status("blocked tasks: 3\n"), "wrong output (missing lines)")

    def test_crash_and_timeout(self):
        self.assertEqual(self.status(self.OK, rc=-11), "crashed (SIGSEGV)")
        self.assertEqual(self.status("", rc=1), "crashed (exit 1)")
        self.assertEqual(self.status(self.OK, timed_out=True), "timeout")

    def test_hung_summary(self):
        self.assertTrue(blocked.HUNG.search("x.ll: 1 runs, 0 passed, 0 failed, 1 hung, 0 leaked"))
        self.assertFalse(blocked.HUNG.search("x.ll: 1 runs, 1 passed, 0 failed, 0 hung, 0 leaked"))


class Note(unittest.TestCase):
    def test_system_limit_before_thread_cap(self):
        err = ("mlir_async_runtime: MLIR_ASYNC_RUNTIME_MAX_THREADS=200000 is above the largest cap\n"
               "mlir_async_runtime: cannot start a spare thread: Resource temporarily unavailable\n")
        self.assertIn("cannot start", blocked.note_of(err))
        err2 = err + "mlir_async_runtime: no stack: mmap refused (vm.max_map_count 65530)\n"
        self.assertIn("max_map_count", blocked.note_of(err2))

    def test_first_line_otherwise(self):
        self.assertEqual(blocked.note_of("\nfirst\nsecond\n"), "first")
        self.assertEqual(blocked.note_of(""), "")


class Check(unittest.TestCase):
    def test_pass(self):
        self.assertEqual(blocked.misses(run(10000), ARGS), [])

    def test_thread_bound(self):
        m = blocked.misses(run(10000, threads=5), ARGS)
        self.assertEqual(len(m), 1)
        self.assertIn("more than workers + 2 = 4", m[0])

    def test_rss_bound(self):
        self.assertIn("KiB of RSS", blocked.misses(run(10000, per=65.0), ARGS)[0])

    def test_not_completed(self):
        m = blocked.misses(run(10000, status="gate at deadline (512 of 10000 started)",
                               threads=514, note="thread cap"), ARGS)
        self.assertEqual(len(m), 2)

    def test_limit_named_at_limit_tasks(self):
        failed = "gate at deadline (30000 of 100000 started)"
        self.assertEqual(blocked.misses(run(100000, failed, threads=4,
                                            note="mmap refused: vm.max_map_count"), ARGS), [])
        self.assertEqual(len(blocked.misses(run(100000, failed, threads=4,
                                                note="Resource temporarily unavailable"), ARGS)), 1)
        # Completing is enough there (the thread and RSS bounds are the
        # 10,000-task program's).
        self.assertEqual(blocked.misses(run(100000, threads=9000, per=100.0), ARGS), [])


# Starts 5 threads that all wait, lets them go, then 3 more one after the
# other: the peak is main + 5.
THREADS = """
import threading
go = threading.Event()
ts = [threading.Thread(target=go.wait) for _ in range(5)]
for t in ts: t.start()
go.set()
for t in ts: t.join()
for _ in range(3):
    t = threading.Thread(target=lambda: None); t.start(); t.join()
"""


class ThreadPeak(unittest.TestCase):
    def test_exact_peak(self):
        with tempfile.TemporaryDirectory() as d:
            so = blocked.build_threadpeak(Path(d))
            self.assertEqual(blocked.build_threadpeak(Path(d)), so)  # built once
            out = Path(d) / "peak.txt"
            env = dict(os.environ, LD_PRELOAD=str(so), THREADPEAK_OUT=str(out))
            subprocess.run([sys.executable, "-c", THREADS], env=env, check=True)
            self.assertEqual(blocked.read_peak(out), 6)
            # No thread at all: the file says 1 (main).
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            self.assertEqual(blocked.read_peak(out), 1)
            self.assertIsNone(blocked.read_peak(Path(d) / "missing.txt"))


class Arguments(unittest.TestCase):
    def test_counts(self):
        self.assertEqual(blocked.counts("10000,100_000"), [10000, 100000])
        for bad in ("", "x", "0", "5,-1"):
            with self.assertRaises(argparse.ArgumentTypeError):
                blocked.counts(bad)

    def test_env_pair(self):
        self.assertEqual(blocked.env_pair("A=b=c"), ("A", "b=c"))
        with self.assertRaises(argparse.ArgumentTypeError):
            blocked.env_pair("A")


if __name__ == "__main__":
    unittest.main()
