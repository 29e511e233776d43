// A task that waits for work it made ready by spinning on memory instead of
// an async.await: with two workers the other one must run that work.
//   execute: the task starts a child (async.execute inside async.execute)
//            and spins until the child sets a flag;
//   continuation: the task completes a token that another task depends on
//            (async.execute [%t]), and spins until that task sets a flag.
// The C++ runtime runs both (its pool takes the child, and it runs a
// continuation inline). An earlier version of ours kept a task made ready
// inside a task in its thread's next-task slot, which no other thread could
// take: the spin never ended (3 runs of 3 hung). Each spin gives up after
// 10 s, so a runtime that strands the child fails here instead of hanging.
// 100 rounds of each.
//
// Needs a second thread: the floor runs every task on the program's one
// thread (the first spin would never end), and a deterministic schedule
// runs one task at a time (the spinning task keeps the baton).
// UNSUPPORTED: floor-runtime, deterministic-schedule

// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=2 %run_async | FileCheck %s

func.func private @rtclock() -> f64

// Spins until flag[] != 0 or 10 s passed; returns 1 if the flag was set.
func.func @spin_on(%flag: memref<i64>) -> i64 {
  %zero = arith.constant 0 : i64
  %true = arith.constant true
  %limit = arith.constant 10.0 : f64
  %t0 = func.call @rtclock() : () -> f64
  %seen = scf.while : () -> i64 {
    // An atomic read: add 0.
    %v = memref.atomic_rmw addi %zero, %flag[] : (i64, memref<i64>) -> i64
    %set = arith.cmpi ne, %v, %zero : i64
    %now = func.call @rtclock() : () -> f64
    %dt = arith.subf %now, %t0 : f64
    %late = arith.cmpf ogt, %dt, %limit : f64
    %stop = arith.ori %set, %late : i1
    %go = arith.xori %stop, %true : i1
    %r = arith.extui %set : i1 to i64
    scf.condition(%go) %r : i64
  } do {
  ^bb0(%r: i64):
    scf.yield
  }
  return %seen : i64
}

func.func @set(%flag: memref<i64>) {
  %one = arith.constant 1 : i64
  %old = memref.atomic_rmw assign %one, %flag[] : (i64, memref<i64>) -> i64
  return
}

// One round: the task's spin ends (1) or gives up (0).
func.func @execute_round(%flag: memref<i64>) -> i64 {
  %zero = arith.constant 0 : i64
  memref.store %zero, %flag[] : memref<i64>
  %t, %v = async.execute -> !async.value<i64> {
    %child = async.execute {
      func.call @set(%flag) : (memref<i64>) -> ()
      async.yield
    }
    %seen = func.call @spin_on(%flag) : (memref<i64>) -> i64
    async.await %child : !async.token
    async.yield %seen : i64
  }
  %seen = async.await %v : !async.value<i64>
  return %seen : i64
}

func.func @continuation_round(%flag: memref<i64>) -> i64 {
  %zero = arith.constant 0 : i64
  memref.store %zero, %flag[] : memref<i64>
  %gate = async.runtime.create : !async.token
  %dependent = async.execute [%gate] {
    func.call @set(%flag) : (memref<i64>) -> ()
    async.yield
  }
  %t, %v = async.execute -> !async.value<i64> {
    async.runtime.set_available %gate : !async.token
    %seen = func.call @spin_on(%flag) : (memref<i64>) -> i64
    async.yield %seen : i64
  }
  %seen = async.await %v : !async.value<i64>
  async.await %dependent : !async.token
  return %seen : i64
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rounds = arith.constant 100 : index
  %zero = arith.constant 0 : i64
  %flag = memref.alloc() : memref<i64>
  // A round runs only while every round before it ended: a runtime that
  // strands the child fails after one 10 s spin, not a hundred.
  %e = scf.for %i = %c0 to %rounds step %c1 iter_args(%acc = %zero) -> i64 {
    %i64 = arith.index_cast %i : index to i64
    %ok = arith.cmpi eq, %acc, %i64 : i64
    %next = scf.if %ok -> i64 {
      %seen = func.call @execute_round(%flag) : (memref<i64>) -> i64
      %n = arith.addi %acc, %seen : i64
      scf.yield %n : i64
    } else {
      scf.yield %acc : i64
    }
    scf.yield %next : i64
  }
  // CHECK: spins ended (execute, of 100): 100{{$}}
  vector.print str "spins ended (execute, of 100): "
  vector.print %e : i64
  %c = scf.for %i = %c0 to %rounds step %c1 iter_args(%acc = %zero) -> i64 {
    %i64 = arith.index_cast %i : index to i64
    %ok = arith.cmpi eq, %acc, %i64 : i64
    %next = scf.if %ok -> i64 {
      %seen = func.call @continuation_round(%flag) : (memref<i64>) -> i64
      %n = arith.addi %acc, %seen : i64
      scf.yield %n : i64
    } else {
      scf.yield %acc : i64
    }
    scf.yield %next : i64
  }
  // CHECK-NEXT: spins ended (continuation, of 100): 100{{$}}
  vector.print str "spins ended (continuation, of 100): "
  vector.print %c : i64
  memref.dealloc %flag : memref<i64>
  return
}
