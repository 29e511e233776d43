"""Tests of sizes.py on a small repository made for each test:
    python3 -m unittest discover -s scripts/check -p 'test_*.py'
"""
import contextlib
import io
import unittest

import git_tree

import sizes


def fn(name, body_lines):
    return 'pub fn %s() {\n%s}\n' % (name, '    let x = 1;\n' * body_lines)


class SizesTest(unittest.TestCase):
    def check(self, files, **limits):
        root = git_tree.make(files)
        out = io.StringIO()
        args = ['--root', root] + ['--%s=%d' % (k.replace('_', '-'), v) for k, v in limits.items()]
        with contextlib.redirect_stdout(out):
            rc = sizes.main(args)
        return rc, out.getvalue()

    def test_a_long_function_of_the_harness_fails_and_elsewhere_passes(self):
        rc, out = self.check({'jit-harness/src/a.rs': fn('short', 58) + fn('long', 59),
                              'runtime/src/b.rs': fn('long', 100)})
        self.assertEqual(rc, 1)
        self.assertIn('jit-harness/src/a.rs:61: fn long is 61 lines (at most 60)', out)
        self.assertNotIn('short', out)
        self.assertNotIn('runtime', out)

    def test_a_long_file_fails_unless_it_is_a_test(self):
        long = '# x\n' * 601
        rc, out = self.check({'scripts/x.py': long, 'scripts/test_x.py': long, 'runtime/tests/t.rs': long,
                              'runtime/src/m.rs': 'fn a() {}\n' * 10 + '#[cfg(test)]\nmod tests {\n' + long + '}\n'})
        self.assertEqual(rc, 1)
        self.assertIn('scripts/x.py: 601 lines (at most 600)', out)
        self.assertNotIn('test_x.py', out)
        self.assertNotIn('t.rs', out)
        self.assertNotIn('m.rs', out)

    def test_a_test_only_declaration_does_not_hide_the_rest_of_the_file(self):
        long = 'fn a() {}\n' * 601
        rc, out = self.check({'runtime/src/m.rs': '#[cfg(all(test, loom))]\nmod loom_m;\n' + long,
                              'runtime/src/n.rs': '#[cfg(test)]\n#[allow(unused)]\npub(crate) mod t {\n' + long + '}\n'})
        self.assertEqual(rc, 1)
        self.assertIn('runtime/src/m.rs: 603 lines (at most 600)', out)
        self.assertNotIn('n.rs', out)

    def test_declarations_and_strings_do_not_confuse_the_braces(self):
        text = 'extern "C" {\n    fn decl(x: i32);\n}\nfn f() {\n    let s = "}}}";\n    let c = \'{\';\n}\n' + fn('g', 3)
        self.assertEqual(sizes.functions(text.splitlines()), [('f', 4, 4), ('g', 8, 5)])


if __name__ == '__main__':
    unittest.main()
