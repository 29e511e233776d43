// fine-grained: a 48-row loop with a 16-element body per row (a[i][j] +=
// b[i][j] on i64), 25,000 sweeps, lowered with
// async-parallel-for{min-task-size=1} so every block is a few rows: the
// work per loop is ~1 µs on one core, so the time per loop is the cost of
// dispatching one parallel loop and joining it (the table gives µs per
// loop = seconds / BENCH-LOOPS; the sequential lowering's figure is the
// body alone). OpenMP gets the same loop, one fork/join per sweep.
// a starts as (i + j) mod 3, b is (16 i + j) mod 11:
//   checksum = sum of a0 + 25000 * sum of b.
//
// BENCH-EXPECT: 95775768
// BENCH-LOOPS: 25000
// BENCH-PARALLEL-FOR: min-task-size=1
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
  %c3 = arith.constant 3 : index
  %c11 = arith.constant 11 : index
  %c16 = arith.constant 16 : index
  %rows = arith.constant 48 : index
  %sweeps = arith.constant 25000 : index
  %zero = arith.constant 0 : i64
  %A = memref.alloc() {alignment = 64 : i64} : memref<48x16xi64>
  %B = memref.alloc() {alignment = 64 : i64} : memref<48x16xi64>
  scf.for %i = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %s = arith.addi %i, %j : index
      %a = arith.remui %s, %c3 : index
      %i16 = arith.muli %i, %c16 : index
      %t = arith.addi %i16, %j : index
      %b = arith.remui %t, %c11 : index
      %ai = arith.index_cast %a : index to i64
      %bi = arith.index_cast %b : index to i64
      memref.store %ai, %A[%i, %j] : memref<48x16xi64>
      memref.store %bi, %B[%i, %j] : memref<48x16xi64>
    }
  }

  %t0 = func.call @rtclock() : () -> f64
  scf.for %s = %c0 to %sweeps step %c1 {
    scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
      scf.for %j = %c0 to %c16 step %c1 {
        %x = memref.load %A[%i, %j] : memref<48x16xi64>
        %y = memref.load %B[%i, %j] : memref<48x16xi64>
        %z = arith.addi %x, %y : i64
        memref.store %z, %A[%i, %j] : memref<48x16xi64>
      }
      scf.reduce
    }
  }
  %t1 = func.call @rtclock() : () -> f64

  %sum = scf.for %i = %c0 to %rows step %c1 iter_args(%acc = %zero) -> (i64) {
    %row = scf.for %j = %c0 to %c16 step %c1 iter_args(%a = %acc) -> (i64) {
      %v = memref.load %A[%i, %j] : memref<48x16xi64>
      %a2 = arith.addi %a, %v : i64
      scf.yield %a2 : i64
    }
    scf.yield %row : i64
  }
  memref.dealloc %A : memref<48x16xi64>
  memref.dealloc %B : memref<48x16xi64>
  %dt = arith.subf %t1, %t0 : f64
  func.call @printI64(%sum) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%dt) : (f64) -> ()
  func.call @printNewline() : () -> ()
  return
}
