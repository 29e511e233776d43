// Error propagation through groups. A group is in error once any of its
// tokens is (IsGroupError), checked after a blocking await (AwaitAllInGroup)
// in main. Inside a task, `async.await_all` of a group in error
// (AwaitAllInGroupAndExecute) puts the task's token and values in error.
// A group whose tokens are all healthy must not report an error, and the
// error must not be lost when the failing token completes before it is added
// to the group, or last of many.

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

// A group of n tasks; task i fails iff i == fail (pass n to fail none).
// The task that fails spins first, so it finishes last.
func.func @make_group(%n: index, %fail: index, %spin: index) -> !async.group {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %g = async.create_group %n : !async.group
  scf.for %i = %c0 to %n step %c1 {
    %t = async.execute {
      %is = arith.cmpi eq, %i, %fail : index
      %ok = arith.cmpi ne, %i, %fail : index
      scf.if %is {
        func.call @spin(%spin) : (index) -> ()
      }
      cf.assert %ok, "expected failure (group member)"
      async.yield
    }
    %r = async.add_to_group %t, %g : !async.token
  }
  return %g : !async.group
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %long = arith.constant 300000 : index

  // Healthy group.
  %g0 = func.call @make_group(%c16, %c16, %long) : (index, index, index) -> !async.group
  async.runtime.await %g0 : !async.group
  %e0 = async.runtime.is_error %g0 : !async.group
  // CHECK: healthy group error: 0
  vector.print str "healthy group error: "
  vector.print %e0 : i1

  // One failing member (the last to finish) out of 16.
  %g1 = func.call @make_group(%c16, %c3, %long) : (index, index, index) -> !async.group
  async.runtime.await %g1 : !async.group
  %e1 = async.runtime.is_error %g1 : !async.group
  // CHECK-NEXT: failing group error: 1
  vector.print str "failing group error: "
  vector.print %e1 : i1

  // The failing token completes before it is added to the group.
  %g2 = async.create_group %c3 : !async.group
  %f = async.execute {
    %false = arith.constant false
    cf.assert %false, "expected failure (early)"
    async.yield
  }
  async.runtime.await %f : !async.token
  %a = async.execute { async.yield }
  %r0 = async.add_to_group %a, %g2 : !async.token
  %r1 = async.add_to_group %f, %g2 : !async.token
  %b = async.execute {
    func.call @spin(%long) : (index) -> ()
    async.yield
  }
  %r2 = async.add_to_group %b, %g2 : !async.token
  async.runtime.await %g2 : !async.group
  %e2 = async.runtime.is_error %g2 : !async.group
  // CHECK-NEXT: early failure group error: 1
  vector.print str "early failure group error: "
  vector.print %e2 : i1

  // Non-blocking await_all of a failing group inside a task: the task's
  // token and value are in error, and its body after the await did not run.
  %g3 = func.call @make_group(%c16, %c1, %long) : (index, index, index) -> !async.group
  %flag = memref.alloc() : memref<i64>
  %z = arith.constant 0 : i64
  memref.store %z, %flag[] : memref<i64>
  %t, %v = async.execute -> !async.value<i64> {
    async.await_all %g3
    %one = arith.constant 1 : i64
    memref.store %one, %flag[] : memref<i64>
    async.yield %one : i64
  }
  async.runtime.await %v : !async.value<i64>
  %e3 = async.runtime.is_error %v : !async.value<i64>
  %e3t = async.runtime.is_error %t : !async.token
  %ran = memref.load %flag[] : memref<i64>
  // CHECK-NEXT: await_all in task: value error 1, token error 1, body ran 0
  vector.print str "await_all in task: value error "
  vector.print %e3 : i1 punctuation <no_punctuation>
  vector.print str ", token error "
  vector.print %e3t : i1 punctuation <no_punctuation>
  vector.print str ", body ran "
  vector.print %ran : i64

  // ...and a healthy group awaited in a task leaves the task healthy.
  %g4 = func.call @make_group(%c16, %c16, %long) : (index, index, index) -> !async.group
  %t4 = async.execute {
    async.await_all %g4
    async.yield
  }
  async.runtime.await %t4 : !async.token
  %e4 = async.runtime.is_error %t4 : !async.token
  // CHECK-NEXT: healthy await_all in task: error 0
  vector.print str "healthy await_all in task: error "
  vector.print %e4 : i1
  memref.dealloc %flag : memref<i64>
  return
}
