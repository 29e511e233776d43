// The destroy hook while a thread outside the runtime completes a token
// that has a continuation. main registers a continuation on a gate token
// (async.execute with a dependency), starts a plain pthread (the "late
// completer") and a task that blocks until the continuation has released
// it, then returns: the runner's destroy hook must drain that task. 300 ms
// later, during the drain and past its 100 ms bound on staying the current
// instance (DRAIN_WHILE_CURRENT), the late completer opens the gate, which
// fires the continuation on its thread. The continuation releases the
// drained task and then runs on for 50 ms.
//
// In an earlier version of ours that hung the same way as a late Execute
// (destroy-races-execute.mlir). In a later one, the continuation fired
// past the bound went to a fresh instance: the drained task finished, the
// destroy hook returned, and the runner freed the code that the
// continuation still ran (a SIGSEGV after "destroy: still alive: 1
// token(s)"; with the gate opened at 100 ms, 3 runs of 600 under load, and
// one CI run). Now the instance stays current while every task in flight
// waits in an await (nothing outpaces the drain), the continuation joins
// the drain, and destroy returns after it.
//
// With DRAINED_TASK_WORK_US set, the drained task first computes that
// long (150 ms: past the bound) before it waits. Until 2026-12-07 the
// bound then applied (a task was running), the continuation went to a
// fresh instance, and destroy returned while it ran: the same SIGSEGV
// after "destroy: still alive: 1 token(s)". Now the bound applies only if
// a thread outside the pool called in since the drain began. With 600 ms
// the late completer calls in while the task still computes: the bound
// applies, and the completion, made inside the instance's gate, still
// joins the drain.
//
// The C++ runtime passes it too (MLIR 16, 19 and 22; 6 of 6 runs on 19):
// its destroy hook deletes the runtime, whose destructor waits for its
// thread pool, and the continuation runs on the late completer's own
// thread, which needs no runtime to run it.
//
// UNSUPPORTED: floor-runtime, deterministic-schedule
// (The floor of bench/floor is single-threaded and not thread-safe: a
// second thread calling it is out of its scope. Under a deterministic schedule the drained task joins the late thread
// while it holds the baton, which that thread may need to return from its
// runtime call: a program that waits outside the runtime for another
// thread, docs/exploration.md. runtime/tests/lifecycle.rs's
// late-continuation scenario checks the same drain under every executor.)

// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=1 %run_async 2>&1 | FileCheck %s
// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=2 %run_async 2>&1 | FileCheck %s
// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=2 DRAINED_TASK_WORK_US=150000 %run_async 2>&1 | FileCheck %s
// RUN: %mlir_opt %s %async_to_llvm | env MLIR_ASYNC_RUNTIME_WORKERS=2 DRAINED_TASK_WORK_US=600000 %run_async 2>&1 | FileCheck %s

// (The two last lines come in either order: with one worker, the drained
// task runs only once the other task is done. Our stderr comes before the
// program's stdout, which is flushed at exit.)
// CHECK-NOT: mlir_async_runtime
// CHECK: main returns
// CHECK-NEXT: continuation fired by the late completer ran
// CHECK-DAG: drained task saw the continuation run
// CHECK-DAG: continuation done
// CHECK-NOT: mlir_async_runtime

func.func private @pthread_create(!llvm.ptr, !llvm.ptr, (!llvm.ptr) -> !llvm.ptr, !llvm.ptr) -> i32
func.func private @pthread_join(i64, !llvm.ptr) -> i32
func.func private @usleep(i32) -> i32
llvm.mlir.global internal constant @work_var("DRAINED_TASK_WORK_US\00") {addr_space = 0 : i32}
llvm.func @getenv(!llvm.ptr) -> !llvm.ptr
llvm.func @atoi(!llvm.ptr) -> i32

// The late thread's pthread_t. The drained task joins the thread, so that
// it no longer runs compiled code when the destroy hook returns and the
// runner frees that code.
memref.global "private" @late_thread : memref<1xi64> = dense<0>

// Sleeps $DRAINED_TASK_WORK_US microseconds, if set: a task that
// computes that long.
func.func @work() {
  %name = llvm.mlir.addressof @work_var : !llvm.ptr
  %s = llvm.call @getenv(%name) : (!llvm.ptr) -> !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %set = llvm.icmp "ne" %s, %null : !llvm.ptr
  scf.if %set {
    %us = llvm.call @atoi(%s) : (!llvm.ptr) -> i32
    %slept = func.call @usleep(%us) : (i32) -> i32
  }
  return
}

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
  vector.print str "continuation done\n"
  return
}

// Runs on a plain pthread, while the runner's destroy hook drains.
func.func @late_completer(%arg: !llvm.ptr) -> !llvm.ptr {
  %us = arith.constant 300000 : i32
  %slept = func.call @usleep(%us) : (i32) -> i32
  %gate = builtin.unrealized_conversion_cast %arg : !llvm.ptr to !async.token
  async.runtime.set_available %gate : !async.token
  %null = llvm.mlir.zero : !llvm.ptr
  return %null : !llvm.ptr
}

func.func @main() {
  %gate = async.runtime.create : !async.token
  async.runtime.add_ref %gate {count = 1 : i64} : !async.token
  %released = async.runtime.create : !async.token
  %after = async.execute [%gate] {
    vector.print str "continuation fired by the late completer ran\n"
    func.call @release_then_linger(%released) : (!async.token) -> ()
    async.yield
  }
  %arg = builtin.unrealized_conversion_cast %gate : !async.token to !llvm.ptr
  %tid = memref.get_global @late_thread : memref<1xi64>
  %tid_idx = memref.extract_aligned_pointer_as_index %tid : memref<1xi64> -> index
  %tid_i64 = arith.index_cast %tid_idx : index to i64
  %tid_ptr = llvm.inttoptr %tid_i64 : i64 to !llvm.ptr
  %null = llvm.mlir.zero : !llvm.ptr
  %fn = func.constant @late_completer : (!llvm.ptr) -> !llvm.ptr
  %rc = func.call @pthread_create(%tid_ptr, %null, %fn, %arg)
      : (!llvm.ptr, !llvm.ptr, (!llvm.ptr) -> !llvm.ptr, !llvm.ptr) -> i32
  // A task the destroy hook must drain: it waits for the continuation.
  %t = async.execute {
    func.call @work() : () -> ()
    func.call @block_on(%released) : (!async.token) -> ()
    %c0 = arith.constant 0 : index
    %thread = memref.load %tid[%c0] : memref<1xi64>
    %no_result = llvm.mlir.zero : !llvm.ptr
    %joined = func.call @pthread_join(%thread, %no_result) : (i64, !llvm.ptr) -> i32
    vector.print str "drained task saw the continuation run\n"
    async.yield
  }
  vector.print str "main returns\n"
  return
}
