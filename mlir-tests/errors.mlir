// Error propagation through tokens and values. A `cf.assert` that fails inside
// async.execute puts the execute's token and all its values in the error
// state (SetTokenError / SetValueError) instead of aborting. The error must
// then (a) wake blocked awaiters in main (the failing tasks spin first, so
// main is already blocked in AwaitToken/AwaitValue), (b) be reported by
// async.runtime.is_error (IsTokenError / IsValueError), and (c) propagate to
// every task that depends on it through a token dependency, a value operand,
// or an async.await in its body, without running that task's body.
// Healthy tokens and values next to them must stay healthy.

// RUN: %mlir_opt %s %async_to_llvm | %run_async | FileCheck %s

func.func @spin(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %buf = memref.alloca() : memref<1xindex>
  memref.store %c0, %buf[%c0] : memref<1xindex>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %buf[%c0] : memref<1xindex>
    %w = arith.addi %v, %i : index
    memref.store %w, %buf[%c0] : memref<1xindex>
  }
  return
}

func.func @report(%label: i64, %e: i1) {
  vector.print str "error "
  vector.print %label : i64 punctuation <no_punctuation>
  vector.print str ": "
  vector.print %e : i1
  return
}

func.func @main() {
  %false = arith.constant false
  %true = arith.constant true
  %long = arith.constant 300000 : index
  %one = arith.constant 1 : i64
  %ran = memref.alloc() : memref<i64>
  %z = arith.constant 0 : i64
  memref.store %z, %ran[] : memref<i64>
  %l0 = arith.constant 0 : i64
  %l1 = arith.constant 1 : i64
  %l2 = arith.constant 2 : i64
  %l3 = arith.constant 3 : i64
  %l4 = arith.constant 4 : i64
  %l5 = arith.constant 5 : i64
  %l6 = arith.constant 6 : i64
  %l7 = arith.constant 7 : i64
  %l8 = arith.constant 8 : i64
  %l9 = arith.constant 9 : i64

  // 0: a healthy token.
  %ok = async.execute {
    func.call @spin(%long) : (index) -> ()
    async.yield
  }
  async.runtime.await %ok : !async.token
  %e0 = async.runtime.is_error %ok : !async.token
  // CHECK: error 0: 0
  func.call @report(%l0, %e0) : (i64, i1) -> ()

  // 1: a token whose task fails after spinning (main blocks first).
  %bad = async.execute {
    func.call @spin(%long) : (index) -> ()
    cf.assert %false, "expected failure (token)"
    %o = memref.atomic_rmw addi %one, %ran[] : (i64, memref<i64>) -> i64
    async.yield
  }
  async.runtime.await %bad : !async.token
  %e1 = async.runtime.is_error %bad : !async.token
  // CHECK-NEXT: error 1: 1
  func.call @report(%l1, %e1) : (i64, i1) -> ()

  // 2: a value whose producer fails: value and token both in error.
  %tv, %v = async.execute -> !async.value<f32> {
    func.call @spin(%long) : (index) -> ()
    cf.assert %false, "expected failure (value)"
    %x = arith.constant 1.0 : f32
    async.yield %x : f32
  }
  async.runtime.await %v : !async.value<f32>
  %e2 = async.runtime.is_error %v : !async.value<f32>
  %e2t = async.runtime.is_error %tv : !async.token
  // CHECK-NEXT: error 2: 1
  func.call @report(%l2, %e2) : (i64, i1) -> ()
  // CHECK-NEXT: error 3: 1
  func.call @report(%l3, %e2t) : (i64, i1) -> ()

  // 4: a token dependency in error: the dependent's body must not run.
  %dep = async.execute [%bad] {
    %o = memref.atomic_rmw addi %one, %ran[] : (i64, memref<i64>) -> i64
    async.yield
  }
  async.runtime.await %dep : !async.token
  %e4 = async.runtime.is_error %dep : !async.token
  // CHECK-NEXT: error 4: 1
  func.call @report(%l4, %e4) : (i64, i1) -> ()

  // 5: a value operand in error: the consumer's value is in error too.
  %tc, %vc = async.execute (%v as %x: !async.value<f32>) -> !async.value<f32> {
    %o = memref.atomic_rmw addi %one, %ran[] : (i64, memref<i64>) -> i64
    async.yield %x : f32
  }
  async.runtime.await %vc : !async.value<f32>
  %e5 = async.runtime.is_error %vc : !async.value<f32>
  // CHECK-NEXT: error 5: 1
  func.call @report(%l5, %e5) : (i64, i1) -> ()

  // 6: an async.await of an error token inside a task propagates the error
  //    to the awaiting task's results (IsTokenError inside the coroutine).
  %ta, %va = async.execute -> !async.value<i64> {
    async.await %bad : !async.token
    %o = memref.atomic_rmw addi %one, %ran[] : (i64, memref<i64>) -> i64
    async.yield %one : i64
  }
  async.runtime.await %va : !async.value<i64>
  %e6 = async.runtime.is_error %va : !async.value<i64>
  // CHECK-NEXT: error 6: 1
  func.call @report(%l6, %e6) : (i64, i1) -> ()

  // 7: same through an awaited value inside a task, awaited while pending.
  %tp, %vp = async.execute -> !async.value<i64> {
    func.call @spin(%long) : (index) -> ()
    cf.assert %false, "expected failure (pending value)"
    async.yield %one : i64
  }
  %tq = async.execute {
    %x = async.await %vp : !async.value<i64>
    %o = memref.atomic_rmw addi %one, %ran[] : (i64, memref<i64>) -> i64
    async.yield
  }
  async.runtime.await %tq : !async.token
  %e7 = async.runtime.is_error %tq : !async.token
  // CHECK-NEXT: error 7: 1
  func.call @report(%l7, %e7) : (i64, i1) -> ()

  // 8: a failing condition that is only known at run time: only the task
  //    that gets `false` fails, its sibling is healthy.
  %tt = async.execute {
    cf.assert %true, "must not fire"
    async.yield
  }
  async.runtime.await %tt : !async.token
  %e8 = async.runtime.is_error %tt : !async.token
  // CHECK-NEXT: error 8: 0
  func.call @report(%l8, %e8) : (i64, i1) -> ()

  // No body after a failure ran: the counter stays zero.
  %n = memref.load %ran[] : memref<i64>
  // CHECK-NEXT: bodies run after an error: 0
  vector.print str "bodies run after an error: "
  vector.print %n : i64

  // 9: the healthy token is still healthy and awaitable normally.
  async.await %ok : !async.token
  %e9 = async.runtime.is_error %ok : !async.token
  // CHECK-NEXT: error 9: 0
  func.call @report(%l9, %e9) : (i64, i1) -> ()
  memref.dealloc %ran : memref<i64>
  return
}
