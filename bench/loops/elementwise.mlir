// elementwise: C += A * B on 1024x1024 i32 memrefs (12 MiB, above the
// caches), a 2-D scf.parallel over (i, j), repeated for 100 sweeps.
// Memory-bound: each sweep streams three arrays once, so a runtime can only
// lose here (dispatch, blocks that thrash each other's cache lines).
// A = (i + 2j) mod 5, B = (3i + j) mod 4, C starts as (i * j) mod 7; all
// integers, so every lowering must give exactly the same checksum:
//   sum over i, j of (i*j mod 7) + 100 * (i+2j mod 5) * (3i+j mod 4).
//
// BENCH-EXPECT: 317264749
// BENCH-LOOPS: 100
// BENCH-OPT: -O3
//
// Output: line 1 = checksum, line 2 = seconds of the sweeps (JIT excluded).
func.func private @rtclock() -> f64
func.func private @printF64(f64)
func.func private @printI64(i64)
func.func private @printNewline()

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %n = arith.constant 1024 : index
  %sweeps = arith.constant 100 : index
  %zero = arith.constant 0 : i64
  %A = memref.alloc() {alignment = 64 : i64} : memref<1024x1024xi32>
  %B = memref.alloc() {alignment = 64 : i64} : memref<1024x1024xi32>
  %C = memref.alloc() {alignment = 64 : i64} : memref<1024x1024xi32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %j2 = arith.muli %j, %c2 : index
      %a0 = arith.addi %i, %j2 : index
      %a = arith.remui %a0, %c5 : index
      %i3 = arith.muli %i, %c3 : index
      %b0 = arith.addi %i3, %j : index
      %b = arith.remui %b0, %c4 : index
      %c00 = arith.muli %i, %j : index
      %cc = arith.remui %c00, %c7 : index
      %ai = arith.index_cast %a : index to i32
      %bi = arith.index_cast %b : index to i32
      %ci = arith.index_cast %cc : index to i32
      memref.store %ai, %A[%i, %j] : memref<1024x1024xi32>
      memref.store %bi, %B[%i, %j] : memref<1024x1024xi32>
      memref.store %ci, %C[%i, %j] : memref<1024x1024xi32>
    }
  }

  %t0 = func.call @rtclock() : () -> f64
  scf.for %s = %c0 to %sweeps step %c1 {
    scf.parallel (%i, %j) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
      %x = memref.load %A[%i, %j] : memref<1024x1024xi32>
      %y = memref.load %B[%i, %j] : memref<1024x1024xi32>
      %z = memref.load %C[%i, %j] : memref<1024x1024xi32>
      %p = arith.muli %x, %y : i32
      %q = arith.addi %z, %p : i32
      memref.store %q, %C[%i, %j] : memref<1024x1024xi32>
      scf.reduce
    }
  }
  %t1 = func.call @rtclock() : () -> f64

  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (i64) {
    %row = scf.for %j = %c0 to %n step %c1 iter_args(%a = %acc) -> (i64) {
      %v = memref.load %C[%i, %j] : memref<1024x1024xi32>
      %vi = arith.extsi %v : i32 to i64
      %a2 = arith.addi %a, %vi : i64
      scf.yield %a2 : i64
    }
    scf.yield %row : i64
  }
  memref.dealloc %A : memref<1024x1024xi32>
  memref.dealloc %B : memref<1024x1024xi32>
  memref.dealloc %C : memref<1024x1024xi32>
  %dt = arith.subf %t1, %t0 : f64
  func.call @printI64(%sum) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%dt) : (f64) -> ()
  func.call @printNewline() : () -> ()
  return
}
