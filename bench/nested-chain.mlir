// nested-chain: 50,000 levels. Level k is an async.execute that (unless k is
// the last level) calls @level(k+1) -- which spawns the next async.execute --
// and awaits its value (non-blocking: the await is inside the execute body,
// a coroutine), then yields depth + 1. The whole chain unwinds when the
// innermost task completes, which is where the C++ runtime recurses once per
// level (its continuations run inline): it completes 50,000 and 70,000 here
// but dies with SIGSEGV at 100,000 levels (8 MiB stacks).
//
// The environment variable BENCH_SIZE=N makes the chain N levels deep
// (checksum N); make bench-instr uses it.
//
// BENCH-EXPECT: 50000
// BENCH-PIPELINE: tasks
// BENCH-OPT: -O0
//
// Output: line 1 = depth reached, line 2 = seconds (JIT compile excluded).
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

func.func @level(%k: i64, %n: i64) -> !async.value<i64> {
  %tok, %v = async.execute -> !async.value<i64> {
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i64
    %more = arith.cmpi slt, %k, %n : i64
    %r = scf.if %more -> i64 {
      %k1 = arith.addi %k, %c1 : i64
      %inner = func.call @level(%k1, %n) : (i64, i64) -> !async.value<i64>
      %d = async.await %inner : !async.value<i64>
      %d1 = arith.addi %d, %c1 : i64
      scf.yield %d1 : i64
    } else {
      scf.yield %c0 : i64
    }
    async.yield %r : i64
  }
  return %v : !async.value<i64>
}

func.func @main() {
  %c0 = arith.constant 0 : i64
  %default = arith.constant 50000 : i64
  %n = func.call @bench_size(%default) : (i64) -> i64
  %t0 = func.call @rtclock() : () -> f64
  %f = func.call @level(%c0, %n) : (i64, i64) -> !async.value<i64>
  %v = async.await %f : !async.value<i64>
  %t1 = func.call @rtclock() : () -> f64
  %dt = arith.subf %t1, %t0 : f64
  func.call @printI64(%v) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%dt) : (f64) -> ()
  func.call @printNewline() : () -> ()
  return
}
