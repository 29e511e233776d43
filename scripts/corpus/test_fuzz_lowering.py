"""Unit tests of scripts/corpus/fuzz_lowering.py: the model of async-parallel-for's
aligned-block bug against the shapes measured by hand (docs/lowering-bugs.md),
and the generator's output lines (make fuzz-lowering-ci runs them)."""
import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_lowering as fz  # noqa: E402

STATIC = [True, True]


class ModelTest(unittest.TestCase):
    def test_default_options(self):
        for shape in ((16, 64), (32, 32), (64, 64), (8, 128), (7, 143)):
            self.assertTrue(fz.predicts_duplicates(list(shape), STATIC, 8, 1000), shape)
        for shape in ((64, 16), (128, 8), (40, 40), (100, 10), (33, 100), (100, 250), (1, 1000)):
            self.assertFalse(fz.predicts_duplicates(list(shape), STATIC, 8, 1000), shape)

    def test_min_task_size_one(self):
        for shape in ((40, 40), (100, 10), (33, 100), (100, 250)):
            self.assertTrue(fz.predicts_duplicates(list(shape), STATIC, 8, 1), shape)
        for shape in ((16, 64), (32, 32), (64, 64), (8, 128)):
            self.assertFalse(fz.predicts_duplicates(list(shape), STATIC, 8, 1), shape)

    def test_smallest_shape_and_dynamic_inner_bounds(self):
        self.assertTrue(fz.predicts_duplicates([2, 2], STATIC, 1, 3))
        self.assertFalse(fz.predicts_duplicates([3, 2], STATIC, 1, 3))
        self.assertFalse(fz.predicts_duplicates([2, 2], [True, False], 1, 3))
        self.assertFalse(fz.predicts_duplicates([1001], [True], 8, 1000))

    def test_empty_dimensions_explain_but_do_not_predict(self):
        d = {'loops': [[{'lb': 0, 'ub': 2, 'step': 1, 'src': [None, None, None]},
                        {'lb': 1, 'ub': 0, 'step': 1, 'src': [None, 0, None]}]]}
        self.assertTrue(fz.empty_dimension(d, [0]))
        self.assertFalse(fz.empty_dimension(d, [1]))   # trip count 0: the pass skips it
        self.assertFalse(fz.predicted(d, [0], 8, 1))


    def test_duplicates_of_a_body_that_never_runs_do_not_show(self):
        # 9x6 with an inner scf.parallel whose upper bound is 0 (run 19 of
        # the long generator run predicted it and it passed).
        aligned = [{'lb': 0, 'ub': 9, 'step': 1, 'src': [None, None, None]},
                   {'lb': 0, 'ub': 6, 'step': 1, 'src': [None, None, None]}]
        inner = [{'lb': 0, 'ub': 11, 'step': 1, 'src': [None, 0, None]}]
        d = {'loops': [aligned, inner]}
        self.assertTrue(fz.predicted(d, [11], 2, 10))
        self.assertFalse(fz.predicted(d, [0], 2, 10))
        d = {'loops': [aligned], 'for_dims': inner}
        self.assertTrue(fz.predicted(d, [3], 2, 10))
        self.assertFalse(fz.predicted(d, [0], 2, 10))


class GeneratorTest(unittest.TestCase):
    def test_every_program_gets_its_own_line_id(self):
        head, groups, descs, _, _, functions = fz.batch(random.Random(7), 100, 50)
        text = fz.module(head, groups)
        self.assertEqual([d['program'] for d in descs], list(range(100, 150)))
        self.assertEqual([k for k, _ in groups], list(range(100, 150)))
        self.assertLessEqual(functions, 50)
        self.assertEqual(text.count('func.func @main()'), 1)
        for r in (1, 2, 3):
            self.assertEqual(text.count('func.func @sum%d(' % r), 1)

    def test_output_lines_are_read_by_id(self):
        with tempfile.NamedTemporaryFile('w', suffix='.out', delete=False) as f:
            f.write('p 3 10 20\nnoise\np 12 7\n')
        try:
            self.assertEqual(fz.output_lines(f.name), {3: '10 20', 12: '7'})
        finally:
            os.remove(f.name)


if __name__ == '__main__':
    unittest.main()
