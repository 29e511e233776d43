// compute: 65,536 independent i32 hash chains, 256 steps per element per
// sweep (x = x * 1664525 + 1013904223, then x ^= x >> 15: a multiply
// chain, no memory traffic), 8 sweeps of a 1-D scf.parallel over the
// elements. Compute-bound and balanced: the runtime should cost nothing
// here, so libomp/ours should be ~1.
// x starts as the element's index; arithmetic wraps modulo 2^32 in every
// lowering, so the checksum (sum of the final x, zero-extended to i64) is
// exact; bench/loops/README.md says how the expected value was computed.
//
// BENCH-EXPECT: 141141983710988
// BENCH-LOOPS: 8
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
  %n = arith.constant 65536 : index
  %steps = arith.constant 256 : index
  %sweeps = arith.constant 8 : index
  %mul = arith.constant 1664525 : i32
  %add = arith.constant 1013904223 : i32
  %c15 = arith.constant 15 : i32
  %zero = arith.constant 0 : i64
  %X = memref.alloc() {alignment = 64 : i64} : memref<65536xi32>
  scf.for %i = %c0 to %n step %c1 {
    %v = arith.index_cast %i : index to i32
    memref.store %v, %X[%i] : memref<65536xi32>
  }

  %t0 = func.call @rtclock() : () -> f64
  scf.for %s = %c0 to %sweeps step %c1 {
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      %x0 = memref.load %X[%i] : memref<65536xi32>
      %xn = scf.for %k = %c0 to %steps step %c1 iter_args(%x = %x0) -> (i32) {
        %m = arith.muli %x, %mul : i32
        %a = arith.addi %m, %add : i32
        %h = arith.shrui %a, %c15 : i32
        %r = arith.xori %a, %h : i32
        scf.yield %r : i32
      }
      memref.store %xn, %X[%i] : memref<65536xi32>
      scf.reduce
    }
  }
  %t1 = func.call @rtclock() : () -> f64

  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (i64) {
    %v = memref.load %X[%i] : memref<65536xi32>
    %ve = arith.extui %v : i32 to i64
    %a2 = arith.addi %acc, %ve : i64
    scf.yield %a2 : i64
  }
  memref.dealloc %X : memref<65536xi32>
  %dt = arith.subf %t1, %t0 : f64
  func.call @printI64(%sum) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%dt) : (f64) -> ()
  func.call @printNewline() : () -> ()
  return
}
