// Groups: async.create_group / async.add_to_group / async.await_all.
// Blocking: await_all in main (AwaitAllInGroup). Non-blocking: await_all
// inside an async.execute (AwaitAllInGroupAndExecute), for a group filled by
// main and for one created and filled inside the task. add_to_group must
// return the rank of the token in the group (0, 1, 2, ... in call order): the
// sum of ranks is printed. The tasks of a group spin before they count, so an
// await_all that returned early would see a smaller count.
// Covers: CreateGroup, AddTokenToGroup, AwaitAllInGroup,
// AwaitAllInGroupAndExecute, IsGroupError.

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

// Adds n tasks to %g, each counting once into %count.
func.func @fill(%g: !async.group, %count: memref<i64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i64
  %spin = arith.constant 50000 : index
  scf.for %i = %c0 to %n step %c1 {
    %t = async.execute {
      func.call @spin(%spin) : (index) -> ()
      %o = memref.atomic_rmw addi %one, %count[] : (i64, memref<i64>) -> i64
      async.yield
    }
    %rank = async.add_to_group %t, %g : !async.token
  }
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1 : i64
  %zero = arith.constant 0 : i64
  %spin = arith.constant 50000 : index
  %count = memref.alloc() : memref<i64>

  // 1. Blocking await_all in main over 8 tasks.
  memref.store %zero, %count[] : memref<i64>
  %g = async.create_group %c8 : !async.group
  %ranks = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %c0) -> index {
    %t = async.execute {
      func.call @spin(%spin) : (index) -> ()
      %o = memref.atomic_rmw addi %one, %count[] : (i64, memref<i64>) -> i64
      async.yield
    }
    %rank = async.add_to_group %t, %g : !async.token
    %s = arith.addi %acc, %rank : index
    scf.yield %s : index
  }
  async.await_all %g
  %n1 = memref.load %count[] : memref<i64>
  // CHECK: blocking: count=8 ranks=28 error=0
  vector.print str "blocking: count="
  vector.print %n1 : i64 punctuation <no_punctuation>
  vector.print str " ranks="
  vector.print %ranks : index punctuation <no_punctuation>
  %e1 = async.runtime.is_error %g : !async.group
  vector.print str " error="
  vector.print %e1 : i1

  // 2. An empty group completes at once, blocking and non-blocking.
  %empty = async.create_group %c0 : !async.group
  async.await_all %empty
  %te = async.execute {
    async.await_all %empty
    async.yield
  }
  async.await %te : !async.token
  // CHECK-NEXT: empty group done
  vector.print str "empty group done\n"

  // 3. Non-blocking await_all inside a task, group filled by main; the
  //    task reports the count it saw after the await.
  memref.store %zero, %count[] : memref<i64>
  %g2 = async.create_group %c8 : !async.group
  %tw, %seen = async.execute -> !async.value<i64> {
    async.await_all %g2
    %n = memref.load %count[] : memref<i64>
    async.yield %n : i64
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %t = async.execute {
      func.call @spin(%spin) : (index) -> ()
      %o = memref.atomic_rmw addi %one, %count[] : (i64, memref<i64>) -> i64
      async.yield
    }
    %rank = async.add_to_group %t, %g2 : !async.token
  }
  %s2 = async.await %seen : !async.value<i64>
  // CHECK-NEXT: non-blocking: seen=8
  vector.print str "non-blocking: seen="
  vector.print %s2 : i64

  // 4. A group created, filled and awaited inside a task (nested tasks).
  memref.store %zero, %count[] : memref<i64>
  %tn, %inner = async.execute -> !async.value<i64> {
    %g3 = async.create_group %c8 : !async.group
    // (async-to-async-runtime cannot lower an scf.for holding async ops in
    // a coroutine body, so the loop lives in a plain function.)
    func.call @fill(%g3, %count, %c8) : (!async.group, memref<i64>, index) -> ()
    async.await_all %g3
    %n = memref.load %count[] : memref<i64>
    async.yield %n : i64
  }
  %s3 = async.await %inner : !async.value<i64>
  // CHECK-NEXT: nested: seen=8
  vector.print str "nested: seen="
  vector.print %s3 : i64

  // 5. Tokens that completed before being added to the group.
  %g4 = async.create_group %c8 : !async.group
  %last = scf.for %i = %c0 to %c8 step %c1 iter_args(%prev = %c0) -> index {
    %t = async.execute { async.yield }
    async.await %t : !async.token
    %rank = async.add_to_group %t, %g4 : !async.token
    scf.yield %rank : index
  }
  async.await_all %g4
  // CHECK-NEXT: completed-first: last rank=7
  vector.print str "completed-first: last rank="
  vector.print %last : index
  memref.dealloc %count : memref<i64>
  return
}
