// async-parallel-for on 2-D scf.parallel loops: the iteration space is
// linearized and split into blocks; each block must map back to exactly the
// right (i, j) pairs. Checks every element of a small matrix with steps and
// offsets in both dimensions, and the exact sum of a large one.

// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=true num-workers=-1 min-task-size=1},%async_passes)" | %run_async | FileCheck %s
// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=false num-workers=-1 min-task-size=1},%async_passes)" | %run_async | FileCheck %s
// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=true num-workers=20 min-task-size=1},%async_policy_passes)" | %run_async | FileCheck %s
// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=false num-workers=10 min-task-size=1},%async_passes)" | %run_async | FileCheck %s

func.func private @printMemrefI64(memref<*xi64>) attributes { llvm.emit_c_interface }

func.func @fill(%A: memref<4x5xi64>, %v: i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c5 step %c1 {
      memref.store %v, %A[%i, %j] : memref<4x5xi64>
    }
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %zero = arith.constant 0 : i64
  %k10 = arith.constant 10 : i64
  %A = memref.alloc() : memref<4x5xi64>
  %U = memref.cast %A : memref<4x5xi64> to memref<*xi64>

  // A[i][j] = 10 * i + j everywhere.
  func.call @fill(%A, %zero) : (memref<4x5xi64>, i64) -> ()
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c5) step (%c1, %c1) {
    %x = arith.index_cast %i : index to i64
    %y = arith.index_cast %j : index to i64
    %t = arith.muli %x, %k10 : i64
    %v = arith.addi %t, %y : i64
    memref.store %v, %A[%i, %j] : memref<4x5xi64>
    scf.reduce
  }
  // CHECK:      [0,   1,   2,   3,   4],
  // CHECK-NEXT: [10,   11,   12,   13,   14],
  // CHECK-NEXT: [20,   21,   22,   23,   24],
  // CHECK-NEXT: [30,   31,   32,   33,   34]
  func.call @printMemrefI64(%U) : (memref<*xi64>) -> ()

  // Rows 1 and 3 (start 1, step 2), columns 0, 2, 4 (step 2); -1 elsewhere.
  %m1 = arith.constant -1 : i64
  func.call @fill(%A, %m1) : (memref<4x5xi64>, i64) -> ()
  scf.parallel (%i, %j) = (%c1, %c0) to (%c4, %c5) step (%c2, %c2) {
    %x = arith.index_cast %i : index to i64
    %y = arith.index_cast %j : index to i64
    %t = arith.muli %x, %k10 : i64
    %v = arith.addi %t, %y : i64
    memref.store %v, %A[%i, %j] : memref<4x5xi64>
    scf.reduce
  }
  // CHECK:      [-1,   -1,   -1,   -1,   -1],
  // CHECK-NEXT: [10,   -1,   12,   -1,   14],
  // CHECK-NEXT: [-1,   -1,   -1,   -1,   -1],
  // CHECK-NEXT: [30,   -1,   32,   -1,   34]
  func.call @printMemrefI64(%U) : (memref<*xi64>) -> ()

  // Large: B[i][j] = i * j over 300 x 400, summed sequentially.
  %n = arith.constant 300 : index
  %m = arith.constant 400 : index
  %B = memref.alloc(%n, %m) : memref<?x?xi64>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c1) {
    %x = arith.index_cast %i : index to i64
    %y = arith.index_cast %j : index to i64
    %v = arith.muli %x, %y : i64
    memref.store %v, %B[%i, %j] : memref<?x?xi64>
    scf.reduce
  }
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> i64 {
    %row = scf.for %j = %c0 to %m step %c1 iter_args(%r = %acc) -> i64 {
      %v = memref.load %B[%i, %j] : memref<?x?xi64>
      %s = arith.addi %r, %v : i64
      scf.yield %s : i64
    }
    scf.yield %row : i64
  }
  // (299 * 300 / 2) * (399 * 400 / 2) = 44850 * 79800
  // CHECK: large sum: 3579030000
  vector.print str "large sum: "
  vector.print %sum : i64

  memref.dealloc %B : memref<?x?xi64>
  memref.dealloc %A : memref<4x5xi64>
  return
}
