// For mlir/test/Integration/Dialect/Async/CPU/ (%lower: the pipeline of
// that directory's tests, written out in lit.cfg.py:
// async-to-async-runtime,func.func(async-runtime-ref-counting,async-runtime-ref-counting-opt),convert-async-to-llvm,func.func(convert-linalg-to-loops),convert-scf-to-cf,func.func(arith-expand),memref-expand,convert-vector-to-llvm,finalize-memref-to-llvm,convert-func-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts).
// It fails with MLIR 19.1.7's pass (2x2: 2 2 2 2, empty: 1, empty 1-D: 1;
// 7x143: 2002 under the default options) and passes with both patches.
// RUN:   mlir-opt %s -pass-pipeline="builtin.module(async-parallel-for{num-workers=1 min-task-size=3},%lower)"          \
// RUN: | mlir-cpu-runner -e entry -entry-point-result=void -O0              \
// RUN:  -shared-libs=%mlir_c_runner_utils                                  \
// RUN:  -shared-libs=%mlir_runner_utils                                    \
// RUN:  -shared-libs=%mlir_async_runtime                                   \
// RUN: | FileCheck %s --dump-input=always
//
// The same with the pass's default options (7x143 is the smallest shape
// they send down the block-aligned path with too many blocks):
// RUN:   mlir-opt %s -pass-pipeline="builtin.module(async-parallel-for{},%lower)"          \
// RUN: | mlir-cpu-runner -e entry -entry-point-result=void -O0              \
// RUN:  -shared-libs=%mlir_c_runner_utils                                  \
// RUN:  -shared-libs=%mlir_runner_utils                                    \
// RUN:  -shared-libs=%mlir_async_runtime                                   \
// RUN: | FileCheck %s --dump-input=always

// Every element of a 2-D iteration space is visited exactly once: the
// block-aligned dispatch must not launch blocks past the end (they wrap
// back to the first rows), and a dimension with ub < lb is empty.

func.func @visits(%n: index, %m: index, %lb1: index, %ub1: index) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %V = memref.alloc(%n, %m) : memref<?x?xi64>
  linalg.fill ins(%zero : i64) outs(%V : memref<?x?xi64>)
  scf.parallel (%i, %j) = (%c0, %lb1) to (%n, %ub1) step (%c1, %c1) {
    %x = memref.load %V[%i, %j] : memref<?x?xi64>
    %y = arith.addi %x, %one : i64
    memref.store %y, %V[%i, %j] : memref<?x?xi64>
    scf.reduce
  }
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> i64 {
    %row = scf.for %j = %c0 to %m step %c1 iter_args(%r = %acc) -> i64 {
      %v = memref.load %V[%i, %j] : memref<?x?xi64>
      %s = arith.addi %r, %v : i64
      scf.yield %s : i64
    }
    scf.yield %row : i64
  }
  memref.dealloc %V : memref<?x?xi64>
  return %sum : i64
}

func.func @entry() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64

  // 2x2, static inner trip count 2.
  %A = memref.alloc() : memref<2x2xi64>
  linalg.fill ins(%zero : i64) outs(%A : memref<2x2xi64>)
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c2) step (%c1, %c1) {
    %x = memref.load %A[%i, %j] : memref<2x2xi64>
    %y = arith.addi %x, %one : i64
    memref.store %y, %A[%i, %j] : memref<2x2xi64>
    scf.reduce
  }
  // CHECK: 2x2: 1 1 1 1
  %a00 = memref.load %A[%c0, %c0] : memref<2x2xi64>
  %a01 = memref.load %A[%c0, %c1] : memref<2x2xi64>
  %a10 = memref.load %A[%c1, %c0] : memref<2x2xi64>
  %a11 = memref.load %A[%c1, %c1] : memref<2x2xi64>
  vector.print str "2x2: "
  vector.print %a00 : i64 punctuation <no_punctuation>
  vector.print str " "
  vector.print %a01 : i64 punctuation <no_punctuation>
  vector.print str " "
  vector.print %a10 : i64 punctuation <no_punctuation>
  vector.print str " "
  vector.print %a11 : i64
  memref.dealloc %A : memref<2x2xi64>

  // 7x143 = 1001 elements, static inner trip count 143.
  %B = memref.alloc() : memref<7x143xi64>
  linalg.fill ins(%zero : i64) outs(%B : memref<7x143xi64>)
  %c7 = arith.constant 7 : index
  %c143 = arith.constant 143 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c7, %c143) step (%c1, %c1) {
    %x = memref.load %B[%i, %j] : memref<7x143xi64>
    %y = arith.addi %x, %one : i64
    memref.store %y, %B[%i, %j] : memref<7x143xi64>
    scf.reduce
  }
  %sum = scf.for %i = %c0 to %c7 step %c1 iter_args(%acc = %zero) -> i64 {
    %row = scf.for %j = %c0 to %c143 step %c1 iter_args(%r = %acc) -> i64 {
      %v = memref.load %B[%i, %j] : memref<7x143xi64>
      %s = arith.addi %r, %v : i64
      scf.yield %s : i64
    }
    scf.yield %row : i64
  }
  // CHECK: 7x143: 1001
  vector.print str "7x143: "
  vector.print %sum : i64
  memref.dealloc %B : memref<7x143xi64>

  // Rows 0..2, columns 1 to 0: an empty loop (trip counts 2 and -1).
  %e = func.call @visits(%c2, %c2, %c1, %c0) : (index, index, index, index) -> i64
  // CHECK: empty: 0
  vector.print str "empty: "
  vector.print %e : i64

  // 1-D from 1 to 0: empty too.
  %C = memref.alloc() : memref<2xi64>
  linalg.fill ins(%zero : i64) outs(%C : memref<2xi64>)
  scf.parallel (%i) = (%c1) to (%c0) step (%c1) {
    memref.store %one, %C[%i] : memref<2xi64>
    scf.reduce
  }
  %c1v = memref.load %C[%c1] : memref<2xi64>
  // CHECK: empty 1-D: 0
  vector.print str "empty 1-D: "
  vector.print %c1v : i64
  memref.dealloc %C : memref<2xi64>
  return
}
