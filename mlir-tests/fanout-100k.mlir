// Fan-out of 100,000 tasks into one group. Each task increments a shared
// counter atomically and writes its own slot (slot i = i + 1); main awaits the
// group (blocking), then checks the counter, the sum over all slots and the
// number of empty slots, and the sum of the ranks add_to_group returned
// (0 + 1 + ... + 99999). A lost, duplicated or late task changes a number.
// A second group of 100,000 is awaited from inside a task (non-blocking).

// RUN: %mlir_opt %s %async_to_llvm | %run_async | FileCheck %s

func.func @fan(%g: !async.group, %n: index, %cnt: memref<i64>, %slots: memref<?xi64>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i64
  %ranks = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> index {
    %t = async.execute {
      %o = memref.atomic_rmw addi %one, %cnt[] : (i64, memref<i64>) -> i64
      %x = arith.index_cast %i : index to i64
      %y = arith.addi %x, %one : i64
      memref.store %y, %slots[%i] : memref<?xi64>
      async.yield
    }
    %r = async.add_to_group %t, %g : !async.token
    %s = arith.addi %acc, %r : index
    scf.yield %s : index
  }
  return %ranks : index
}

func.func @report(%n: index, %cnt: memref<i64>, %slots: memref<?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %count = memref.load %cnt[] : memref<i64>
  %sum, %empty = scf.for %i = %c0 to %n step %c1 iter_args(%s = %zero, %e = %zero) -> (i64, i64) {
    %v = memref.load %slots[%i] : memref<?xi64>
    %s2 = arith.addi %s, %v : i64
    %is0 = arith.cmpi eq, %v, %zero : i64
    %inc = arith.select %is0, %one, %zero : i64
    %e2 = arith.addi %e, %inc : i64
    scf.yield %s2, %e2 : i64, i64
  }
  vector.print str "count="
  vector.print %count : i64 punctuation <no_punctuation>
  vector.print str " slot-sum="
  vector.print %sum : i64 punctuation <no_punctuation>
  vector.print str " empty="
  vector.print %empty : i64
  return
}

func.func @clear(%n: index, %cnt: memref<i64>, %slots: memref<?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i64
  memref.store %zero, %cnt[] : memref<i64>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %zero, %slots[%i] : memref<?xi64>
  }
  return
}

func.func @main() {
  %n = arith.constant 100000 : index
  %cnt = memref.alloc() : memref<i64>
  %slots = memref.alloc(%n) : memref<?xi64>

  // Blocking await_all in main.
  func.call @clear(%n, %cnt, %slots) : (index, memref<i64>, memref<?xi64>) -> ()
  %g = async.create_group %n : !async.group
  %ranks = func.call @fan(%g, %n, %cnt, %slots) : (!async.group, index, memref<i64>, memref<?xi64>) -> index
  async.await_all %g
  // CHECK: ranks=4999950000
  vector.print str "ranks="
  vector.print %ranks : index
  // 100000 * 100001 / 2 = 5000050000
  // CHECK-NEXT: count=100000 slot-sum=5000050000 empty=0
  func.call @report(%n, %cnt, %slots) : (index, memref<i64>, memref<?xi64>) -> ()

  // Non-blocking await_all inside a task.
  func.call @clear(%n, %cnt, %slots) : (index, memref<i64>, memref<?xi64>) -> ()
  %g2 = async.create_group %n : !async.group
  %waiter = async.execute {
    async.await_all %g2
    async.yield
  }
  %r2 = func.call @fan(%g2, %n, %cnt, %slots) : (!async.group, index, memref<i64>, memref<?xi64>) -> index
  async.await %waiter : !async.token
  // CHECK-NEXT: count=100000 slot-sum=5000050000 empty=0
  func.call @report(%n, %cnt, %slots) : (index, memref<i64>, memref<?xi64>) -> ()

  memref.dealloc %slots : memref<?xi64>
  memref.dealloc %cnt : memref<i64>
  return
}
