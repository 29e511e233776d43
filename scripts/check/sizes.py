#!/usr/bin/env python3
"""Sizes a reader can take in: no source file of the repository over 600
lines (tests and generated files aside), no Rust function of jit-harness/src
over 60 lines.

A source file is a tracked .rs, .py, .sh, .c, .h or .cpp file; a test is a
file under a `tests/` directory, a `test_*.py`, or a Rust file's trailing
inline `#[cfg(test)]` / `#[cfg(all(test, ...))]` module, whose lines do not
count.
A function's lines run from its `fn` line to its closing brace, its doc
comment and attributes aside.

Usage: sizes.py [--root DIR] [--max-file N] [--max-fn N] [--fn-dir DIR]
Prints one line per file or function over its limit, then a summary; exits
1 if there is any.
"""
import argparse
import os
import re
import subprocess
import sys

SOURCE = re.compile(r'\.(rs|py|sh|c|h|cpp)$')
TEST_MOD = re.compile(r'^#\[cfg\((test|all\(test\b)')
INLINE_MOD = re.compile(r'^(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{')
FN = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"C"\s+)?fn\s+(\w+)')


def is_test(path):
    parts = path.split('/')
    return 'tests' in parts[:-1] or parts[-1].startswith('test_')


def code_lines(text, path):
    """The file's lines, a Rust file's trailing test module left out: from
    a test `#[cfg]` whose item is an inline module (`mod tests {`). A
    test-only declaration (`mod loom_x;`, a hook, a static) ends nothing."""
    lines = text.splitlines()
    if path.endswith('.rs'):
        for i, line in enumerate(lines):
            if TEST_MOD.match(line):
                item = next((l for l in lines[i + 1:] if not l.lstrip().startswith('#[')), '')
                if INLINE_MOD.match(item):
                    return lines[:i]
    return lines


def functions(lines):
    """(name, first line, length) of each Rust fn with a body."""
    out = []
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, seen, j = 0, False, i
        while j < len(lines):
            code = re.sub(r'//.*|"(\\.|[^"\\])*"|\'(\\.|[^\'\\])\'', '', lines[j])
            if not seen and ';' in code and '{' not in code:
                break  # a declaration without a body
            depth += code.count('{') - code.count('}')
            seen = seen or '{' in code
            if seen and depth <= 0:
                out.append((m.group(7), i + 1, j - i + 1))
                break
            j += 1
    return out


def tracked(root):
    out = subprocess.run(['git', 'ls-files', '-z'], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    return [f for f in out.split('\0') if f]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
    ap.add_argument('--max-file', type=int, default=600)
    ap.add_argument('--max-fn', type=int, default=60)
    ap.add_argument('--fn-dir', default='jit-harness/src/',
                    help='the directory whose Rust functions are held to --max-fn')
    a = ap.parse_args(argv)
    over = files = 0
    for path in tracked(a.root):
        if not SOURCE.search(path) or is_test(path):
            continue
        with open(os.path.join(a.root, path), encoding='utf-8', errors='replace') as f:
            lines = code_lines(f.read(), path)
        files += 1
        if len(lines) > a.max_file:
            print('%s: %d lines (at most %d)' % (path, len(lines), a.max_file))
            over += 1
        if path.endswith('.rs') and path.startswith(a.fn_dir):
            for name, first, length in functions(lines):
                if length > a.max_fn:
                    print('%s:%d: fn %s is %d lines (at most %d)' % (path, first, name, length, a.max_fn))
                    over += 1
    print('sizes: %d source files, %d over their limit' % (files, over))
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
