"""Tests of doc_paths.py on a small repository made for each test:
    python3 -m unittest discover -s scripts/check -p 'test_*.py'
"""
import contextlib
import io
import subprocess
import unittest

import git_tree

import doc_paths

TREE = {
    'Cargo.toml': '[workspace]\n# the hooks of runtime/src/abi/mod.rs\n',
    'runtime/build.rs': '//! compiles csrc/tls.c (read by `src/sync/tls.rs`)\nfn main() {}\n',
    'runtime/csrc/tls.c': '/* slots; src/sync/tls.rs names them */\nint x;\n',
    'runtime/src/sync/tls.rs': '// see csrc/tls.c\n',
    'runtime/src/abi/mod.rs': 'let s = "not/a/comment.rs"; // mod.rs\n',
    'scripts/run.py': '"""Reads mlir-tests/lib/ and writes target/corpus/x.ll."""\n# NAME.png, and/or, %S/lib/x.py\n',
    'docs/a.md': 'See `src/abi/mod.rs`, [b](b.md), `floor/ours`, /usr/lib/llvm-19, ../shared/x.md\n',
    'docs/b.md': '# b\n',
    'mlir-tests/lib/pipelines.py': '',
}


class DocPathsTest(unittest.TestCase):
    def repo(self, extra=None):
        return git_tree.make({**TREE, **(extra or {})})

    def run_check(self, root):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = doc_paths.main(['--root', root])
        return rc, out.getvalue()

    def test_a_tree_whose_paths_exist_passes(self):
        rc, out = self.run_check(self.repo())
        self.assertEqual(rc, 0, out)
        self.assertIn('0 missing paths', out)

    def test_a_moved_file_fails_in_every_kind_of_file(self):
        root = self.repo()
        subprocess.run(['git', 'mv', 'runtime/src/sync/tls.rs', 'runtime/src/tls2.rs'], cwd=root, check=True)
        rc, out = self.run_check(root)
        self.assertEqual(rc, 1)
        self.assertIn('runtime/build.rs:1: names src/sync/tls.rs, which does not exist', out)
        self.assertIn('runtime/csrc/tls.c:1: names src/sync/tls.rs', out)

    def test_a_bare_name_of_ours_must_exist_somewhere(self):
        rc, out = self.run_check(self.repo({'Cargo.toml': '# the hooks of abi.rs\n'}))
        self.assertEqual(rc, 1)
        self.assertIn('Cargo.toml:1: names abi.rs', out)

    def test_markdown_prose_and_python_docstrings_are_read(self):
        rc, out = self.run_check(self.repo({
            'docs/a.md': 'the runner is `scripts/corpus/run.py`\n',
            'scripts/run.py': '"""Reads mlir-tests/lib2/x.py."""\n'}))
        self.assertEqual(rc, 1)
        self.assertIn('docs/a.md:1: names scripts/corpus/run.py', out)
        self.assertIn('scripts/run.py:1: names mlir-tests/lib2/x.py', out)

    def test_a_recipe_that_runs_a_missing_script_fails(self):
        rc, out = self.run_check(self.repo({'mk/x.mk': 'x:\n\tbash scripts/gone.sh $(CORPUS_DIR)/y.ll\n'}))
        self.assertEqual(rc, 1)
        self.assertIn('mk/x.mk:2: names scripts/gone.sh', out)
        self.assertNotIn('y.ll', out)

    def test_code_and_strings_are_not_comments(self):
        rc, out = self.run_check(self.repo({'runtime/src/abi/mod.rs': 'let p = "src/gone.rs";\n'}))
        self.assertEqual(rc, 0, out)

    def test_comment_extraction(self):
        lines = list(doc_paths.comment_lines('a /* b\nc */ d // e\n', doc_paths.SLASH))
        self.assertEqual(lines, [(1, ' b'), (2, 'c '), (2, ' e')])
        self.assertEqual(list(doc_paths.comment_lines('echo $# x # y\n', doc_paths.HASH)), [(1, ' y')])


if __name__ == '__main__':
    unittest.main()
