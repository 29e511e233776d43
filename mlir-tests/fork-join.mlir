// Fork-join: a task starts a child (async.execute inside async.execute),
// then does as much work itself, then awaits the child. With two workers the
// two halves can run at once, as on the C++ runtime; a runtime that keeps
// the child where no idle thread can take it (an earlier version of ours:
// the thread's next-task slot, stolen by nobody) runs them one after the
// other. The serial variant (FORK_JOIN_SERIAL=1) does both halves in the
// task, one after the other: timed against each other with the default
// size, the fork-join run takes at most 0.55 of the serial one on two
// workers (bench/history.md, "Fork-join").
//
// Each half is STEPS (default 300,000,000; the environment variable
// FORK_JOIN_STEPS overrides it) steps of a 64-bit linear congruential
// generator; both halves print the generator's final state, which does not
// depend on how they were scheduled. With FORK_JOIN_TIME set, a second line
// gives the seconds between the start of the task and the end of main's
// await (JIT compilation excluded), the figure to compare. (Not in the
// corpus runs: a time differs from run to run, and the schedule explorer
// replays a run and compares the outputs.)

// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=2 FORK_JOIN_STEPS=3000000 %run_async | FileCheck %s
// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=2 FORK_JOIN_STEPS=3000000 FORK_JOIN_SERIAL=1 %run_async | FileCheck %s

llvm.mlir.global internal constant @steps_var("FORK_JOIN_STEPS\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @serial_var("FORK_JOIN_SERIAL\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @time_var("FORK_JOIN_TIME\00") {addr_space = 0 : i32}
llvm.func @getenv(!llvm.ptr) -> !llvm.ptr
llvm.func @atol(!llvm.ptr) -> i64
func.func private @rtclock() -> f64

// $FORK_JOIN_STEPS, else 300,000,000.
func.func @steps() -> i64 {
  %name = llvm.mlir.addressof @steps_var : !llvm.ptr
  %s = llvm.call @getenv(%name) : (!llvm.ptr) -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %unset = llvm.icmp "eq" %s, %null : !llvm.ptr
  %n = scf.if %unset -> i64 {
    %default = arith.constant 300000000 : i64
    scf.yield %default : i64
  } else {
    %v = llvm.call @atol(%s) : (!llvm.ptr) -> i64
    scf.yield %v : i64
  }
  return %n : i64
}

// True when $FORK_JOIN_SERIAL is set.
func.func @serial() -> i1 {
  %name = llvm.mlir.addressof @serial_var : !llvm.ptr
  %s = llvm.call @getenv(%name) : (!llvm.ptr) -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %set = llvm.icmp "ne" %s, %null : !llvm.ptr
  return %set : i1
}

// True when $FORK_JOIN_TIME is set.
func.func @timed() -> i1 {
  %name = llvm.mlir.addressof @time_var : !llvm.ptr
  %s = llvm.call @getenv(%name) : (!llvm.ptr) -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %set = llvm.icmp "ne" %s, %null : !llvm.ptr
  return %set : i1
}

// `n` steps of x = x * 6364136223846793005 + seed, from x = seed.
func.func @work(%n: i64, %seed: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %a = arith.constant 6364136223846793005 : i64
  %x = scf.for %i = %c0 to %n step %c1 iter_args(%x = %seed) -> i64 : i64 {
    %m = arith.muli %x, %a : i64
    %y = arith.addi %m, %seed : i64
    scf.yield %y : i64
  }
  return %x : i64
}

func.func @main() {
  %n = func.call @steps() : () -> i64
  %serial = func.call @serial() : () -> i1
  %seed1 = arith.constant 1442695040888963407 : i64
  %seed2 = arith.constant 7 : i64
  %t0 = func.call @rtclock() : () -> f64
  %t, %v = async.execute -> !async.value<i64> {
    %r = scf.if %serial -> i64 {
      %x = func.call @work(%n, %seed1) : (i64, i64) -> i64
      %y = func.call @work(%n, %seed2) : (i64, i64) -> i64
      %s = arith.xori %x, %y : i64
      scf.yield %s : i64
    } else {
      %ct, %cv = async.execute -> !async.value<i64> {
        %x = func.call @work(%n, %seed1) : (i64, i64) -> i64
        async.yield %x : i64
      }
      %y = func.call @work(%n, %seed2) : (i64, i64) -> i64
      %x = async.await %cv : !async.value<i64>
      %s = arith.xori %x, %y : i64
      scf.yield %s : i64
    }
    async.yield %r : i64
  }
  %r = async.await %v : !async.value<i64>
  %t1 = func.call @rtclock() : () -> f64
  %dt = arith.subf %t1, %t0 : f64
  // CHECK: fork-join: -8446277021603281720{{$}}
  // CHECK-NOT: seconds
  vector.print str "fork-join: "
  vector.print %r : i64
  %timed = func.call @timed() : () -> i1
  scf.if %timed {
    vector.print str "fork-join seconds: "
    vector.print %dt : f64
  }
  return
}
