// The fine-grained kernel of bench/loops/fine-grained.mlir (48 rows x 16
// i64 adds, async-parallel-for{min-task-size=1}) with a probe in every row,
// for scripts/bench/trace_loop.py: row i of sweep s records which thread ran
// it (gettid, from the C library) and in which order the rows started (an
// atomic counter: memref.atomic_rmw addi). 2,000 sweeps, so the runtime's
// trace of every task stays far below its 2^20 events.
//
// BENCH-EXPECT: 7662768
// BENCH-LOOPS: 2000
// BENCH-PARALLEL-FOR: min-task-size=1
// BENCH-OPT: -O3
//
// Output: line 1 = checksum, line 2 = seconds of the sweeps, then for each
// sweep s and row i: the row's start order within its sweep (0..47) and
// the thread id, two lines per row.
func.func private @rtclock() -> f64
func.func private @printF64(f64)
func.func private @printI64(i64)
func.func private @printNewline()
func.func private @gettid() -> i32

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c11 = arith.constant 11 : index
  %c16 = arith.constant 16 : index
  %rows = arith.constant 48 : index
  %sweeps = arith.constant 2000 : index
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %A = memref.alloc() {alignment = 64 : i64} : memref<48x16xi64>
  %B = memref.alloc() {alignment = 64 : i64} : memref<48x16xi64>
  %order = memref.alloc() : memref<2000x48xi64>
  %tids = memref.alloc() : memref<2000x48xi32>
  %counter = memref.alloc() {alignment = 64 : i64} : memref<1xi64>
  memref.store %zero, %counter[%c0] : memref<1xi64>
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
      %seq = memref.atomic_rmw addi %one, %counter[%c0] : (i64, memref<1xi64>) -> i64
      memref.store %seq, %order[%s, %i] : memref<2000x48xi64>
      %tid = func.call @gettid() : () -> i32
      memref.store %tid, %tids[%s, %i] : memref<2000x48xi32>
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
  %dt = arith.subf %t1, %t0 : f64
  func.call @printI64(%sum) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%dt) : (f64) -> ()
  func.call @printNewline() : () -> ()
  %c48 = arith.constant 48 : i64
  scf.for %s = %c0 to %sweeps step %c1 {
    %si = arith.index_cast %s : index to i64
    %base = arith.muli %si, %c48 : i64
    scf.for %i = %c0 to %rows step %c1 {
      %o = memref.load %order[%s, %i] : memref<2000x48xi64>
      %rel = arith.subi %o, %base : i64
      func.call @printI64(%rel) : (i64) -> ()
      func.call @printNewline() : () -> ()
      %tid = memref.load %tids[%s, %i] : memref<2000x48xi32>
      %tid64 = arith.extsi %tid : i32 to i64
      func.call @printI64(%tid64) : (i64) -> ()
      func.call @printNewline() : () -> ()
    }
  }
  memref.dealloc %A : memref<48x16xi64>
  memref.dealloc %B : memref<48x16xi64>
  memref.dealloc %order : memref<2000x48xi64>
  memref.dealloc %tids : memref<2000x48xi32>
  memref.dealloc %counter : memref<1xi64>
  return
}
