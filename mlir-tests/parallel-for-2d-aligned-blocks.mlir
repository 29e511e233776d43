// MLIR's async-parallel-for miscompiles this 2-D loop (docs/lowering-bugs.md,
// "async-parallel-for: the block-aligned dispatch launches blocks past the
// end"): 2x2 elements, each incremented once, with num-workers=1 and
// min-task-size=3. The block size 3 is aligned up to 4, a multiple of the
// inner trip count 2, but the block count stays ceil(4 / 3) = 2: block 1
// starts at element 4, past the end, and the delinearization wraps it back
// to row 0, so every element is incremented twice. MLIR 19 and 22, either
// dispatch mode, any runtime (the floor's too: it is the lowering). MLIR
// 14's pass does not miscompile it: both RUN lines pass there (make compat).
// XFAIL: !fixed-lowering && !mlir-14
// Expected to fail, on every runtime, until MLIR fixes the pass (an XPASS
// means it did); with our patched pass (lit --param fixed_lowering=1, make
// lowering-fixes-ci) it passes.

// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=true num-workers=1 min-task-size=3},%async_passes)" | %run_async | FileCheck %s
// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=false num-workers=1 min-task-size=3},%async_passes)" | %run_async | FileCheck %s

func.func private @printMemrefI64(memref<*xi64>) attributes { llvm.emit_c_interface }

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %V = memref.alloc() : memref<2x2xi64>
  linalg.fill ins(%zero : i64) outs(%V : memref<2x2xi64>)
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c2) step (%c1, %c1) {
    %x = memref.load %V[%i, %j] : memref<2x2xi64>
    %y = arith.addi %x, %one : i64
    memref.store %y, %V[%i, %j] : memref<2x2xi64>
    scf.reduce
  }
  // CHECK:      [1,   1],
  // CHECK-NEXT: [1,   1]
  %U = memref.cast %V : memref<2x2xi64> to memref<*xi64>
  func.call @printMemrefI64(%U) : (memref<*xi64>) -> ()
  memref.dealloc %V : memref<2x2xi64>
  return
}
