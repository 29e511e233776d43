// wake: the wake after a pause. 300 rounds of { usleep(2000), then
// t0 = now_ns(), one async.execute with an empty body, a blocking
// async.await of its token, t1 = now_ns() }: each round starts with the
// runtime's threads idle (parked, or their CPU asleep), so t1 - t0 is what
// a waiter pays to have a task run and to be told it ran, from cold.
// now_ns() is clock_gettime(CLOCK_MONOTONIC) in integer nanoseconds: the
// runner's rtclock() is gettimeofday() (whole microseconds) as a double of
// the seconds since 1970, which keeps steps of 0.24 µs, too coarse for
// latencies of 1-3 µs.
//
// BENCH-WAIT: runner
// BENCH-EXPECT: 300
// BENCH-OPT: -O3
//
// Output: line 1 = the rounds whose pause returned 0 (usleep failed in the
// others), line 2 = the median execute-to-await-return latency in seconds
// (the 300 latencies are sorted here, insertion sort, after the timed part),
// then the 300 sorted latencies, one a line: scripts/bench/waits.py checks
// that they are sorted and that line 2 is their median.
llvm.func @clock_gettime(i32, !llvm.ptr) -> i32

// CLOCK_MONOTONIC (1 on Linux), in nanoseconds.
func.func @now_ns() -> i64 {
  %monotonic = llvm.mlir.constant(1 : i32) : i32
  %n = llvm.mlir.constant(1 : i64) : i64
  %ts = llvm.alloca %n x !llvm.struct<(i64, i64)> : (i64) -> !llvm.ptr
  %rc = llvm.call @clock_gettime(%monotonic, %ts) : (i32, !llvm.ptr) -> i32
  %s = llvm.load %ts : !llvm.ptr -> i64
  %nsp = llvm.getelementptr %ts[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(i64, i64)>
  %ns = llvm.load %nsp : !llvm.ptr -> i64
  %giga = arith.constant 1000000000 : i64
  %sns = arith.muli %s, %giga : i64
  %t = arith.addi %sns, %ns : i64
  return %t : i64
}

func.func private @usleep(i32) -> i32
func.func private @printF64(f64)
func.func private @printI64(i64)
func.func private @printNewline()

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rounds = arith.constant 300 : index
  %lo = arith.constant 149 : index
  %hi = arith.constant 150 : index
  %pause_us = arith.constant 2000 : i32
  %ok = arith.constant 0 : i32
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %half = arith.constant 0.5 : f64
  %nano = arith.constant 1.0e-9 : f64
  %lat = memref.alloc() : memref<300xf64>

  %slept = scf.for %i = %c0 to %rounds step %c1 iter_args(%acc = %zero) -> (i64) {
    %rc = func.call @usleep(%pause_us) : (i32) -> i32
    %t0 = func.call @now_ns() : () -> i64
    %token = async.execute {
      async.yield
    }
    async.await %token : !async.token
    %t1 = func.call @now_ns() : () -> i64
    %dns = arith.subi %t1, %t0 : i64
    %dnsf = arith.sitofp %dns : i64 to f64
    %dt = arith.mulf %dnsf, %nano : f64
    memref.store %dt, %lat[%i] : memref<300xf64>
    %good = arith.cmpi eq, %rc, %ok : i32
    %inc = arith.select %good, %one, %zero : i64
    %next = arith.addi %acc, %inc : i64
    scf.yield %next : i64
  }

  // Insertion sort of the latencies, ascending.
  scf.for %i = %c1 to %rounds step %c1 {
    %key = memref.load %lat[%i] : memref<300xf64>
    %hole = scf.while (%j = %i) : (index) -> index {
      %more = arith.cmpi ugt, %j, %c0 : index
      %shift = scf.if %more -> i1 {
        %jm1 = arith.subi %j, %c1 : index
        %prev = memref.load %lat[%jm1] : memref<300xf64>
        %gt = arith.cmpf ogt, %prev, %key : f64
        scf.yield %gt : i1
      } else {
        %no = arith.constant false
        scf.yield %no : i1
      }
      scf.condition(%shift) %j : index
    } do {
    ^bb0(%j: index):
      %jm1 = arith.subi %j, %c1 : index
      %prev = memref.load %lat[%jm1] : memref<300xf64>
      memref.store %prev, %lat[%j] : memref<300xf64>
      scf.yield %jm1 : index
    }
    memref.store %key, %lat[%hole] : memref<300xf64>
  }
  %m0 = memref.load %lat[%lo] : memref<300xf64>
  %m1 = memref.load %lat[%hi] : memref<300xf64>
  %sum = arith.addf %m0, %m1 : f64
  %median = arith.mulf %sum, %half : f64

  func.call @printI64(%slept) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%median) : (f64) -> ()
  func.call @printNewline() : () -> ()
  scf.for %k = %c0 to %rounds step %c1 {
    %v = memref.load %lat[%k] : memref<300xf64>
    func.call @printF64(%v) : (f64) -> ()
    func.call @printNewline() : () -> ()
  }
  memref.dealloc %lat : memref<300xf64>
  return
}
