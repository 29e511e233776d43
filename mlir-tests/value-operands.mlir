// Async values passed as async.execute operands:
//   async.execute [%deps] (%v as %x : !async.value<T>) -> ...
// The body must see the unwrapped payload, and must not start before every
// operand value is available. A pipeline of stages each consumes the previous
// stage's value; the producer of the first value spins, so a consumer that
// ran early would read an unset storage.
// Covers: AwaitValueAndExecute (operands), GetValueStorage, mixed token
// dependencies + value operands, a value consumed by several tasks (AddRef).

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

func.func @main() {
  %c0 = arith.constant 0 : index
  %long = arith.constant 300000 : index

  %t0, %v0 = async.execute -> !async.value<i64> {
    func.call @spin(%long) : (index) -> ()
    %x = arith.constant 6 : i64
    async.yield %x : i64
  }
  // Stage 1: x * 7
  %t1, %v1 = async.execute (%v0 as %x: !async.value<i64>) -> !async.value<i64> {
    %k = arith.constant 7 : i64
    %y = arith.muli %x, %k : i64
    async.yield %y : i64
  }
  // Stage 2: consumes v0 again (shared operand) and v1, produces f32.
  // (Operand order v0, v1 on purpose: awaiting v1 first and then v0
  // deadlocks the C++ runtime at random; reentrant-await.mlir tests that.)
  %t2, %v2 = async.execute (%v0 as %x: !async.value<i64>,
                            %v1 as %y: !async.value<i64>) -> !async.value<f32> {
    %s = arith.addi %y, %x : i64
    %f = arith.sitofp %s : i64 to f32
    %h = arith.constant 0.5 : f32
    %r = arith.addf %f, %h : f32
    async.yield %r : f32
  }
  // A side task with its own memref result, ordered by a token dependency.
  %side = memref.alloc() : memref<1xf64>
  %ts = async.execute [%t1] {
    %k = arith.constant 100.0 : f64
    memref.store %k, %side[%c0] : memref<1xf64>
    async.yield
  }
  // Stage 3: a token dependency plus an f32 and an i1 operand.
  %tb, %vb = async.execute -> !async.value<i1> {
    %b = arith.constant true
    async.yield %b : i1
  }
  %t3, %v3 = async.execute [%ts] (%v2 as %f: !async.value<f32>,
                                  %vb as %b: !async.value<i1>) -> !async.value<f64> {
    %s = memref.load %side[%c0] : memref<1xf64>
    %fd = arith.extf %f : f32 to f64
    %sum = arith.addf %s, %fd : f64
    %neg = arith.negf %sum : f64
    %r = arith.select %b, %sum, %neg : f64
    async.yield %r : f64
  }
  // A memref value passed as an operand and written through by the consumer.
  %tm, %vm = async.execute -> !async.value<memref<2xi64>> {
    %m = memref.alloc() : memref<2xi64>
    %a = arith.constant 11 : i64
    %c1 = arith.constant 1 : index
    memref.store %a, %m[%c0] : memref<2xi64>
    memref.store %a, %m[%c1] : memref<2xi64>
    async.yield %m : memref<2xi64>
  }
  %tw = async.execute (%vm as %m: !async.value<memref<2xi64>>,
                       %v1 as %y: !async.value<i64>) {
    %c1 = arith.constant 1 : index
    memref.store %y, %m[%c1] : memref<2xi64>
    async.yield
  }

  %r3 = async.await %v3 : !async.value<f64>
  // (6*7 + 6) + 0.5 + 100 = 148.5
  // CHECK: stage3: 148.5
  vector.print str "stage3: "
  vector.print %r3 : f64
  async.await %tw : !async.token
  %m = async.await %vm : !async.value<memref<2xi64>>
  %c1 = arith.constant 1 : index
  %m0 = memref.load %m[%c0] : memref<2xi64>
  %m1 = memref.load %m[%c1] : memref<2xi64>
  // CHECK-NEXT: memref: 11 42
  vector.print str "memref: "
  vector.print %m0 : i64 punctuation <no_punctuation>
  vector.print str " "
  vector.print %m1 : i64
  memref.dealloc %m : memref<2xi64>
  memref.dealloc %side : memref<1xf64>
  return
}
