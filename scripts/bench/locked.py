#!/usr/bin/env python3
"""Locked instructions of a runtime library per task, by function: the
counting behind the contention audit of docs/scaling.md.

    locked.py --library SO [--env VAR=V ...] [--size-var BENCH_SIZE]
              [--sizes N1,N2 | --sizes N] -- PROGRAM [ARG...]

Runs PROGRAM under callgrind with --dump-instr=yes at two sizes (the
environment variable --size-var set to each of --sizes, and `{size}` in
the arguments replaced by it; the difference cancels start-up and
teardown; with one size N, one run as it is, divided by N: start-up
included), disassembles SO (objdump -d) and counts the
executions of its lock-prefixed instructions, its xchg with memory (locked
implicitly) and its mfence, per function: per unit of size (a task of
fan-out, a round of blocking-awaits ...). Each function's load address is
found from its lowest executed instruction against its symbol (the entry
of a called function is always executed). Prints one line per function,
most first, and the total; --json FILE writes them; --lines also prints
each locked instruction, with its source lines (addr2line, inlined frames
innermost first).

A locked read-modify-write is where cores meet: a shared line it writes
moves to the writer's core (50-100 ns across cores, more across sockets;
4.6-4.8 ns back to back when the line stays, bench/README.md).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

# objdump -d line: "  12345:\tlock cmpxchg %rcx,(%rdx)" (--no-show-raw-insn).
INSN = re.compile(r"^\s*([0-9a-f]+):\s+(.*)$")
FUNC = re.compile(r"^([0-9a-f]+) <(.+)>:$")


def locked_instructions(disassembly: str) -> tuple[dict[int, str], dict[str, int]]:
    """({address: function} of the locked instructions, {function: start})."""
    locked, starts, fn = {}, {}, ""
    for line in disassembly.splitlines():
        m = FUNC.match(line)
        if m:
            fn = m.group(2)
            starts[fn] = int(m.group(1), 16)
            continue
        m = INSN.match(line)
        if not m:
            continue
        text = m.group(2).split("#")[0].strip()
        mnemonic = text.split()[0] if text else ""
        if (mnemonic == "lock" or mnemonic.startswith("lock ") or mnemonic == "mfence"
                or (mnemonic.startswith("xchg") and "(" in text)):
            locked[int(m.group(1), 16)] = fn
    return locked, starts


_POS = re.compile(r"^(0x[0-9a-f]+|[+-]\d+|\*)\s+(\d+)")
_NAME = re.compile(r"^\((\d+)\)(?: (.*))?$")


def executed(callgrind: str, obj_suffix: str) -> dict[str, Counter]:
    """{function: Counter(address: executions)} of the functions of the
    object whose path ends with obj_suffix (self cost only: the cost lines
    after a calls= line are the call's inclusive cost and are skipped)."""
    names: dict[str, dict[str, str]] = {"ob": {}, "fn": {}}

    def name(kind: str, tok: str) -> str:
        m = _NAME.match(tok)
        if not m:
            return tok
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), tok)

    out: dict[str, Counter] = {}
    ob = fn = ""
    addr = 0
    skip_next = False
    for line in callgrind.splitlines():
        if line.startswith("ob="):
            ob = name("ob", line[3:].strip())
        elif line.startswith("fn="):
            fn = name("fn", line[3:].strip())
        elif line.startswith(("cob=", "cfi=", "cfn=", "fi=", "fe=", "fl=")):
            if line.startswith("cob="):
                name("ob", line[4:].strip())
            elif line.startswith("cfn="):
                name("fn", line[4:].strip())
        elif line.startswith("calls="):
            skip_next = True
        else:
            m = _POS.match(line)
            if not m:
                continue
            pos = m.group(1)
            if pos.startswith("0x"):
                addr = int(pos, 16)
            elif pos != "*":
                addr += int(pos)
            if skip_next:
                skip_next = False
                continue
            if ob.endswith(obj_suffix):
                out.setdefault(fn, Counter())[addr] += int(m.group(2))
    return out


def count(callgrind: str, library: Path, disassembly: str) -> Counter:
    """Executions of the library's locked instructions, per (function,
    offset in the library)."""
    locked, starts = locked_instructions(disassembly)
    by_fn = executed(callgrind, library.name)
    # The load base, from the functions whose symbol we know.
    bases = Counter(min(addrs) - starts[f] for f, addrs in by_fn.items() if f in starts and addrs)
    if not bases:
        raise SystemExit(f"locked.py: no function of {library.name} found in the callgrind output")
    base = bases.most_common(1)[0][0]
    total: Counter = Counter()
    for addrs in by_fn.values():
        for a, n in addrs.items():
            f = locked.get(a - base)
            if f is not None:
                total[(f, a - base)] += n
    return total


