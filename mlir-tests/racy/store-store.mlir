// A write-write race: two async.execute regions store to the same memref
// element with no dependency between them. The author expected the region
// issued second to store last (x = 2); when it runs first, x = 1.
//
// Not a passing test: mlir-tests/racy/ holds programs whose output depends
// on the order of unordered tasks, for the schedule explorer
// (docs/exploration.md); lit does not discover this folder.
// RUN: %mlir_opt %s %async_to_llvm | %run_async | FileCheck %s

func.func @main() {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i64
  %x = memref.alloc() : memref<1xi64>
  memref.store %zero, %x[%c0] : memref<1xi64>
  %a = async.execute {
    %one = arith.constant 1 : i64
    memref.store %one, %x[%c0] : memref<1xi64>
    async.yield
  }
  %b = async.execute {
    %two = arith.constant 2 : i64
    memref.store %two, %x[%c0] : memref<1xi64>
    async.yield
  }
  async.await %a : !async.token
  async.await %b : !async.token
  %v = memref.load %x[%c0] : memref<1xi64>
  // CHECK: x = 2
  vector.print str "x = "
  vector.print %v : i64
  memref.dealloc %x : memref<1xi64>
  return
}
