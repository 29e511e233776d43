// Every element of a 2x2 matrix incremented once by an scf.parallel: all
// ones. Under async-parallel-for{num-workers=1 min-task-size=3} MLIR 19 and
// 22 run the loop twice (docs/lowering-bugs.md): all twos.
// CHECK: [1,   1]
// CHECK-NEXT: [1,   1]

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
  %U = memref.cast %V : memref<2x2xi64> to memref<*xi64>
  func.call @printMemrefI64(%U) : (memref<*xi64>) -> ()
  memref.dealloc %V : memref<2x2xi64>
  return
}
