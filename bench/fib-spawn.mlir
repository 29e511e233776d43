// fib-spawn: recursive Fibonacci, fib(26) = 121,393. Every call with n >= 2
// spawns the fib(n-1) branch with async.execute (which itself async.calls
// fib), computes fib(n-2) with a direct async.call, and awaits both. Because
// @fib is an async.func (a coroutine), those awaits suspend instead of
// blocking a worker thread. In total 196,417 spawned async.execute tasks
// and 392,835 async.func coroutines.
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
  %n = arith.constant 26 : i64
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
