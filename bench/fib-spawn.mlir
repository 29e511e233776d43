// fib-spawn: recursive Fibonacci, fib(26) = 121,393. Every call with n >= 2
// spawns the fib(n-1) branch with async.execute (which itself async.calls
// fib), computes fib(n-2) with a direct async.call, and awaits both. Because
// @fib is an async.func (a coroutine), those awaits suspend instead of
// blocking a worker thread. In total 196,417 spawned async.execute tasks
// and 392,835 async.func coroutines.
//
// The environment variable BENCH_SIZE=N computes fib(N) instead (fib(N+1)-1
// spawned tasks); make bench-instr uses it.
//
// BENCH-EXPECT: 121393
// BENCH-PIPELINE: tasks
// BENCH-OPT: -O0
//
// Output: line 1 = fib(26), line 2 = seconds (JIT compile excluded).
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

// fib(n) = fib(n-1) + fib(n-2); the n-1 branch is spawned with async.execute,
// the n-2 branch is called directly; both are awaited without blocking
// (this is a coroutine).
async.func @fib(%n: i64) -> !async.value<i64> {
  %c2 = arith.constant 2 : i64
  %c1 = arith.constant 1 : i64
  %small = arith.cmpi slt, %n, %c2 : i64
  cf.cond_br %small, ^leaf, ^rec
^leaf:
  async.return %n : i64
^rec:
  %n1 = arith.subi %n, %c1 : i64
  %n2 = arith.subi %n, %c2 : i64
  %tok, %a = async.execute -> !async.value<i64> {
    %fa = async.call @fib(%n1) : (i64) -> !async.value<i64>
    %va = async.await %fa : !async.value<i64>
    async.yield %va : i64
  }
  %fb = async.call @fib(%n2) : (i64) -> !async.value<i64>
  %vb = async.await %fb : !async.value<i64>
  %va = async.await %a : !async.value<i64>
  %s = arith.addi %va, %vb : i64
  async.return %s : i64
}

func.func @main() {
  %default = arith.constant 26 : i64
  %n = func.call @bench_size(%default) : (i64) -> i64
  %t0 = func.call @rtclock() : () -> f64
  %f = async.call @fib(%n) : (i64) -> !async.value<i64>
  %v = async.await %f : !async.value<i64>
  %t1 = func.call @rtclock() : () -> f64
  %dt = arith.subf %t1, %t0 : f64
  func.call @printI64(%v) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%dt) : (f64) -> ()
  func.call @printNewline() : () -> ()
  return
}
