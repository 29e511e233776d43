// The program of scripts/corpus/symbol_binding.py: tasks, a value and an error, so
// that whichever runtime the engine bound does some work (it creates three
// tokens and two values), and the result shows it ran right. It first
// prints the runtime's worker count: run with MLIR_ASYNC_RUNTIME_WORKERS=7,
// ours says 7, the C++ runtime the machine's parallelism. Not a corpus
// program (Inputs/ is not scanned); written for MLIR 19 and rewritten for
// older versions by lib/downport.py like the corpus.

// RUN: %mlir_opt %s %async_to_llvm | %run_async | FileCheck %s

func.func @main() {
  %workers = async.runtime.num_worker_threads : index
  // CHECK: {{[0-9]+}}
  vector.print %workers : index
  %false = arith.constant false
  %x = arith.constant 20 : i64
  %t0, %v0 = async.execute -> !async.value<i64> {
    %y = arith.addi %x, %x : i64
    async.yield %y : i64
  }
  %t1, %v1 = async.execute [%t0] (%v0 as %a : !async.value<i64>) -> !async.value<i64> {
    %two = arith.constant 2 : i64
    %z = arith.addi %a, %two : i64
    async.yield %z : i64
  }
  %failed = async.execute {
    cf.assert %false, "expected failure"
    async.yield
  }
  %r = async.await %v1 : !async.value<i64>
  // CHECK: 42
  vector.print %r : i64
  async.runtime.await %failed : !async.token
  %e = async.runtime.is_error %failed : !async.token
  // CHECK: 1
  vector.print %e : i1
  return
}
