// Async values of every payload kind the lowering supports here: i1, i64,
// f32, f64 and a memref descriptor. Each value is produced by async.execute,
// then awaited both blocking (async.await in main -> AwaitValue) and
// non-blocking (async.await inside another async.execute ->
// AwaitValueAndExecute). The payloads are chosen so that a value storage that
// is too small, shared between values, or read before the producer emplaced it
// prints something else.
// Covers: CreateValue, GetValueStorage, EmplaceValue, AwaitValue,
// AwaitValueAndExecute, IsValueError.

// RUN: %mlir_opt %s %async_to_llvm | %run_async | FileCheck %s

func.func private @printMemrefI64(memref<*xi64>) attributes { llvm.emit_c_interface }

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %true = arith.constant true
  %big = arith.constant 9123456789012345678 : i64
  %neg = arith.constant -4242424242 : i64
  %f32 = arith.constant 3.25 : f32
  %f64 = arith.constant 2.718281828459045 : f64

  %t0, %vi1 = async.execute -> !async.value<i1> {
    async.yield %true : i1
  }
  %t1, %vi64 = async.execute -> !async.value<i64> {
    async.yield %big : i64
  }
  %t2, %vf32 = async.execute -> !async.value<f32> {
    async.yield %f32 : f32
  }
  %t3, %vf64 = async.execute -> !async.value<f64> {
    async.yield %f64 : f64
  }
  // One execute with two results: the i64 and f64 must not share storage.
  %t4, %va, %vb = async.execute -> (!async.value<i64>, !async.value<f64>) {
    %x = arith.constant 7.5 : f64
    async.yield %neg, %x : i64, f64
  }
  // A memref allocated and filled inside the task, returned as a value.
  %t5, %vm = async.execute -> !async.value<memref<4xi64>> {
    %m = memref.alloc() : memref<4xi64>
    scf.for %i = %c0 to %c4 step %c1 {
      %ii = arith.index_cast %i : index to i64
      %sq = arith.muli %ii, %ii : i64
      %k = arith.constant 100 : i64
      %v = arith.addi %sq, %k : i64
      memref.store %v, %m[%i] : memref<4xi64>
    }
    async.yield %m : memref<4xi64>
  }

  // Blocking awaits in main.
  %r0 = async.await %vi1 : !async.value<i1>
  %r1 = async.await %vi64 : !async.value<i64>
  %r2 = async.await %vf32 : !async.value<f32>
  %r3 = async.await %vf64 : !async.value<f64>
  %ra = async.await %va : !async.value<i64>
  %rb = async.await %vb : !async.value<f64>
  %rm = async.await %vm : !async.value<memref<4xi64>>
  // CHECK: i1: 1
  vector.print str "i1: "
  vector.print %r0 : i1
  // CHECK-NEXT: i64: 9123456789012345678
  vector.print str "i64: "
  vector.print %r1 : i64
  // CHECK-NEXT: f32: 3.25
  vector.print str "f32: "
  vector.print %r2 : f32
  // CHECK-NEXT: f64: 2.71828
  vector.print str "f64: "
  vector.print %r3 : f64
  // CHECK-NEXT: pair: -4242424242 7.5
  vector.print str "pair: "
  vector.print %ra : i64 punctuation <no_punctuation>
  vector.print str " "
  vector.print %rb : f64
  // CHECK-NEXT: Unranked Memref
  // CHECK-NEXT: [100, 101, 104, 109]
  %u = memref.cast %rm : memref<4xi64> to memref<*xi64>
  func.call @printMemrefI64(%u) : (memref<*xi64>) -> ()

  // Non-blocking awaits inside a task, combining all values into one.
  %t6, %sum = async.execute -> !async.value<f64> {
    %a0 = async.await %vi1 : !async.value<i1>
    %a1 = async.await %vi64 : !async.value<i64>
    %a2 = async.await %vf32 : !async.value<f32>
    %a3 = async.await %vf64 : !async.value<f64>
    %am = async.await %vm : !async.value<memref<4xi64>>
    %m3 = memref.load %am[%c1] : memref<4xi64>
    // (i1 ? 1 : 0) + (i64 mod 1000 = 678) + 3.25 + 2.718... + 101
    %b = arith.extui %a0 : i1 to i64
    %k = arith.constant 1000 : i64
    %r = arith.remsi %a1, %k : i64
    %s0 = arith.addi %b, %r : i64
    %s1 = arith.addi %s0, %m3 : i64
    %s1f = arith.sitofp %s1 : i64 to f64
    %a2d = arith.extf %a2 : f32 to f64
    %s2 = arith.addf %s1f, %a2d : f64
    %s3 = arith.addf %s2, %a3 : f64
    async.yield %s3 : f64
  }
  %total = async.await %sum : !async.value<f64>
  // 1 + 678 + 101 + 3.25 + 2.718281828 = 785.968281828
  // CHECK-NEXT: sum: 785.968
  vector.print str "sum: "
  vector.print %total : f64

  %e0 = async.runtime.is_error %vi64 : !async.value<i64>
  %e1 = async.runtime.is_error %sum : !async.value<f64>
  // CHECK-NEXT: errors: 0 0
  vector.print str "errors: "
  vector.print %e0 : i1 punctuation <no_punctuation>
  vector.print str " "
  vector.print %e1 : i1
  memref.dealloc %rm : memref<4xi64>
  return
}
