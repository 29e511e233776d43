// A lost update: two tasks add their producer's result to one shared sum
// without synchronisation. Each reads the sum, awaits its input (a
// suspension point: the task's continuation runs later), then writes the
// sum back. When both read before either writes, one addition is lost and
// the sum is 10 or 20 instead of 30.
//
// Not a passing test: see store-store.mlir.
// RUN: %mlir_opt %s %async_to_llvm | %run_async | FileCheck %s

func.func @main() {
  %zero = arith.constant 0 : i64
  %sum = memref.alloc() : memref<i64>
  memref.store %zero, %sum[] : memref<i64>
  %t1, %v1 = async.execute -> !async.value<i64> {
    %ten = arith.constant 10 : i64
    async.yield %ten : i64
  }
  %t2, %v2 = async.execute -> !async.value<i64> {
    %twenty = arith.constant 20 : i64
    async.yield %twenty : i64
  }
  %a1 = async.execute {
    %s = memref.load %sum[] : memref<i64>
    %x = async.await %v1 : !async.value<i64>
    %n = arith.addi %s, %x : i64
    memref.store %n, %sum[] : memref<i64>
    async.yield
  }
  %a2 = async.execute {
    %s = memref.load %sum[] : memref<i64>
    %x = async.await %v2 : !async.value<i64>
    %n = arith.addi %s, %x : i64
    memref.store %n, %sum[] : memref<i64>
    async.yield
  }
  async.await %a1 : !async.token
  async.await %a2 : !async.token
  %r = memref.load %sum[] : memref<i64>
  // CHECK: sum = 30
  vector.print str "sum = "
  vector.print %r : i64
  memref.dealloc %sum : memref<i64>
  return
}
