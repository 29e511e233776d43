// Tokens and dependencies: async.execute [deps] must not start before every
// dependency token is available. Each task appends its digit to a shared
// accumulator (acc = acc * 10 + digit), so the final number spells the order
// in which the tasks ran; the first tasks of each chain spin for a while so
// that ignoring a dependency would very likely reorder them.
// Covers: CreateToken, Execute, EmplaceToken, AwaitToken (blocking, in main),
// AwaitTokenAndExecute (dependencies and await inside async.execute),
// IsTokenError, AddRef/DropRef (one token shared by several dependents).

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

// acc[0] = acc[0] * 10 + d
func.func @append(%acc: memref<1xi64>, %d: i64) {
  %c0 = arith.constant 0 : index
  %c10 = arith.constant 10 : i64
  %v = memref.load %acc[%c0] : memref<1xi64>
  %m = arith.muli %v, %c10 : i64
  %w = arith.addi %m, %d : i64
  memref.store %w, %acc[%c0] : memref<1xi64>
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0 : i64
  %d1 = arith.constant 1 : i64
  %d2 = arith.constant 2 : i64
  %d3 = arith.constant 3 : i64
  %d4 = arith.constant 4 : i64
  %d5 = arith.constant 5 : i64
  %long = arith.constant 200000 : index
  %acc = memref.alloc() : memref<1xi64>

  // A linear chain 1 -> 2 -> 3 -> 4; the head spins.
  memref.store %z, %acc[%c0] : memref<1xi64>
  %t1 = async.execute {
    func.call @spin(%long) : (index) -> ()
    func.call @append(%acc, %d1) : (memref<1xi64>, i64) -> ()
    async.yield
  }
  %t2 = async.execute [%t1] {
    func.call @spin(%long) : (index) -> ()
    func.call @append(%acc, %d2) : (memref<1xi64>, i64) -> ()
    async.yield
  }
  %t3 = async.execute [%t2] {
    func.call @append(%acc, %d3) : (memref<1xi64>, i64) -> ()
    async.yield
  }
  %t4 = async.execute [%t3] {
    func.call @append(%acc, %d4) : (memref<1xi64>, i64) -> ()
    async.yield
  }
  async.await %t4 : !async.token
  %chain = memref.load %acc[%c0] : memref<1xi64>
  // CHECK: chain: 1234
  vector.print str "chain: "
  vector.print %chain : i64

  // A task with several dependencies: 5 waits for 1, 2 and 3, which are
  // independent of each other (2 and 3 both wait for 1 only, 3 waits for 2
  // through an await inside its body). The head token is shared by three
  // dependents, which makes the ref-counting pass emit AddRef.
  memref.store %z, %acc[%c0] : memref<1xi64>
  %h = async.execute {
    func.call @spin(%long) : (index) -> ()
    func.call @append(%acc, %d1) : (memref<1xi64>, i64) -> ()
    async.yield
  }
  %a = async.execute [%h] {
    func.call @spin(%long) : (index) -> ()
    func.call @append(%acc, %d2) : (memref<1xi64>, i64) -> ()
    async.yield
  }
  %b = async.execute [%h] {
    // Non-blocking await of a token inside a task.
    async.await %a : !async.token
    func.call @append(%acc, %d3) : (memref<1xi64>, i64) -> ()
    async.yield
  }
  %c = async.execute [%h, %a, %b] {
    func.call @append(%acc, %d5) : (memref<1xi64>, i64) -> ()
    async.yield
  }
  // Blocking awaits of already-complete and pending tokens, in any order.
  async.await %c : !async.token
  async.await %h : !async.token
  async.await %a : !async.token
  %diamond = memref.load %acc[%c0] : memref<1xi64>
  // CHECK-NEXT: diamond: 1235
  vector.print str "diamond: "
  vector.print %diamond : i64

  // A token that is already complete before anything depends on it.
  %done = async.execute {
    func.call @append(%acc, %d4) : (memref<1xi64>, i64) -> ()
    async.yield
  }
  async.await %done : !async.token
  %late = async.execute [%done] {
    func.call @append(%acc, %d1) : (memref<1xi64>, i64) -> ()
    async.yield
  }
  async.await %late : !async.token
  %l = memref.load %acc[%c0] : memref<1xi64>
  // CHECK-NEXT: late: 123541
  vector.print str "late: "
  vector.print %l : i64

  // None of these tokens is in the error state.
  %e1 = async.runtime.is_error %t4 : !async.token
  %e2 = async.runtime.is_error %c : !async.token
  // CHECK-NEXT: errors: 0 0
  vector.print str "errors: "
  vector.print %e1 : i1 punctuation <no_punctuation>
  vector.print str " "
  vector.print %e2 : i1
  memref.dealloc %acc : memref<1xi64>
  return
}
