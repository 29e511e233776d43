// parallel-for: C = C + B on 1024x1024 f32 memrefs, an scf.parallel over
// (i, j) turned into async tasks by -async-parallel-for (default options),
// repeated 1000 times, JIT-compiled at -O3. Memory/cache-bound: the runtime
// should not slow it down. (First specified as 50 repetitions; on the
// development machine 50 take ~20 ms, below useful timer resolution for a
// 5-run median, so the sweep is repeated 1000 times.)
// C starts as (i + j) mod 5 and B is (i * j) mod 3, small integers that stay
// exact in f32; the checksum is the sum of C as integers after the loop.
//
// BENCH-EXPECT: 699783153
// BENCH-PIPELINE: parallel-for
// BENCH-OPT: -O3
//
// Output: line 1 = checksum, line 2 = seconds (JIT compile excluded).
func.func private @rtclock() -> f64
func.func private @printF64(f64)
func.func private @printI64(i64)
func.func private @printNewline()

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %n = arith.constant 1024 : index
  %reps = arith.constant 1000 : index
  %zero = arith.constant 0 : i64
  %C = memref.alloc() {alignment = 64 : i64} : memref<1024x1024xf32>
  %B = memref.alloc() {alignment = 64 : i64} : memref<1024x1024xf32>
  // C[i][j] = (i + j) mod 5, B[i][j] = (i * j) mod 3 (small integers: exact in f32)
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %s = arith.addi %i, %j : index
      %sm = arith.remui %s, %c5 : index
      %p = arith.muli %i, %j : index
      %pm = arith.remui %p, %c3 : index
      %si = arith.index_cast %sm : index to i64
      %pi = arith.index_cast %pm : index to i64
      %sf = arith.sitofp %si : i64 to f32
      %pf = arith.sitofp %pi : i64 to f32
      memref.store %sf, %C[%i, %j] : memref<1024x1024xf32>
      memref.store %pf, %B[%i, %j] : memref<1024x1024xf32>
    }
  }

  %t0 = func.call @rtclock() : () -> f64
  scf.for %r = %c0 to %reps step %c1 {
    scf.parallel (%i, %j) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
      %x = memref.load %C[%i, %j] : memref<1024x1024xf32>
      %y = memref.load %B[%i, %j] : memref<1024x1024xf32>
      %z = arith.addf %x, %y : f32
      memref.store %z, %C[%i, %j] : memref<1024x1024xf32>
      scf.reduce
    }
  }
  %t1 = func.call @rtclock() : () -> f64

  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (i64) {
    %row = scf.for %j = %c0 to %n step %c1 iter_args(%a = %acc) -> (i64) {
      %v = memref.load %C[%i, %j] : memref<1024x1024xf32>
      %vi = arith.fptosi %v : f32 to i64
      %a2 = arith.addi %a, %vi : i64
      scf.yield %a2 : i64
    }
    scf.yield %row : i64
  }
  memref.dealloc %C : memref<1024x1024xf32>
  memref.dealloc %B : memref<1024x1024xf32>
  %dt = arith.subf %t1, %t0 : f64
  func.call @printI64(%sum) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%dt) : (f64) -> ()
  func.call @printNewline() : () -> ()
  return
}
