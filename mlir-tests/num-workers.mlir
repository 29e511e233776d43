// async.runtime.num_worker_threads (mlirAsyncRuntimGetNumWorkerThreads, the
// real upstream spelling) must report a positive number of workers, and the
// same number every time. Then that many tasks plus one all finish (tasks
// never block a worker while awaiting).
// Covers: mlirAsyncRuntimGetNumWorkerThreads.
// The worker count is the runtime's: the sequential reference (one inline
// worker) prints 1.
// REFERENCE-IGNORE: ^workers:

// RUN: %mlir_opt %s %async_to_llvm | %run_async | FileCheck %s

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = async.runtime.num_worker_threads : index
  %n2 = async.runtime.num_worker_threads : index
  %ok = arith.cmpi sgt, %n, %c0 : index
  %same = arith.cmpi eq, %n, %n2 : index
  // CHECK: workers: {{[1-9][0-9]*$}}
  vector.print str "workers: "
  vector.print %n : index
  // CHECK-NEXT: positive: 1 stable: 1
  vector.print str "positive: "
  vector.print %ok : i1 punctuation <no_punctuation>
  vector.print str " stable: "
  vector.print %same : i1

  // n + 1 tasks that each wait for the last one to start: a runtime that
  // blocked a worker per waiting task would hang here.
  %m = arith.addi %n, %c1 : index
  %gate = async.execute { async.yield }
  %g = async.create_group %m : !async.group
  scf.for %i = %c0 to %m step %c1 {
    %t = async.execute [%gate] { async.yield }
    %r = async.add_to_group %t, %g : !async.token
  }
  async.await_all %g
  // CHECK-NEXT: tasks done
  vector.print str "tasks done\n"
  return
}
