// The destroy hook while a thread outside the runtime calls
// mlirAsyncRuntimeExecute. main starts a plain pthread (the "late caller")
// and a task that blocks until a task of the late caller releases it,
// then returns: the runner calls the destroy hook, which must drain that
// task. 300 ms later, during the drain and past its 100 ms bound on
// staying the current instance (DRAIN_WHILE_CURRENT), the late caller runs
// an async.execute that releases the drained task and then runs on for
// 50 ms.
//
// In an earlier version of ours the late caller's Execute waited for a lock that destroy
// held while it waited for the task, which waited for the late caller:
// the program hung, printing "destroy: waiting for 1 task(s) still in
// flight". In a later one, the task queued past the bound went to a fresh
// instance: the drained task finished, the destroy hook returned, and the
// runner freed the code that the late task still ran (a SIGSEGV). Now the
// instance stays current while every task in flight waits in an await
// (nothing outpaces the drain), the late task joins the drain, and destroy
// returns after it.
//
// The late caller's token crosses the pthread boundary as a pointer
// (unrealized casts, which the lowering folds away); main adds the
// reference the late caller's automatic ref counting drops.
//
// UNSUPPORTED: cxx-runtime, floor-runtime, deterministic-schedule
// (The C++ runtime crashes here, SIGSEGV in 6 of 6 runs on MLIR 19: its
// destroy hook clears the runtime's pointer (unique_ptr::reset) and then
// waits in the destructor for its pool, so the late caller's
// mlirAsyncRuntimeCreateToken meanwhile reads a null runtime (gdb: the
// fault is in CreateToken, called from the late thread). The floor of bench/floor is single-threaded
// and not thread-safe: a second thread calling it is out of its scope.
// Under a deterministic schedule the drained task joins the late thread
// while it holds the baton, which that thread may need to return from its
// runtime call: a program that waits outside the runtime for another
// thread, docs/exploration.md. runtime/tests/lifecycle.rs's
// late-continuation scenario checks the same drain under every executor.)

// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=1 %run_async 2>&1 | FileCheck %s
// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=2 %run_async 2>&1 | FileCheck %s

// (The two last lines come in either order: with one worker, the drained
// task runs only once the other task is done. Our stderr comes before the
// program's stdout, which is flushed at exit.)
// CHECK-NOT: mlir_async_runtime
// CHECK: main returns
// CHECK-NEXT: task queued during destroy ran
// CHECK-DAG: drained task saw the late caller finish
// CHECK-DAG: task queued during destroy done
// CHECK-NOT: mlir_async_runtime

func.func private @pthread_create(!llvm.ptr, !llvm.ptr, (!llvm.ptr) -> !llvm.ptr, !llvm.ptr) -> i32
func.func private @pthread_join(i64, !llvm.ptr) -> i32
func.func private @usleep(i32) -> i32

// The late thread's pthread_t. The drained task joins the thread, so that
// it no longer runs compiled code when the destroy hook returns and the
// runner frees that code.
memref.global "private" @late_thread : memref<1xi64> = dense<0>

func.func @block_on(%t: !async.token) {
  async.await %t : !async.token
  return
}

// Completes `released`, then runs on for 50 ms: compiled code that must
// not be freed under it.
func.func @release_then_linger(%released: !async.token) {
  async.runtime.set_available %released : !async.token
  %us = arith.constant 50000 : i32
  %slept = func.call @usleep(%us) : (i32) -> i32
  vector.print str "task queued during destroy done\n"
  return
}

// Runs on a plain pthread, while the runner's destroy hook drains.
func.func @late_caller(%arg: !llvm.ptr) -> !llvm.ptr {
  %us = arith.constant 300000 : i32
  %slept = func.call @usleep(%us) : (i32) -> i32
  %done = builtin.unrealized_conversion_cast %arg : !llvm.ptr to !async.token
  %t = async.execute {
    vector.print str "task queued during destroy ran\n"
    func.call @release_then_linger(%done) : (!async.token) -> ()
    async.yield
  }
  %null = llvm.mlir.zero : !llvm.ptr
  return %null : !llvm.ptr
}

func.func @main() {
  %done = async.runtime.create : !async.token
  async.runtime.add_ref %done {count = 1 : i64} : !async.token
  %arg = builtin.unrealized_conversion_cast %done : !async.token to !llvm.ptr
  %tid = memref.get_global @late_thread : memref<1xi64>
  %tid_idx = memref.extract_aligned_pointer_as_index %tid : memref<1xi64> -> index
  %tid_i64 = arith.index_cast %tid_idx : index to i64
  %tid_ptr = llvm.inttoptr %tid_i64 : i64 to !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %fn = func.constant @late_caller : (!llvm.ptr) -> !llvm.ptr
  %rc = func.call @pthread_create(%tid_ptr, %null, %fn, %arg)
      : (!llvm.ptr, !llvm.ptr, (!llvm.ptr) -> !llvm.ptr, !llvm.ptr) -> i32
  // A task the destroy hook must drain: it waits for the late caller.
  %t = async.execute {
    func.call @block_on(%done) : (!async.token) -> ()
    %c0 = arith.constant 0 : index
    %thread = memref.load %tid[%c0] : memref<1xi64>
    %no_result = llvm.mlir.zero : !llvm.ptr
    %joined = func.call @pthread_join(%thread, %no_result) : (i64, !llvm.ptr) -> i32
    vector.print str "drained task saw the late caller finish\n"
    async.yield
  }
  vector.print str "main returns\n"
  return
}
