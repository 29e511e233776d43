// long-task: how long a waiting thread's return can lag behind its object
// when an unrelated long task is queued beside it. main queues a short task
// S, whose value is the time it completed, then a long task L (16,000,000
// dependent multiply-adds, about 18 ms at -O0; at -O3 LLVM shortens the loop
// to under a millisecond), then awaits S. By default a waiter runs only the
// producers of what it awaits (S's task), so its await returns once S
// completes, while a worker runs L, as on the C++ runtime; with
// MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=any it takes its newest task first,
// L, and its await of S returns only once L ends.
//
// BENCH-WAIT: runner
// BENCH-FIGURE: lag
// BENCH-EXPECT: -5339366761872953856
// BENCH-OPT: -O0
//
// Output: line 1 = L's result (the checksum), line 2 = seconds from S's
// completion to the return of main's await of S (the figure), line 3 =
// seconds from S's completion to the return of main's await of L.
// scripts/bench/waits.py checks that lines 2 and 3 are not negative.
func.func private @rtclock() -> f64
func.func private @printF64(f64)
func.func private @printI64(i64)
func.func private @printNewline()

func.func @spin(%n: index) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i64
  %k = arith.constant 6364136223846793005 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (i64) {
    %m = arith.muli %acc, %k : i64
    %ii = arith.index_cast %i : index to i64
    %a = arith.addi %m, %ii : i64
    scf.yield %a : i64
  }
  return %r : i64
}

func.func @main() {
  %n = arith.constant 16000000 : index
  %ts, %s = async.execute -> !async.value<f64> {
    %t = func.call @rtclock() : () -> f64
    async.yield %t : f64
  }
  %tl, %l = async.execute -> !async.value<i64> {
    %r = func.call @spin(%n) : (index) -> i64
    async.yield %r : i64
  }
  %done = async.await %s : !async.value<f64>
  %back = func.call @rtclock() : () -> f64
  %r = async.await %l : !async.value<i64>
  %end = func.call @rtclock() : () -> f64
  %lag = arith.subf %back, %done : f64
  %l_end = arith.subf %end, %done : f64
  func.call @printI64(%r) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%lag) : (f64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%l_end) : (f64) -> ()
  func.call @printNewline() : () -> ()
  return
}
