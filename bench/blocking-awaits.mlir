// blocking-awaits: the main thread (not a coroutine) spawns tasks four at a
// time and awaits each of the four one by one with blocking
// async.await (three !async.value<i64> and one !async.token), 12,500 rounds:
// 50,000 blocking awaits in total.
//
// BENCH-EXPECT: 937462500
// BENCH-PIPELINE: tasks
// BENCH-OPT: -O0
//
// Output: line 1 = sum of all awaited values, line 2 = seconds (JIT excluded).
func.func private @rtclock() -> f64
func.func private @printF64(f64)
func.func private @printI64(i64)
func.func private @printNewline()

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rounds = arith.constant 12500 : index
  %zero = arith.constant 0 : i64
  %c4 = arith.constant 4 : i64

  %t0 = func.call @rtclock() : () -> f64
  %sum = scf.for %i = %c0 to %rounds step %c1 iter_args(%acc = %zero) -> (i64) {
    %ii = arith.index_cast %i : index to i64
    %base = arith.muli %ii, %c4 : i64
    %ta, %a = async.execute -> !async.value<i64> {
      async.yield %base : i64
    }
    %tb, %b = async.execute -> !async.value<i64> {
      %one = arith.constant 1 : i64
      %x = arith.addi %base, %one : i64
      async.yield %x : i64
    }
    %tc, %c = async.execute -> !async.value<i64> {
      %two = arith.constant 2 : i64
      %x = arith.addi %base, %two : i64
      async.yield %x : i64
    }
    %td = async.execute {
      async.yield
    }
    %va = async.await %a : !async.value<i64>
    %vb = async.await %b : !async.value<i64>
    %vc = async.await %c : !async.value<i64>
    async.await %td : !async.token
    %s1 = arith.addi %acc, %va : i64
    %s2 = arith.addi %s1, %vb : i64
    %s3 = arith.addi %s2, %vc : i64
    scf.yield %s3 : i64
  }
  %t1 = func.call @rtclock() : () -> f64
  %dt = arith.subf %t1, %t0 : f64
  func.call @printI64(%sum) : (i64) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF64(%dt) : (f64) -> ()
  func.call @printNewline() : () -> ()
  return
}
