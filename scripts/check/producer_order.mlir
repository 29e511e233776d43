// The shapes of async.execute whose lowering `make check-producer-order`
// (scripts/check/producer_order.py, docs/producer-binding.md) checks, besides
// the corpus: an execute with a token only, with one and with three
// !async.value results, one with a dependency, and an scf.parallel loop,
// lowered with async-parallel-for with async dispatch on (first RUN line)
// and off (second). Runnable: each RUN line prints the sums below.

// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=true num-workers=4 min-task-size=1},%async_passes)" | %run_async | FileCheck %s
// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=false num-workers=4 min-task-size=1},%async_passes)" | %run_async | FileCheck %s

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1 : i64
  %two = arith.constant 2 : i64
  %three = arith.constant 3 : i64
  %A = memref.alloc() : memref<8xi64>

  // A token only.
  %t0 = async.execute {
    memref.store %one, %A[%c0] : memref<8xi64>
    async.yield
  }
  // One value.
  %t1, %v1 = async.execute -> !async.value<i64> {
    async.yield %two : i64
  }
  // Three values.
  %t3, %va, %vb, %vc = async.execute -> (!async.value<i64>, !async.value<i64>, !async.value<i64>) {
    async.yield %one, %two, %three : i64, i64, i64
  }
  // A dependency: runs after %t0, so it reads what that task stored.
  %t4, %v4 = async.execute [%t0] -> !async.value<i64> {
    %x = memref.load %A[%c0] : memref<8xi64>
    %y = arith.addi %x, %three : i64
    async.yield %y : i64
  }
  async.await %t0 : !async.token
  async.await %t1 : !async.token
  %r1 = async.await %v1 : !async.value<i64>
  %ra = async.await %va : !async.value<i64>
  %rb = async.await %vb : !async.value<i64>
  %rc = async.await %vc : !async.value<i64>
  %r4 = async.await %v4 : !async.value<i64>
  %s1 = arith.addi %r1, %ra : i64
  %s2 = arith.addi %rb, %rc : i64
  %s3 = arith.addi %s1, %s2 : i64
  %s4 = arith.addi %s3, %r4 : i64
  // 2 + 1 + 2 + 3 + (1 + 3)
  // CHECK: 12
  vector.print %s4 : i64

  // A parallel loop: A[i] = i.
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %x = arith.index_cast %i : index to i64
    memref.store %x, %A[%i] : memref<8xi64>
    scf.reduce
  }
  %sum = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %c0) -> (index) {
    %x = memref.load %A[%i] : memref<8xi64>
    %xi = arith.index_cast %x : i64 to index
    %n = arith.addi %acc, %xi : index
    scf.yield %n : index
  }
  %sum64 = arith.index_cast %sum : index to i64
  // CHECK-NEXT: 28
  vector.print %sum64 : i64
  memref.dealloc %A : memref<8xi64>
  return
}
