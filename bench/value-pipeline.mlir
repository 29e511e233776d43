// value-pipeline: 40,000 items, each flowing through four async.execute
// stages connected by !async.value<i64> results (160,000 tasks, 200,000
// value hand-overs). Stage 2 consumes two values (stage 0 and stage 1), so
// values have more than one consumer. The last stage stores (2j + 1)^2 and
// its token goes to one group awaited at the end.
//
// BENCH-EXPECT: 85333333320000
// BENCH-PIPELINE: tasks
// BENCH-OPT: -O0
//
// Output: line 1 = sum over j of (2j + 1)^2, line 2 = seconds (JIT excluded).
func.func private @rtclock() -> f64
func.func private @printF64(f64)
func.func private @printI64(i64)
func.func private @printNewline()

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = arith.constant 40000 : index
  %zero = arith.constant 0 : i64
  %buf = memref.alloc(%m) : memref<?xi64>

  %t0 = func.call @rtclock() : () -> f64
  %g = async.create_group %m : !async.group
  scf.for %j = %c0 to %m step %c1 {
    // stage 0: produce j
    %t0a, %v0 = async.execute -> !async.value<i64> {
      %x = arith.index_cast %j : index to i64
      async.yield %x : i64
    }
    // stage 1: 3x + 1
    %t1a, %v1 = async.execute (%v0 as %x: !async.value<i64>) -> !async.value<i64> {
      %c3 = arith.constant 3 : i64
      %one = arith.constant 1 : i64
      %y = arith.muli %x, %c3 : i64
      %z = arith.addi %y, %one : i64
      async.yield %z : i64
    }
    // stage 2: y - j  (consumes stage 0 and stage 1) = 2j + 1
    %t2a, %v2 = async.execute (%v0 as %x: !async.value<i64>, %v1 as %y: !async.value<i64>) -> !async.value<i64> {
      %z = arith.subi %y, %x : i64
      async.yield %z : i64
    }
    // stage 3: z * z = (2j + 1)^2, stored
    %t3 = async.execute (%v2 as %z: !async.value<i64>) {
      %w = arith.muli %z, %z : i64
      memref.store %w, %buf[%j] : memref<?xi64>
      async.yield
    }
    %r = async.add_to_group %t3, %g : !async.token
  }
  async.await_all %g
  %t1 = func.call @rtclock() : () -> f64

  %sum = scf.for %i = %c0 to %m step %c1 iter_args(%acc = %zero) -> (i64) {
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
