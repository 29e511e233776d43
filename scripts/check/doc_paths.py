#!/usr/bin/env python3
"""Docs the code makes true: every path of this repository that a comment,
a Cargo manifest or a Markdown file names must exist.

The Markdown links themselves (targets and #anchors) are lychee's job
(`lychee --offline`, which make check-docs runs beside this); this checker
reads what lychee does not: the paths written as text, in the comments of
the sources (Rust, C, C++, Python, shell, make, lit), in the Cargo
manifests, and in the prose and code spans of the Markdown files.

What counts as a path: a word of path characters that ends in one of this
repository's source extensions (.rs, .py, .sh, .mk, .toml), e.g.
`src/sync/tls.rs` or a bare `lib.rs`, or that has a `/` and starts at a
top directory of the repository (`mlir-tests/lib/`), or names a file under
a directory found beside the naming file or above it. It is resolved
against the directory of the file that names it and each of its parents up
to the repository root (so `src/sync/tls.rs` in runtime/build.rs means
runtime/src/sync/tls.rs), then as the tail of any tracked path (a doc may
name `src/abi/mod.rs` from the runtime's root); a bare file name may be any
tracked file of that name. A word with a glob (`mlir-tests/*.mlir`) must
match something. Makefiles and shell scripts are read whole (a recipe names the script it
runs). Not checked: URLs, absolute paths (`/usr/lib/llvm-19`),
paths that leave the repository (`../shared/docs`), paths after a
variable (`$(LLVM_PREFIX)/lib`, lit's `%S/lib`), what the build writes
(target/, Output/), made-up names in capitals (`NAME.png`,
`tests/data/NAME.mlir`) and the few paths of other projects in EXTERNAL.

Usage: doc_paths.py [--root DIR] [FILE...]   (default: every tracked file)
Prints one line per missing path, `file:line: names PATH, which does not
exist`, then a summary; exits 1 if any is missing.
"""
import argparse
import ast
import fnmatch
import io
import os
import re
import subprocess
import sys
import tokenize

# Where the build writes: paths under these are outputs, not sources.
GENERATED = ('target', 'target-*', 'Output', 'out', '.lit_test_times.txt', '__pycache__')

# A path word: optional ./ or ../ prefixes, then parts of path characters
# (globs allowed) separated by /, optionally ending in /.
WORD = re.compile(r'(?<![\w$)}.\-/~@:*%])((?:\.\.?/)*[\w*][\w.*+\-]*(?:/[\w.*+\-]+)*/?)')
# The extensions of this repository's own sources: a name ending so is
# checked even bare (`lib.rs`) or under a directory that is not ours.
OWN_EXT = re.compile(r'\.(rs|py|sh|mk|toml)$')

# Comment syntax by kind of file: (line comment starts, block comment pairs).
HASH = (('#',), ())
SLASH = (('//',), (('/*', '*/'),))
KINDS = {
    '.rs': SLASH, '.c': SLASH, '.h': SLASH, '.cpp': SLASH,
    '.sh': HASH, '.mk': HASH, '.toml': HASH, '.cfg': HASH,
    '.test': (('#', '//'), ()), '.mlir': (('//',), ()), '.ll': ((';',), ()),
    '.in': HASH, '.supp': HASH, '.txt': HASH,
}
BY_NAME = {'Makefile': HASH, 'run': HASH, 'catalyst-cc': HASH, '.gitignore': None}


