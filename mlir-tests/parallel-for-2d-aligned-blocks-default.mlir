// The miscompile of parallel-for-2d-aligned-blocks.mlir with
// async-parallel-for's default options (num-workers=8, min-task-size=1000),
// in the smallest shape they hit: 7x143 = 1001 elements (block size 1000,
// aligned up to 1001; block count still 2: every element incremented twice).
// 16x64, 32x32, 64x64 and 8x128 fail the same way (docs/lowering-bugs.md).
// XFAIL: !fixed-lowering
// Expected to fail, on every runtime, until MLIR fixes the pass (an XPASS
// means it did); with our patched pass (lit --param fixed_lowering=1, make
// lowering-fixes-ci) it passes.

// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for,%async_passes)" | %run_async | FileCheck %s

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 7 : index
  %m = arith.constant 143 : index
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %V = memref.alloc() : memref<7x143xi64>
  linalg.fill ins(%zero : i64) outs(%V : memref<7x143xi64>)
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c1) {
    %x = memref.load %V[%i, %j] : memref<7x143xi64>
    %y = arith.addi %x, %one : i64
    memref.store %y, %V[%i, %j] : memref<7x143xi64>
    scf.reduce
  }
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> i64 {
    %row = scf.for %j = %c0 to %m step %c1 iter_args(%r = %acc) -> i64 {
      %v = memref.load %V[%i, %j] : memref<7x143xi64>
      %s = arith.addi %r, %v : i64
      scf.yield %s : i64
    }
    scf.yield %row : i64
  }
  // CHECK: visits: 1001
  vector.print str "visits: "
  vector.print %sum : i64
  memref.dealloc %V : memref<7x143xi64>
  return
}
