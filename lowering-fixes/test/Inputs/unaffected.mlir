// Loops the two bugs do not touch (1-D: no block-aligned dispatch; static
// bounds, not empty): the patched pass must lower them
// exactly as MLIR's own does (lowering-fixes/check.sh). A plugin built
// wrongly (with g++, say, whose TypeIDs of op traits differ from libMLIR's)
// lowers them differently.
func.func @one_d(%V: memref<100xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %one = arith.constant 1 : i64
  scf.parallel (%i) = (%c0) to (%c100) step (%c1) {
    %x = memref.load %V[%i] : memref<100xi64>
    %y = arith.addi %x, %one : i64
    memref.store %y, %V[%i] : memref<100xi64>
    scf.reduce
  }
  return
}

func.func @one_d_offset(%V: memref<100xi64>) {
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %c97 = arith.constant 97 : index
  %one = arith.constant 1 : i64
  scf.parallel (%i) = (%c3) to (%c97) step (%c7) {
    %x = memref.load %V[%i] : memref<100xi64>
    %y = arith.addi %x, %one : i64
    memref.store %y, %V[%i] : memref<100xi64>
    scf.reduce
  }
  return
}
