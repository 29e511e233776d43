// A chain of 1,000,000 nested tasks.
// XFAIL: cxx-runtime
// The C++ runtime runs each continuation inline on the completing thread,
// so completing the chain recurses once per level and dies with SIGSEGV
// (stack overflow) at about 70,000 levels (see nested-chain.mlir).
// Each level is an async.execute that increments a counter, spawns the next
// level and awaits it (non-blocking, inside the task); main blocks on the
// top level only. The whole chain completes from the leaf upwards: every
// level is resumed by its child's completion. Checks the level count and
// that the top token is not in error.

// RUN: %mlir_opt %s %async_to_llvm | %run_async | FileCheck %s

func.func @level(%d: index, %cnt: memref<i64>) -> !async.token {
  %t = async.execute {
    %one = arith.constant 1 : i64
    %o = memref.atomic_rmw addi %one, %cnt[] : (i64, memref<i64>) -> i64
    %c0 = arith.constant 0 : index
    %more = arith.cmpi ne, %d, %c0 : index
    scf.if %more {
      %c1 = arith.constant 1 : index
      %n = arith.subi %d, %c1 : index
      %child = func.call @level(%n, %cnt) : (index, memref<i64>) -> !async.token
      async.await %child : !async.token
    }
    async.yield
  }
  return %t : !async.token
}

func.func @main() {
  %depth = arith.constant 1000000 : index
  %cnt = memref.alloc() : memref<i64>
  %zero = arith.constant 0 : i64
  memref.store %zero, %cnt[] : memref<i64>
  %top = func.call @level(%depth, %cnt) : (index, memref<i64>) -> !async.token
  async.runtime.await %top : !async.token
  %err = async.runtime.is_error %top : !async.token
  %n = memref.load %cnt[] : memref<i64>
  // CHECK: levels: 1000001
  vector.print str "levels: "
  vector.print %n : i64
  // CHECK-NEXT: error: 0
  vector.print str "error: "
  vector.print %err : i1
  // CHECK-NEXT: chain done
  vector.print str "chain done\n"
  memref.dealloc %cnt : memref<i64>
  return
}
