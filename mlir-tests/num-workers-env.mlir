// MLIR_ASYNC_RUNTIME_WORKERS sets the worker count of our runtime: with 3 the
// runtime must report exactly 3 (and with 1, exactly 1), and still run
// parallel work to completion with that many workers, including a task tree
// that awaits inside tasks (non-blocking, so 1 worker suffices).
// The C++ runtime ignores the variable (it uses the hardware concurrency).
// REQUIRES: rust-runtime
// The worker count is the runtime's: the sequential reference (one inline
// worker) prints 1.
// REFERENCE-IGNORE: ^workers:

// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=true num-workers=-1 min-task-size=1},%async_passes)" | env MLIR_ASYNC_RUNTIME_WORKERS=3 %run_async | FileCheck %s --check-prefix=W3
// RUN: %mlir_opt %s -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=true num-workers=-1 min-task-size=1},%async_passes)" | env MLIR_ASYNC_RUNTIME_WORKERS=1 %run_async | FileCheck %s --check-prefix=W1

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i64
  %n = async.runtime.num_worker_threads : index
  // W3: workers: 3{{$}}
  // W1: workers: 1{{$}}
  vector.print str "workers: "
  vector.print %n : index

  %len = arith.constant 10000 : index
  %cnt = memref.alloc() : memref<i64>
  memref.store %zero, %cnt[] : memref<i64>
  scf.parallel (%i) = (%c0) to (%len) step (%c1) {
    %x = arith.index_cast %i : index to i64
    %o = memref.atomic_rmw addi %x, %cnt[] : (i64, memref<i64>) -> i64
    scf.reduce
  }
  %s = memref.load %cnt[] : memref<i64>
  // W3-NEXT: sum: 49995000
  // W1-NEXT: sum: 49995000
  vector.print str "sum: "
  vector.print %s : i64

  // A task that awaits a task that awaits a task.
  %t, %v = async.execute -> !async.value<i64> {
    %t2, %v2 = async.execute -> !async.value<i64> {
      %t3, %v3 = async.execute -> !async.value<i64> {
        %k = arith.constant 5 : i64
        async.yield %k : i64
      }
      %a = async.await %v3 : !async.value<i64>
      %b = arith.muli %a, %a : i64
      async.yield %b : i64
    }
    %a = async.await %v2 : !async.value<i64>
    %b = arith.addi %a, %a : i64
    async.yield %b : i64
  }
  %r = async.await %v : !async.value<i64>
  // W3-NEXT: nested: 50
  // W1-NEXT: nested: 50
  vector.print str "nested: "
  vector.print %r : i64
  memref.dealloc %cnt : memref<i64>
  return
}
