// Tasks that block their thread: a plain func.func that awaits a token,
// called from inside async.execute, becomes a blocking
// mlirAsyncRuntimeAwaitToken on a worker.
//   task A blocks on T1 (completed later by main);
//   task B, queued after A, blocks on A's token.
// A runtime whose blocked worker runs other queued tasks on its own stack
// runs B nested inside A's wait: A can never return, and the program hangs
// (an earlier version of ours: 10 of 10 runs with one worker, 2 of 10 with
// two). The worker
// must instead hand its place to another thread. 20 rounds, 1 and 2 workers.

// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=1 %run_async | FileCheck %s
// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=2 %run_async | FileCheck %s

func.func @block_on(%t: !async.token) {
  async.await %t : !async.token
  return
}

// libc's usleep, resolved in the process by the JIT.
func.func private @usleep(i32) -> i32

func.func @round(%i: index) -> index {
  %t1 = async.runtime.create : !async.token
  %ta = async.execute {
    func.call @block_on(%t1) : (!async.token) -> ()
    async.yield
  }
  %tb = async.execute {
    func.call @block_on(%ta) : (!async.token) -> ()
    async.yield
  }
  // Give A and B time to block before T1 completes.
  %us = arith.constant 2000 : i32
  %slept = func.call @usleep(%us) : (i32) -> i32
  async.runtime.set_available %t1 : !async.token
  async.await %tb : !async.token
  %c1 = arith.constant 1 : index
  %next = arith.addi %i, %c1 : index
  return %next : index
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c20 = arith.constant 20 : index
  %done = scf.for %i = %c0 to %c20 step %c1 iter_args(%acc = %c0) -> index {
    %r = func.call @round(%acc) : (index) -> index
    scf.yield %r : index
  }
  // CHECK: blocked chains completed: 20
  vector.print str "blocked chains completed: "
  vector.print %done : index
  return
}
