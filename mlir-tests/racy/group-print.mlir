// An order race: the members of a group print, and nothing orders them.
// The author expected them in the order they were added to the group.
//
// Not a passing test: see store-store.mlir.
// RUN: %mlir_opt %s %async_to_llvm | %run_async | FileCheck %s

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %g = async.create_group %c4 : !async.group
  scf.for %i = %c0 to %c4 step %c1 {
    %t = async.execute {
      vector.print str "member "
      vector.print %i : index
      async.yield
    }
    %rank = async.add_to_group %t, %g : !async.token
  }
  async.await_all %g
  // CHECK: member 0
  // CHECK-NEXT: member 1
  // CHECK-NEXT: member 2
  // CHECK-NEXT: member 3
  // CHECK-NEXT: all members done
  vector.print str "all members done\n"
  return
}
