// idle-cpu: what an idle runtime costs after the work, before destroy.
// 2000 tasks (each adds its index to a counter, after a little arithmetic)
// in one group, a blocking await of the group; then main sleeps: 50 ms that
// the runtime may spend going idle (a bounded spin is allowed), then 500 ms
// in which no thread of an idle runtime may run. clock() is the process's
// CPU time (all threads, µs: CLOCKS_PER_SEC is 1e6 on glibc), read before
// and after the 500 ms.
//
// BENCH-WAIT: runner
// BENCH-FIGURE: cpu
// BENCH-EXPECT: 1999000
// BENCH-OPT: -O3
//
// Output: line 1 = the counter (0 + 1 + ... + 1999), line 2 = the process's
// CPU seconds in the 500 ms window, line 3 = its CPU seconds in the 50 ms
// before it, line 4 = the rounds whose pauses returned 0 (2: usleep failed
// in the others). scripts/bench/waits.py checks lines 3 and 4.
func.func private @clock() -> i64
func.func private @usleep(i32) -> i32
func.func private @printF64(f64)
func.func private @printI64(i64)
func.func private @printNewline()

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %tasks = arith.constant 2000 : index
  %steps = arith.constant 2000 : index
  %settle_us = arith.constant 50000 : i32
  %window_us = arith.constant 500000 : i32
  %ok = arith.constant 0 : i32
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %mix = arith.constant 6364136223846793005 : i64
  %per_s = arith.constant 1.0e6 : f64
  %sum = memref.alloc() : memref<1xi64>
  %sink = memref.alloc() : memref<1xi64>
  memref.store %zero, %sum[%c0] : memref<1xi64>
  memref.store %zero, %sink[%c0] : memref<1xi64>

  %group = async.create_group %tasks : !async.group
  scf.for %i = %c0 to %tasks step %c1 {
    %token = async.execute {
      %i64 = arith.index_cast %i : index to i64
      // A little work, so that every worker wakes and runs some tasks.
      %h = scf.for %s = %c0 to %steps step %c1 iter_args(%acc = %i64) -> (i64) {
        %m = arith.muli %acc, %mix : i64
        %n = arith.addi %m, %one : i64
        scf.yield %n : i64
      }
      %old_sink = memref.atomic_rmw ori %h, %sink[%c0] : (i64, memref<1xi64>) -> i64
      %old_sum = memref.atomic_rmw addi %i64, %sum[%c0] : (i64, memref<1xi64>) -> i64
      async.yield
    }
    %rank = async.add_to_group %token, %group : !async.token
  }
  async.await_all %group

  %cpu_done = func.call @clock() : () -> i64
  %rc0 = func.call @usleep(%settle_us) : (i32) -> i32
  %cpu0 = func.call @clock() : () -> i64
  %rc1 = func.call @usleep(%window_us) : (i32) -> i32
  %cpu1 = func.call @clock() : () -> i64

  %total = memref.load %sum[%c0] : memref<1xi64>
  func.call @printI64(%total) : (i64) -> ()
  func.call @printNewline() : () -> ()
  %dcpu = arith.subi %cpu1, %cpu0 : i64
  %dcpu_f = arith.sitofp %dcpu : i64 to f64
  %window_s = arith.divf %dcpu_f, %per_s : f64
  func.call @printF64(%window_s) : (f64) -> ()
  func.call @printNewline() : () -> ()
  %dsettle = arith.subi %cpu0, %cpu_done : i64
  %dsettle_f = arith.sitofp %dsettle : i64 to f64
  %settle_s = arith.divf %dsettle_f, %per_s : f64
  func.call @printF64(%settle_s) : (f64) -> ()
  func.call @printNewline() : () -> ()
  %good0 = arith.cmpi eq, %rc0, %ok : i32
  %good1 = arith.cmpi eq, %rc1, %ok : i32
  %g0 = arith.select %good0, %one, %zero : i64
  %g1 = arith.select %good1, %one, %zero : i64
  %good = arith.addi %g0, %g1 : i64
  func.call @printI64(%good) : (i64) -> ()
  func.call @printNewline() : () -> ()
  memref.dealloc %sum : memref<1xi64>
  memref.dealloc %sink : memref<1xi64>
  return
}
