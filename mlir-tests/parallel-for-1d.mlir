// async-parallel-for on 1-D scf.parallel loops: the pass splits the loop into
// blocks run as async tasks (recursive dispatch through Execute and a group
// with async-dispatch=true, a plain loop of Execute calls with false), sized
// with the runtime's worker count when num-workers=-1. Checks every element
// of several small loops (bounds, steps, negative and empty ranges) and the
// exact sum of a large loop, so a block that ran twice, not at all, or after
// the await returned changes the output.

// Dispatch on; worker count from the runtime (mlirAsyncRuntimGetNumWorkerThreads).
// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=true num-workers=-1 min-task-size=1},%async_passes)" | %run_async | FileCheck %s
// Dispatch off (tasks launched by a loop in the caller).
// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=false num-workers=-1 min-task-size=1},%async_passes)" | %run_async | FileCheck %s
// More blocks than workers, policy-based reference counting.
// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=true num-workers=20 min-task-size=1},%async_policy_passes)" | %run_async | FileCheck %s
// The pass defaults (dispatch on, 8 workers, min task size 1000).
// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for,%async_passes)" | %run_async | FileCheck %s

func.func private @printMemrefI64(memref<*xi64>) attributes { llvm.emit_c_interface }

func.func @fill(%A: memref<9xi64>, %v: i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  scf.for %i = %c0 to %c9 step %c1 {
    memref.store %v, %A[%i] : memref<9xi64>
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c9 = arith.constant 9 : index
  %cm1 = arith.constant -1 : index
  %cm4 = arith.constant -4 : index
  %cm7 = arith.constant -7 : index
  %zero = arith.constant 0 : i64
  %A = memref.alloc() : memref<9xi64>
  %U = memref.cast %A : memref<9xi64> to memref<*xi64>

  // A[i] = i * i + 1 over the whole range.
  func.call @fill(%A, %zero) : (memref<9xi64>, i64) -> ()
  scf.parallel (%i) = (%c0) to (%c9) step (%c1) {
    %x = arith.index_cast %i : index to i64
    %sq = arith.muli %x, %x : i64
    %one = arith.constant 1 : i64
    %v = arith.addi %sq, %one : i64
    memref.store %v, %A[%i] : memref<9xi64>
    scf.reduce
  }
  // CHECK: [1, 2, 5, 10, 17, 26, 37, 50, 65]
  func.call @printMemrefI64(%U) : (memref<*xi64>) -> ()

  // Step 2 from 1: odd indices only.
  func.call @fill(%A, %zero) : (memref<9xi64>, i64) -> ()
  scf.parallel (%i) = (%c1) to (%c9) step (%c2) {
    %x = arith.index_cast %i : index to i64
    memref.store %x, %A[%i] : memref<9xi64>
    scf.reduce
  }
  // CHECK: [0, 1, 0, 3, 0, 5, 0, 7, 0]
  func.call @printMemrefI64(%U) : (memref<*xi64>) -> ()

  // Negative bounds, step 3: i = -7, -4, -1 -> A[i + 8] = i.
  func.call @fill(%A, %zero) : (memref<9xi64>, i64) -> ()
  scf.parallel (%i) = (%cm7) to (%c1) step (%c3) {
    %c8 = arith.constant 8 : index
    %j = arith.addi %i, %c8 : index
    %x = arith.index_cast %i : index to i64
    memref.store %x, %A[%j] : memref<9xi64>
    scf.reduce
  }
  // CHECK: [0, -7, 0, 0, -4, 0, 0, -1, 0]
  func.call @printMemrefI64(%U) : (memref<*xi64>) -> ()

  // Empty range: nothing may be written.
  %seven = arith.constant 7 : i64
  func.call @fill(%A, %seven) : (memref<9xi64>, i64) -> ()
  scf.parallel (%i) = (%c3) to (%c3) step (%c1) {
    memref.store %zero, %A[%i] : memref<9xi64>
    scf.reduce
  }
  // CHECK: [7, 7, 7, 7, 7, 7, 7, 7, 7]
  func.call @printMemrefI64(%U) : (memref<*xi64>) -> ()

  // A large loop: B[i] = 3 * i, then each element is checked and summed
  // sequentially.
  %n = arith.constant 100000 : index
  %B = memref.alloc(%n) : memref<?xi64>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = arith.index_cast %i : index to i64
    %k = arith.constant 3 : i64
    %v = arith.muli %x, %k : i64
    memref.store %v, %B[%i] : memref<?xi64>
    scf.reduce
  }
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> i64 {
    %v = memref.load %B[%i] : memref<?xi64>
    %s = arith.addi %acc, %v : i64
    scf.yield %s : i64
  }
  // 3 * (100000 * 99999 / 2)
  // CHECK: large sum: 14999850000
  vector.print str "large sum: "
  vector.print %sum : i64

  // Atomic accumulation from all blocks into one cell.
  %cnt = memref.alloc() : memref<i64>
  memref.store %zero, %cnt[] : memref<i64>
  %m = arith.constant 5000 : index
  scf.parallel (%i) = (%c0) to (%m) step (%c1) {
    %x = arith.index_cast %i : index to i64
    %o = memref.atomic_rmw addi %x, %cnt[] : (i64, memref<i64>) -> i64
    scf.reduce
  }
  %total = memref.load %cnt[] : memref<i64>
  // 5000 * 4999 / 2
  // CHECK: atomic sum: 12497500
  vector.print str "atomic sum: "
  vector.print %total : i64

  memref.dealloc %cnt : memref<i64>
  memref.dealloc %B : memref<?xi64>
  memref.dealloc %A : memref<9xi64>
  return
}
