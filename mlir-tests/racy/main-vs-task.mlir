// An order race between the main thread and a task it never awaits: the
// author assumed the task, which does a little more work, prints after
// main's own line. Nothing makes it so: when the task runs first, its line
// comes first. (The program then waits for the task only through the
// destroy hook, as fire-and-forget code does.)
//
// Not a passing test: see store-store.mlir.
// RUN: %mlir_opt %s %async_to_llvm | %run_async | FileCheck %s

func.func @main() {
  %t = async.execute {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 100 : index
    %buf = memref.alloca() : memref<1xindex>
    memref.store %c0, %buf[%c0] : memref<1xindex>
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %buf[%c0] : memref<1xindex>
      %w = arith.addi %v, %i : index
      memref.store %w, %buf[%c0] : memref<1xindex>
    }
    vector.print str "task: done\n"
    async.yield
  }
  // CHECK: main: started the task
  // CHECK-NEXT: task: done
  vector.print str "main: started the task\n"
  return
}
