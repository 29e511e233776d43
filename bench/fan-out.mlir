// fan-out: 200,000 trivial async.execute tasks added to one async.group,
// then a single (blocking) async.await_all on the main thread.
// Each task stores its index into a buffer; the checksum is the sum of the
// buffer, i.e. 0 + 1 + ... + 199,999.
//
// The environment variable BENCH_SIZE=N replaces 200,000 by N (checksum
// N(N-1)/2); make bench-instr uses it.
//
// BENCH-EXPECT: 19999900000
// BENCH-PIPELINE: tasks
// BENCH-OPT: -O0
//
// Output: line 1 = checksum (i64), line 2 = seconds spent between the two
// rtclock() calls (JIT compile excluded).
func.func private @rtclock() -> f64
func.func private @printF64(f64)
func.func private @printI64(i64)
func.func private @printNewline()

// The workload's size: $BENCH_SIZE when set (make bench-instr runs two sizes
// of the same compiled code, scripts/bench/instr.py), otherwise %default.
llvm.mlir.global internal constant @bench_size_var("BENCH_SIZE\00") {addr_space = 0 : i32}
llvm.func @getenv(!llvm.ptr) -> !llvm.ptr
llvm.func @atol(!llvm.ptr) -> i64
func.func @bench_size(%default: i64) -> i64 {
  %name = llvm.mlir.addressof @bench_size_var : !llvm.ptr
  %s = llvm.call @getenv(%name) : (!llvm.ptr) -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %unset = llvm.icmp "eq" %s, %null : !llvm.ptr
  %n = scf.if %unset -> i64 {
    scf.yield %default : i64
  } else {
    %v = llvm.call @atol(%s) : (!llvm.ptr) -> i64
    scf.yield %v : i64
  }
  return %n : i64
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %default = arith.constant 200000 : i64
  %n64 = func.call @bench_size(%default) : (i64) -> i64
  %n = arith.index_cast %n64 : i64 to index
  %zero = arith.constant 0 : i64
  %buf = memref.alloc(%n) : memref<?xi64>

  %t0 = func.call @rtclock() : () -> f64
  %g = async.create_group %n : !async.group
  scf.for %i = %c0 to %n step %c1 {
    %tok = async.execute {
      %v = arith.index_cast %i : index to i64
      memref.store %v, %buf[%i] : memref<?xi64>
      async.yield
    }
    %r = async.add_to_group %tok, %g : !async.token
  }
  async.await_all %g
  %t1 = func.call @rtclock() : () -> f64

  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (i64) {
    %v = memref.load %buf[%i] : memref<?xi64>
    %a = arith.addi %acc, %v : i64
    scf.yield %a : i64
  }
  memref.dealloc %buf : memref<?xi64>
  %dt = arith.subf %t1, %t0 : f64
  func.call @printI64(%sum) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%dt) : (f64) -> ()
  func.call @printNewline() : () -> ()
  return
}
