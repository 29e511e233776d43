// MLIR's async-parallel-for runs an iteration of an empty loop
// (docs/lowering-bugs.md, "a dimension with upper bound below lower bound is
// not empty"): scf.parallel from 1 to 0 must touch nothing, but the pass
// tests only the product of the trip counts for zero, and a trip count of -1
// runs one iteration, with i = 1. The same in 2-D, (0, 1) to (2, 0). Any
// options, MLIR 19 and 22, any runtime (it is the lowering).
// XFAIL: !fixed-lowering
// Expected to fail, on every runtime, until MLIR fixes the pass (an XPASS
// means it did); with our patched pass (lit --param fixed_lowering=1, make
// lowering-fixes-ci) it passes.

// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for,%async_passes)" | %run_async | FileCheck %s
// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=false num-workers=2 min-task-size=1},%async_passes)" | %run_async | FileCheck %s

func.func private @printMemrefI64(memref<*xi64>) attributes { llvm.emit_c_interface }

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %V = memref.alloc() : memref<4xi64>
  linalg.fill ins(%zero : i64) outs(%V : memref<4xi64>)
  scf.parallel (%i) = (%c1) to (%c0) step (%c1) {
    memref.store %one, %V[%i] : memref<4xi64>
    scf.reduce
  }
  // CHECK: [0,  0,  0,  0]
  %U = memref.cast %V : memref<4xi64> to memref<*xi64>
  func.call @printMemrefI64(%U) : (memref<*xi64>) -> ()

  %W = memref.alloc() : memref<2x2xi64>
  linalg.fill ins(%zero : i64) outs(%W : memref<2x2xi64>)
  scf.parallel (%i, %j) = (%c0, %c1) to (%c2, %c0) step (%c1, %c1) {
    memref.store %one, %W[%i, %j] : memref<2x2xi64>
    scf.reduce
  }
  // CHECK:      [0,   0],
  // CHECK-NEXT: [0,   0]
  %UW = memref.cast %W : memref<2x2xi64> to memref<*xi64>
  func.call @printMemrefI64(%UW) : (memref<*xi64>) -> ()
  memref.dealloc %W : memref<2x2xi64>
  memref.dealloc %V : memref<4xi64>
  return
}
