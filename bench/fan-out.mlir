// fan-out: 200,000 trivial async.execute tasks added to one async.group,
// then a single (blocking) async.await_all on the main thread.
// Each task stores its index into a buffer; the checksum is the sum of the
// buffer, i.e. 0 + 1 + ... + 199,999.
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

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 200000 : index
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