def tracked_files(root):
    out = subprocess.run(['git', 'ls-files', '-z'], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    return [f for f in out.split('\0') if f]


def comment_lines(text, kind):
    """Yields (line number, comment text) for each comment of a source."""
    line_starts, blocks = kind
    in_block = None
    for no, line in enumerate(text.splitlines(), 1):
        rest = line
        if in_block:
            end = rest.find(in_block)
            if end < 0:
                yield no, rest
                continue
            yield no, rest[:end]
            rest = rest[end + len(in_block):]
            in_block = None
        for open_, close in blocks:
            start = rest.find(open_)
            if start >= 0 and not _in_string(rest, start):
                end = rest.find(close, start + len(open_))
                if end < 0:
                    in_block = close
                    yield no, rest[start + len(open_):]
                    rest = ''
                else:
                    yield no, rest[start + len(open_):end]
                    rest = rest[:start] + rest[end + len(close):]
        for mark in line_starts:
            at = _comment_start(rest, mark)
            if at >= 0:
                yield no, rest[at + len(mark):]
                break


def _in_string(line, pos):
    """True if pos lies inside a "..." string of the line (roughly: an odd
    number of unescaped double quotes before it)."""
    return len(re.findall(r'(?<!\\)"', line[:pos])) % 2 == 1


def _comment_start(line, mark):
    """Where a line comment begins, skipping marks inside strings, a `#`
    that is part of a shell word ($#, ${#x}, #!) and Rust attributes (#[)."""
    pos = 0
    while True:
        at = line.find(mark, pos)
        if at < 0:
            return -1
        pos = at + 1
        if _in_string(line, at) or _in_quote(line, at):
            continue
        if mark == '#':
            before = line[at - 1] if at else ' '
            after = line[at + 1] if at + 1 < len(line) else ' '
            if before not in ' \t' or after in '[!':
                continue
        return at


def _in_quote(line, pos):
    return len(re.findall(r"(?<![\\\w])'|'(?!\w)", line[:pos])) % 2 == 1


def texts(path, text):
    """The parts of a file whose paths are checked: every line of a Markdown
    file and of a Cargo manifest's comments, the comments of a source."""
    base = os.path.basename(path)
    if base.endswith('.md'):
        yield from enumerate(text.splitlines(), 1)
        return
    if base == 'Makefile' or base.endswith(('.mk', '.sh')):
        # Recipes and scripts name the files they run: every line counts.
        yield from enumerate(text.splitlines(), 1)
        return
    if base.endswith('.py'):
        yield from python_comments(text)
        return
    kind = BY_NAME.get(base, KINDS.get(os.path.splitext(base)[1]))
    if kind:
        yield from comment_lines(text, kind)


def python_comments(text):
    """A Python file's comments and docstrings (module, class, function),
    by its own tokenizer and parser."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string[1:]
        tree = ast.parse(text)
    except (SyntaxError, tokenize.TokenError):
        yield from enumerate(text.splitlines(), 1)
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                first = body[0].value.lineno
                for i, line in enumerate(body[0].value.value.splitlines()):
                    yield first + i, line


class Tree:
    def __init__(self, root, files):
        self.root = root
        self.files = set(files)
        self.dirs = set()
        for f in files:
            d = os.path.dirname(f)
            while d:
                self.dirs.add(d)
                d = os.path.dirname(d)
        self.names = {os.path.basename(f) for f in files} | {os.path.basename(d) for d in self.dirs}
        self.top = {p.split('/', 1)[0] for p in files}

    def suffix_of_tracked(self, rel):
        """True if some tracked path ends with these whole parts (a path
        given from a crate's root, `src/abi/mod.rs`, in a doc elsewhere)."""
        tail = '/' + rel
        return any(p.endswith(tail) for p in self.files) or any(d.endswith(tail) for d in self.dirs)

    def exists(self, rel):
        rel = rel.rstrip('/')
        if rel in self.files or rel in self.dirs or rel == '':
            return True
        if any(c in rel for c in '*?['):
            return any(fnmatch.fnmatchcase(f, rel) for f in self.files) or \
                any(fnmatch.fnmatchcase(d, rel) for d in self.dirs)
        return False

    def is_dir(self, rel):
        return rel == '' or rel in self.dirs


def generated(rel):
    first = rel.split('/', 1)[0]
    return any(fnmatch.fnmatchcase(first, g) for g in GENERATED)


def placeholder(word):
    """A made-up name of an example: a part in capitals (NAME.png,
    FILE.ll, tests/data/NAME.mlir), README and the like aside."""
    for part in word.strip('/').split('/'):
        stem = part.split('.', 1)[0]
        if re.fullmatch(r'[A-Z][A-Z0-9_]*', stem) and stem not in ('README', 'LICENSE'):
            return True
    return False


# Paths of other projects' trees that a doc names as theirs; each with why.
EXTERNAL = {
    'catalyst/compiler.py': "PennyLane Catalyst's Python package (docs/catalyst.md)",
    'runtime/lib/capi/ExecutionContext.hpp': "Catalyst's C++ runtime (docs/catalyst.md)",
}


def check_word(tree, path, word, ignored=EXTERNAL):
    """The word if it names a path of the repository that does not exist,
    else None."""
    word = word.rstrip('.,:;')
    if not word or word.endswith('.') or placeholder(word) or word in ignored:
        return None
    bare = word.rstrip('/')
    has_slash = '/' in bare
    if any(c in bare for c in '*?[') and not has_slash:
        return None
    if not has_slash:
        # A bare file name is checked when it is one of ours (.rs, .py, ...):
        # a file of that name must be tracked somewhere.
        if not OWN_EXT.search(bare):
            return None
        return None if bare in tree.names else word
    bases = []
    d = os.path.dirname(path)
    while True:
        bases.append(d)
        if not d:
            break
        d = os.path.dirname(d)
    first = word.lstrip('./').split('/', 1)[0]
    if word.startswith('.'):
        rel = os.path.normpath(os.path.join(os.path.dirname(path), word))
        if rel == '.' or rel.startswith('..'):
            return None  # leaves the repository
        # Beside the naming file, or from the root (a make recipe runs there).
        bases = [os.path.dirname(path), '']
    # Ours when it ends in one of our extensions, starts at one of the
    # repository's top directories, or names a file (an extension) under a
    # directory found beside the naming file or above it; `floor/ours` (a
    # ratio) or `lib/pkgconfig/` (under an install prefix) are not.
    relevant = bool(OWN_EXT.search(bare)) or first in tree.top
    names_file = '.' in bare.rsplit('/', 1)[-1]
    for base in bases:
        rel = os.path.normpath(os.path.join(base, word))
        if generated(rel) or tree.exists(rel):
            return None
        if names_file and tree.is_dir(os.path.normpath(os.path.join(base, first))):
            relevant = True
    if not relevant or tree.suffix_of_tracked(bare):
        return None
    return word


def check_file(tree, path, text):
    problems = []
    for no, line in texts(path, text):
        line = re.sub(r'[a-z][a-z0-9+.-]*://\S+', ' ', line)  # URLs
        line = line.replace('\\.', '.')  # a path in a regex: scripts/toolchain/setup\.sh
        for m in WORD.finditer(line):
            word = m.group(1)
            if check_word(tree, path, word):
                problems.append((no, word.rstrip('.,:;')))
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'),
                    help='the repository (default: the one holding this script)')
    ap.add_argument('files', nargs='*', help='files to check, relative to the root (default: every tracked file)')
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    files = tracked_files(root)
    tree = Tree(root, files)
    missing = 0
    targets = args.files or files
    for f in targets:
        full = os.path.join(root, f)
        try:
            with open(full, encoding='utf-8') as fh:
                text = fh.read()
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        except FileNotFoundError:
            print('doc_paths: %s: no such file' % f, file=sys.stderr)
            return 2
        for no, word in check_file(tree, f, text):
            print('%s:%d: names %s, which does not exist' % (f, no, word))
            missing += 1
    print('doc_paths: %d files read, %d missing paths' % (len(targets), missing))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
