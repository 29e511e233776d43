"""scripts/bench/locked.py: which instructions count as locked, how a
callgrind --dump-instr file is read (self cost only), the load base, the
names.

    python3 -m unittest discover -s scripts/bench -p 'test_locked.py'
"""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locked  # noqa: E402

DISASSEMBLY = """
0000000000001000 <_ZN3foo3bar17h0123456789abcdefE>:
    1000:\tpush   %rbx
    1001:\tlock xadd %rax,(%rdi)
    1006:\txchg   %rax,(%rsi)
    1009:\txchg   %ax,%ax
    100b:\tmfence
    100e:\tret

0000000000002000 <plain>:
    2000:\tlock cmpxchg %rcx,(%rdx)
    2005:\tret
"""

CALLGRIND = """events: Ir
ob=(1) /pack/runtimes/ours/libx.so
fn=(1) _ZN3foo3bar17h0123456789abcdefE
0x401000 10
+1 10
+5 10
+3 10
+2 10
calls=10 0x402000
+0 99
+0 1
fn=(2) plain
0x402000 4
ob=(2) /lib/libc.so.6
fn=(3) other
0x401001 1000
"""


class Locked(unittest.TestCase):
    def test_lock_prefix_xchg_with_memory_and_mfence_count(self):
        found, starts = locked.locked_instructions(DISASSEMBLY)
        self.assertEqual(sorted(found), [0x1001, 0x1006, 0x100B, 0x2000])
        self.assertEqual(starts["plain"], 0x2000)

    def test_self_cost_by_address_of_the_library_only(self):
        by_fn = locked.executed(CALLGRIND, "libx.so")
        self.assertEqual(set(by_fn), {"_ZN3foo3bar17h0123456789abcdefE", "plain"})
        bar = by_fn["_ZN3foo3bar17h0123456789abcdefE"]
        self.assertEqual(bar[0x401001], 10)
        self.assertEqual(bar[0x40100B], 10 + 1)  # the call's inclusive 99 skipped

    def test_counts_with_the_load_base(self):
        counts = locked.count(CALLGRIND, Path("/x/libx.so"), DISASSEMBLY)
        names = locked.by_name(counts)
        self.assertEqual(names["foo::bar"], 10 + 10 + 11)
        self.assertEqual(names["plain"], 4)
        # Each locked instruction by its offset in the library (--lines).
        self.assertEqual(locked.by_offset(counts), {0x1001: 10, 0x1006: 10, 0x100B: 11, 0x2000: 4})

    def test_names(self):
        self.assertEqual(locked.demangle("_ZN3foo3bar17h0123456789abcdefE"), "foo::bar")
        self.assertEqual(locked.demangle("_ZN4core3ptr23drop_in_place$LT$u8$GT$17h0123456789abcdefE"),
                         "core::ptr::drop_in_place<u8>")
        self.assertEqual(locked.demangle("mlirAsyncRuntimeDropRef"), "mlirAsyncRuntimeDropRef")


if __name__ == "__main__":
    unittest.main()
