// triangular: y += L x for a lower-triangular 2048x2048 i32 matrix L,
// 120 sweeps; a 1-D scf.parallel over the rows, row i a sequential dot
// product of i + 1 elements. Imbalanced: the last row costs 2048 times the
// first, so equal index ranges (what async-parallel-for's blocks and
// OpenMP's default static schedule both hand out) are far from equal work,
// and the runtime that lets an idle thread help with the expensive rows
// wins.
// L[i][k] = (i + k) mod 3, x[k] = k mod 7, y starts at 0 (all integers):
//   checksum = 120 * sum over k <= i of ((i + k) mod 3) * (k mod 7).
//
// BENCH-EXPECT: 754359480
// BENCH-LOOPS: 120
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
  %c7 = arith.constant 7 : index
  %n = arith.constant 2048 : index
  %sweeps = arith.constant 120 : index
  %zero = arith.constant 0 : i64
  %L = memref.alloc() {alignment = 64 : i64} : memref<2048x2048xi32>
  %x = memref.alloc() {alignment = 64 : i64} : memref<2048xi32>
  %y = memref.alloc() {alignment = 64 : i64} : memref<2048xi64>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %k = %c0 to %n step %c1 {
      %s = arith.addi %i, %k : index
      %l = arith.remui %s, %c3 : index
      %li = arith.index_cast %l : index to i32
      memref.store %li, %L[%i, %k] : memref<2048x2048xi32>
    }
    %xm = arith.remui %i, %c7 : index
    %xi = arith.index_cast %xm : index to i32
    memref.store %xi, %x[%i] : memref<2048xi32>
    memref.store %zero, %y[%i] : memref<2048xi64>
  }

  %t0 = func.call @rtclock() : () -> f64
  scf.for %s = %c0 to %sweeps step %c1 {
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      %end = arith.addi %i, %c1 : index
      %dot = scf.for %k = %c0 to %end step %c1 iter_args(%acc = %zero) -> (i64) {
        %a = memref.load %L[%i, %k] : memref<2048x2048xi32>
        %b = memref.load %x[%k] : memref<2048xi32>
        %p = arith.muli %a, %b : i32
        %pe = arith.extsi %p : i32 to i64
        %acc2 = arith.addi %acc, %pe : i64
        scf.yield %acc2 : i64
      }
      %old = memref.load %y[%i] : memref<2048xi64>
      %new = arith.addi %old, %dot : i64
      memref.store %new, %y[%i] : memref<2048xi64>
      scf.reduce
    }
  }
  %t1 = func.call @rtclock() : () -> f64

  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (i64) {
    %v = memref.load %y[%i] : memref<2048xi64>
    %a2 = arith.addi %acc, %v : i64
    scf.yield %a2 : i64
  }
  memref.dealloc %L : memref<2048x2048xi32>
  memref.dealloc %x : memref<2048xi32>
  memref.dealloc %y : memref<2048xi64>
  %dt = arith.subf %t1, %t0 : f64
  func.call @printI64(%sum) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%dt) : (f64) -> ()
  func.call @printNewline() : () -> ()
  return
}