def demangle(symbol: str) -> str:
    """A legacy-mangled Rust or C++ name as a path, without the hash:
    _ZN4core3ptr13drop_in_place17h0123456789abcdefE -> core::ptr::drop_in_place."""
    if not symbol.startswith("_ZN"):
        return symbol
    parts, i = [], 3
    while i < len(symbol) and symbol[i].isdigit():
        j = i
        while symbol[j].isdigit():
            j += 1
        n = int(symbol[i:j])
        parts.append(symbol[j:j + n])
        i = j + n
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    path = "::".join(parts)
    for code, char in (("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$C$", ","),
                       ("$RF$", "&"), ("$BP$", "*"), ("..", "::"), ("$u7b$", "{"), ("$u7d$", "}")):
        path = path.replace(code, char)
    return path or symbol


def by_name(counts: Counter) -> Counter:
    """The counts by demangled name (monomorphs of one function merged)."""
    out: Counter = Counter()
    for (f, _), n in counts.items():
        out[demangle(f)] += n
    return out


def by_offset(counts: Counter) -> Counter:
    """The counts by offset in the library."""
    out: Counter = Counter()
    for (_, offset), n in counts.items():
        out[offset] += n
    return out


def source_lines(library: Path, offsets: list[int]) -> dict[int, list[str]]:
    """{offset: ["function at file:line", ...]}, inlined frames innermost
    first (addr2line)."""
    if not offsets:
        return {}
    text = subprocess.run(["addr2line", "-e", str(library), "-i", "-f", "-C", "-a"] + [hex(o) for o in offsets],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    out: dict[int, list[str]] = {}
    current = None
    i = 0
    while i < len(text):
        if text[i].startswith("0x"):
            current = int(text[i], 16)
            out[current] = []
            i += 1
            continue
        function, where = text[i], text[i + 1] if i + 1 < len(text) else "?"
        where = re.sub(r".*/(runtime|crossbeam[^/]*|library)/", r"\1/", where)
        out[current].append(f"{re.sub(r'::h[0-9a-f]{16}$', '', function)} at {where}")
        i += 2
    return out


def run(program: list[str], env: dict, out: Path) -> str:
    # The exit status is not checked: the pack's programs check their
    # answer at their default size and exit 3 at any other (bench/pack/driver.c).
    subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", "--dump-line=no",
                    "--demangle=no", "--compress-pos=no", f"--callgrind-out-file={out}"] + program,
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out.read_text()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", type=Path, required=True, help="the runtime library to count in")
    ap.add_argument("--env", action="append", default=[], metavar="VAR=V",
                    help="set in the program's environment (repeatable)")
    ap.add_argument("--size-var", default="BENCH_SIZE", help="the variable that sets the size")
    ap.add_argument("--sizes", default="10000,20000", help="two sizes (default 10000,20000)")
    ap.add_argument("--json", type=Path, help="write the counts here too")
    ap.add_argument("--lines", action="store_true", help="also each locked instruction with its source lines")
    ap.add_argument("program", nargs="+")
    a = ap.parse_args()
    try:
        sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        sizes = []
    if len(sizes) not in (1, 2):
        ap.error("--sizes takes one or two integers: N, or N1,N2")
    env = dict(os.environ, **dict(e.split("=", 1) for e in a.env))
    disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(a.library)],
                                 capture_output=True, text=True, check=True).stdout
    counts, raw = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            program = [arg.replace("{size}", str(size)) for arg in a.program]
            run_env = dict(env, **{a.size_var: str(size)}) if len(sizes) == 2 else env
            raw.append(count(run(program, run_env, Path(tmp) / f"cg.{size}"), a.library, disassembly))
            counts.append(by_name(raw[-1]))
    if len(sizes) == 1:
        counts.insert(0, Counter())
        raw.insert(0, Counter())
        sizes.insert(0, 0)
    small, big = sizes
    per = {f: (counts[1][f] - counts[0][f]) / (big - small) for f in set(counts[0]) | set(counts[1])}
    per = {f: v for f, v in per.items() if abs(v) >= 0.005}
    for f, v in sorted(per.items(), key=lambda kv: -kv[1]):
        print(f"{v:8.2f}  {f}")
    print(f"{sum(per.values()):8.2f}  total locked instructions per unit of {a.size_var}")
    if a.lines:
        small_at, big_at = by_offset(raw[0]), by_offset(raw[1])
        at = {o: (big_at[o] - small_at[o]) / (big - small) for o in set(small_at) | set(big_at)}
        at = {o: v for o, v in at.items() if abs(v) >= 0.005}
        where = source_lines(a.library, sorted(at))
        for o, v in sorted(at.items(), key=lambda kv: -kv[1]):
            print(f"{v:8.2f}  {o:#x}")
            for frame in where.get(o, []):
                print(f"            {frame}")
    if a.json:
        a.json.write_text(json.dumps({"program": a.program, "env": a.env, "sizes": [small, big],
                                      "per_unit": per}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
