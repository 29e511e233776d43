"""The benchmark pack's logic (scripts/bench/pack_run.py, the pack's run.py;
bench/pack/driver.c): the command line, the round plan, how a run is
judged, the speed-ups and ratios, the plot, and the driver's answer check.

    python3 -m unittest discover -s scripts/bench -p 'test_pack_*.py'
(make bench-pack-ci)
"""
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import pack_build  # noqa: E402
import pack_run  # noqa: E402


class CommandLine(unittest.TestCase):
    def test_workers_are_sorted_and_unique(self):
        a = pack_run.parse_args(["--workers", "4,1,2,2", "--runs=3"], 8)
        self.assertEqual(a["workers"], [1, 2, 4])
        self.assertEqual(a["runs"], 3)

    def test_default_workers_are_those_the_cpus_allow(self):
        self.assertEqual(pack_run.parse_args([], 6)["workers"], [1, 2, 4])

    def test_bad_input_is_one_usage_error(self):
        for argv in (["--workers", "0"], ["--workers", "x"], ["--runs", "-1"], ["--bogus"],
                     ["--runs"], ["--workers", "1,4"], ["--timeout", "soon"]):
            with self.assertRaises(pack_run.Usage, msg=argv) as e:
                pack_run.parse_args(argv, 2)
            self.assertNotIn("\n", str(e.exception))


class Plan(unittest.TestCase):
    PROGRAMS = [{"name": "a", "async": "bin/a", "omp": None},
                {"name": "l", "async": "bin/l", "omp": "bin/l.omp"},
                {"name": "w", "async": "bin/w", "omp": None, "floor": False}]

    def test_every_runtime_at_every_count_and_the_floor_once(self):
        runs = pack_run.plan(self.PROGRAMS, [1, 2])
        self.assertIn(("l", "omp", 2), runs)
        self.assertNotIn(("a", "omp", 1), runs)
        self.assertEqual([r for r in runs if r[1] == "floor"], [("a", "floor", 1), ("l", "floor", 1)])
        self.assertEqual(len(runs), 3 * 2 * 2 + 2 + 2)

    def test_rounds_rotate_the_same_runs(self):
        runs = pack_run.plan(self.PROGRAMS, [1, 2])
        self.assertEqual(sorted(pack_run.rotate(runs, 3)), sorted(runs))
        self.assertNotEqual(pack_run.rotate(runs, 1), runs)


class Judge(unittest.TestCase):
    def test_a_wrong_answer_or_a_crash_is_never_a_time(self):
        self.assertEqual(pack_run.judge(3, "5\n0.1\n", False)["status"], "FAIL (wrong answer)")
        self.assertEqual(pack_run.judge(-11, "", False)["status"], "FAIL (signal 11)")
        self.assertEqual(pack_run.judge(0, "5\n", False)["status"], "FAIL (no time)")
        self.assertEqual(pack_run.judge(None, "", True)["status"], "FAIL (timeout)")
        ok = pack_run.judge(0, "5\n0.25\n", False)
        self.assertEqual((ok["status"], ok["elapsed_s"]), ("ok", 0.25))


def summary(t):
    return {"status": "ok", "median_s": t, "q1_s": t, "q3_s": t, "runs": 1}


class Analyse(unittest.TestCase):
    def test_speed_ups_and_ratios(self):
        results = {"p": {"ours": {1: summary(1.0), 2: summary(0.5)},
                         "cxx": {1: summary(2.0), 2: summary(1.5)},
                         "omp": {}, "floor": {1: summary(0.9)}}}
        r = pack_run.analyse(results, [1, 2])["p"]
        self.assertAlmostEqual(r[2]["speedup_ours"], 2.0)
        self.assertAlmostEqual(r[2]["speedup_cxx"], 4 / 3)
        self.assertAlmostEqual(r[2]["cxx_over_ours"], 3.0)
        self.assertAlmostEqual(r[2]["ours_of_ideal"], 1.0)
        self.assertNotIn("omp_over_ours", r[2])
        header, rows = pack_run.table_rows(results, pack_run.analyse(results, [1, 2]), [1, 2])
        self.assertEqual(len(rows), 2)
        self.assertEqual(len(rows[0]), len(header))

    def test_a_failed_cell_has_no_ratio(self):
        results = {"p": {"ours": {1: summary(1.0), 2: {"status": "FAIL (timeout)"}},
                         "cxx": {}, "omp": {}, "floor": {}}}
        self.assertEqual(pack_run.analyse(results, [1, 2])["p"][2], {})

    def test_the_plot_is_svg_with_a_line_per_runtime(self):
        results = {"p": {"ours": {1: summary(1.0), 2: summary(0.6)},
                         "cxx": {1: summary(1.0), 2: summary(0.8)},
                         "omp": {}, "floor": {}}}
        with tempfile.TemporaryDirectory() as tmp:
            svg = Path(tmp) / "s.svg"
            pack_run.svg_plot(svg, pack_run.analyse(results, [1, 2]), [1, 2], "t <1>", "s")
            root = ET.parse(svg).getroot()
        lines = root.findall(".//{http://www.w3.org/2000/svg}polyline")
        self.assertEqual(len(lines), 3)  # ideal, ours, C++


class Build(unittest.TestCase):
    def test_aot_levels(self):
        self.assertEqual(pack_build.opt_level("-O0"), 1)
        self.assertEqual(pack_build.opt_level("-O3"), 3)


class Driver(unittest.TestCase):
    """bench/pack/driver.c with a stand-in entry that prints an answer."""

    def run_driver(self, printed):
        with tempfile.TemporaryDirectory() as tmp:
            entry = Path(tmp) / "entry.c"
            entry.write_text('#include <stdio.h>\nvoid pack_entry(void) { printf("%s\\n0.5\\n"); }\n'
                             % printed)
            exe = Path(tmp) / "prog"
            subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-O1", '-DPACK_EXPECT="42"',
                            str(REPO / "bench/pack/driver.c"), str(entry), "-o", str(exe)],
                           check=True)
            return subprocess.run([str(exe)], capture_output=True, text=True)

    def test_the_right_answer_passes_and_its_output_comes_through(self):
        r = self.run_driver("42")
        self.assertEqual((r.returncode, r.stdout), (0, "42\n0.5\n"))

    def test_a_wrong_answer_exits_3(self):
        r = self.run_driver("41")
        self.assertEqual(r.returncode, 3)
        self.assertIn('first line "41", expected "42"', r.stderr)


if __name__ == "__main__":
    unittest.main()
