#!/usr/bin/env python3
"""Tests of producer_order.py's checks on small LLVM-dialect functions in
the shape of MLIR 19's lowering (mlir-tests/scripts.test runs them)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import producer_order as po  # noqa: E402

# An outlined execute with one value, and a caller that adds its token to
# a group. {between} is spliced between the last CreateValue and the
# frame's allocation, {before_add} between the call and AddTokenToGroup.
TEMPLATE = '''module {
  llvm.func @async_execute_fn() -> !llvm.struct<(ptr, ptr)> {
    %0 = llvm.mlir.constant(8 : i64) : i64
    %1 = llvm.mlir.addressof @__resume : !llvm.ptr
    %2 = llvm.call @mlirAsyncRuntimeCreateToken() : () -> !llvm.ptr
    %3 = llvm.call @mlirAsyncRuntimeCreateValue(%0) : (i64) -> !llvm.ptr
{between}
    %4 = llvm.intr.coro.id %0, %1, %1, %1 : (i32, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> !llvm.token
    %5 = llvm.intr.coro.size : i64
    %6 = llvm.call @aligned_alloc(%0, %5) : (i64, i64) -> !llvm.ptr
    %7 = llvm.intr.coro.begin %4, %6 : (!llvm.token, !llvm.ptr) -> !llvm.ptr
    llvm.call @mlirAsyncRuntimeExecute(%7, %1) : (!llvm.ptr, !llvm.ptr) -> ()
    llvm.br ^bb1
  ^bb1:  // pred: ^bb0
    %8 = llvm.mlir.undef : !llvm.struct<(ptr, ptr)>
    %9 = llvm.insertvalue {first}, %8[0] : !llvm.struct<(ptr, ptr)>
    %10 = llvm.insertvalue {second}, %9[1] : !llvm.struct<(ptr, ptr)>
    llvm.return %10 : !llvm.struct<(ptr, ptr)>
  }
  llvm.func @main(%arg0: !llvm.ptr) {
    %0 = llvm.call @mlirAsyncRuntimeCreateGroup(%c) : (i64) -> !llvm.ptr
    %1 = llvm.call @async_execute_fn() : () -> !llvm.struct<(ptr, ptr)>
    %2 = llvm.extractvalue %1[0] : !llvm.struct<(ptr, ptr)>
{before_add}
    %3 = llvm.call @mlirAsyncRuntimeAddTokenToGroup({token}, %0) : (!llvm.ptr, !llvm.ptr) -> i64
    llvm.return
  }
}
'''


def check(between='', before_add='', first='%2', second='%3', token='%2'):
    text = TEMPLATE
    for key, value in (('between', between), ('before_add', before_add), ('first', first),
                       ('second', second), ('token', token)):
        text = text.replace('{%s}' % key, value)
    with tempfile.NamedTemporaryFile('w', suffix='.llvm.mlir', delete=False) as f:
        f.write(text)
    try:
        r = po.Result()
        po.check_file(f.name, r)
        return r
    finally:
        os.remove(f.name)


class ProducerOrder(unittest.TestCase):
    def test_the_lowering_order_passes(self):
        r = check()
        self.assertEqual(r.violations, [])
        self.assertEqual((r.executes, r.groups, dict(r.values)), (1, 1, {1: 1}))
        self.assertEqual(r.between['call @aligned_alloc'], 1)
        self.assertEqual(r.between['intr.coro.begin'], 1)

    def test_a_runtime_call_between_fails_and_is_shown(self):
        r = check(between='    llvm.call @mlirAsyncRuntimeAddRef(%2, %0) : (!llvm.ptr, i64) -> ()')
        self.assertEqual(len(r.violations), 1)
        self.assertIn('@mlirAsyncRuntimeAddRef between CreateToken', r.violations[0])
        self.assertIn('llvm.call @mlirAsyncRuntimeAddRef(%2, %0)', r.violations[0])

    def test_a_call_of_another_function_between_fails(self):
        r = check(between='    llvm.call @helper() : () -> ()')
        self.assertEqual(len(r.violations), 1)
        self.assertIn('@helper', r.violations[0])

    def test_an_indirect_call_between_fails(self):
        r = check(between='    llvm.call %1() : !llvm.ptr, () -> ()')
        self.assertEqual(len(r.violations), 1)
        self.assertIn('@(indirect)', r.violations[0])

    def test_eight_other_executes_before_the_add_fail(self):
        other = '    %%o%d = llvm.call @async_execute_fn() : () -> !llvm.struct<(ptr, ptr)>'
        r = check(before_add='\n'.join(other % i for i in range(po.GROUP_LOOKBACK)))
        self.assertEqual(len(r.violations), 1)
        self.assertIn('%d other executes between it' % po.GROUP_LOOKBACK, r.violations[0])
        r = check(before_add='\n'.join(other % i for i in range(po.GROUP_LOOKBACK - 1)))
        self.assertEqual((r.violations, dict(r.group_gaps)), ([], {po.GROUP_LOOKBACK - 1: 1}))

    def test_returning_other_objects_fails(self):
        r = check(first='%3', second='%2')
        self.assertEqual(len(r.violations), 1)
        self.assertIn('not the token and values it created', r.violations[0])

    def test_a_token_that_is_not_an_executes_fails(self):
        r = check(token='%arg0')
        self.assertEqual(len(r.violations), 1)
        self.assertIn('is not the token of an outlined execute', r.violations[0])

    def test_a_blocking_await_before_the_add_fails(self):
        r = check(before_add='    llvm.call @mlirAsyncRuntimeAwaitToken(%arg0) : (!llvm.ptr) -> ()')
        self.assertEqual(len(r.violations), 1)
        self.assertIn('mlirAsyncRuntimeAwaitToken between it and the execute', r.violations[0])

    def test_awaiting_the_token_itself_before_the_add_passes(self):
        r = check(before_add='    llvm.call @mlirAsyncRuntimeAwaitToken(%2) : (!llvm.ptr) -> ()')
        self.assertEqual(r.violations, [])
        self.assertEqual(r.awaited_first, 1)

    def test_a_join_before_the_execute_stops_the_walk(self):
        # The entry block branches two ways into the Execute's block: its
        # CreateToken is not on a straight-line path any more.
        r = check(between='    llvm.cond_br %c, ^bb8, ^bb9\n  ^bb8:\n    llvm.br ^bb9\n  ^bb9:')
        self.assertEqual(len(r.violations), 1)
        self.assertIn('no CreateToken before it', r.violations[0])


if __name__ == '__main__':
    unittest.main()
