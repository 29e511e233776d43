// 100,000 tasks that each block their thread on one gate token (a plain
// func.func awaiting it, called inside async.execute), opened by main once
// every task is queued. A runtime whose blocked worker runs the next queued
// task nested in its wait nests 100,000 waits on one stack and dies with
// SIGSEGV (an earlier version of ours did, from about 20,000). Ours hands each blocked worker's
// place to a spare thread, up to the cap (MLIR_ASYNC_RUNTIME_MAX_THREADS,
// 512 by default); past it the tasks wait in the queue until the gate opens.
// The C++ runtime completes it on its fixed pool. 1 and 2 workers; the
// second run also caps the threads at 8.

// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=1 %run_async | FileCheck %s
// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=2 MLIR_ASYNC_RUNTIME_MAX_THREADS=8 %run_async | FileCheck %s

func.func @block_on(%t: !async.token) {
  async.await %t : !async.token
  return
}

func.func private @usleep(i32) -> i32

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100000 : index
  %gate = async.runtime.create : !async.token
  %group = async.create_group %n : !async.group
  scf.for %i = %c0 to %n step %c1 {
    %t = async.execute {
      func.call @block_on(%gate) : (!async.token) -> ()
      async.yield
    }
    %rank = async.add_to_group %t, %group : !async.token
  }
  %us = arith.constant 10000 : i32
  %slept = func.call @usleep(%us) : (i32) -> i32
  async.runtime.set_available %gate : !async.token
  async.await_all %group
  // CHECK: gated tasks completed: 100000
  vector.print str "gated tasks completed: "
  vector.print %n : index
  return
}
