// Input of downport.test: one instance of every rewrite of lib/downport.py.
func.func private @printMemrefI64(memref<*xi64>) attributes { llvm.emit_c_interface }
func.func private @g()

func.func @main(%m: memref<4xf64>) {
  %c = arith.constant 7 : i64
  %b = arith.constant true
  %i = arith.constant 3 : index
  %f = arith.constant 1.5 : f64
  vector.print str "a\n\"\\"
  vector.print %c : i64 punctuation <no_punctuation>
  vector.print %b : i1 punctuation <no_punctuation>
  vector.print %i : index punctuation <no_punctuation>
  vector.print %f : f64 punctuation <no_punctuation>
  vector.print %f : f64
  scf.parallel (%x) = (%i) to (%i) step (%i) {
    scf.reduce
  }
  cf.assert %b, "message"
  %s = arith.select %b, %c, %c : i64
  func.call @g() : () -> ()
  linalg.fill ins(%f : f64) outs(%m : memref<4xf64>)
  return
}
