// The destroy hook while a thread outside the runtime calls
// mlirAsyncRuntimeExecute. main starts a plain pthread (the "late caller")
// and a task that blocks until the late caller is done, then returns: the
// runner calls the destroy hook, which must drain that task. 100 ms later,
// during the drain, the late caller runs an async.execute and awaits it.
// In an earlier version of ours the late caller's Execute waited for a lock that destroy
// held while it waited for the task, which waited for the late caller:
// the program hung, printing "destroy: waiting for 1 task(s) still in
// flight". Now the late task joins the drain (it runs on the instance
// being destroyed, before destroy returns), the late caller completes the
// token the drained task waits for, and destroy returns.
//
// The late caller's token crosses the pthread boundary as a pointer
// (unrealized casts, which the lowering folds away); main adds the
// reference the late caller's automatic ref counting drops.
//
// UNSUPPORTED: cxx-runtime, floor-runtime
// (The C++ runtime's destroy hook does not drain its pool at all; this
// checks a property of ours. The floor of bench/floor is single-threaded
// and not thread-safe: a second thread calling it is out of its scope.)

// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=1 %run_async 2>&1 | FileCheck %s
// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=2 %run_async 2>&1 | FileCheck %s

// CHECK: main returns
// CHECK-NEXT: task queued during destroy ran
// CHECK-NEXT: drained task saw the late caller finish
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

// Runs on a plain pthread, while the runner's destroy hook drains.
func.func @late_caller(%arg: !llvm.ptr) -> !llvm.ptr {
  %us = arith.constant 100000 : i32
  %slept = func.call @usleep(%us) : (i32) -> i32
  %t = async.execute {
    vector.print str "task queued during destroy ran\n"
    async.yield
  }
  async.await %t : !async.token
  %done = builtin.unrealized_conversion_cast %arg : !llvm.ptr to !async.token
  async.runtime.set_available %done : !async.token
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
