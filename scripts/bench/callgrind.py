"""Instructions and heap allocations of one run, from a callgrind output file.

Callgrind counts every executed instruction (`totals:`) and every call, per
(caller, callee) pair (`calls=` lines under `fn=` / `cfn=`), exactly. An
allocation is a call to an allocation entry point (malloc, calloc, realloc,
aligned_alloc / memalign, posix_memalign, valloc, operator new ...) made
from outside the allocator:

- calls between entry points are one allocation, not two (operator new
  calls malloc; realloc(NULL, n) may too);
- calls made from inside the C library are the allocator's own business:
  glibc's aligned_alloc/memalign calls malloc internally for small
  alignments (`_mid_memalign`), which would otherwise count an aligned
  allocation (every coroutine frame of MLIR's async lowering) twice. The
  only other libc callers are start-up ones (stdio buffers, dlopen), which a
  difference of two program sizes cancels anyway.

Checked against memcheck's "total heap usage: N allocs" on the floor
runtime's fan-out: the same 2.00005 allocations per task.

Run with `--demangle=no` or not: both spellings of operator new match.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ALLOC_ENTRY = re.compile(
    r"^(malloc|calloc|realloc|reallocarray|posix_memalign|aligned_alloc|"
    r"memalign|valloc|pvalloc|_Zn[wa]m\w*|operator new(\[\])?\(.*)$")
LIBC_OBJECT = re.compile(r"/libc\.so(\.\d+)*$")
_COMPRESSED = re.compile(r"^\((\d+)\)(?: (.*))?$")
_RECURSION = re.compile(r"'\d+$")


class Counts:
    def __init__(self, instructions: int, allocations: Counter):
        self.instructions = instructions
        self.allocations = allocations     # entry point -> calls

    @property
    def total_allocations(self) -> int:
        return sum(self.allocations.values())


def parse(text: str) -> Counts:
    """Parses the text of a callgrind.out file (one thread or all merged)."""
    tables: dict[str, dict[str, str]] = {"ob": {}, "fn": {}}

    def name(kind: str, tok: str) -> str:
        # Name compression: "(id) name" the first time, "(id)" afterwards.
        m = _COMPRESSED.match(tok)
        if not m:
            return tok
        if m.group(2) is not None:
            tables[kind][m.group(1)] = m.group(2)
        return tables[kind].get(m.group(1), tok)

    ob = fn = cfn = ""
    total = None
    allocs: Counter = Counter()
    for line in text.splitlines():
        key, sep, rest = line.partition("=")
        if not sep:
            if line.startswith("totals:"):
                total = int(line.split()[1])
            continue
        if key == "ob":
            ob = name("ob", rest)
        elif key == "cob":
            name("ob", rest)          # only to learn the id
        elif key == "fn":
            fn = _RECURSION.sub("", name("fn", rest))
        elif key == "cfn":
            cfn = _RECURSION.sub("", name("fn", rest))
        elif key == "calls":
            if ALLOC_ENTRY.match(cfn) and not ALLOC_ENTRY.match(fn) \
                    and not LIBC_OBJECT.search(ob):
                allocs[cfn] += int(rest.split()[0])
    if total is None:
        raise ValueError("no 'totals:' line: not a complete callgrind output")
    return Counts(total, allocs)


def parse_file(path: Path) -> Counts:
    return parse(path.read_text(errors="replace"))
