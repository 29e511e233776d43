// mlirAsyncRuntimePrintCurrentThreadId prints "Current thread id: <id>" to C
// stdout. Its lines must stay in order with the prints of the runner utils
// (printMemrefF32 through std::cout, vector.print through printf) while
// stdout is a pipe (as under lit): a runtime writing through its own buffer
// would emit them out of order. Tasks are ordered by awaits, so the order of
// the lines is fixed. Main prints the same id before and after (the same
// thread always prints the same id). Modelled on upstream
// mlir/test/mlir-cpu-runner/async.mlir.
// The ids are the threads' own: the sequential reference runs every task on
// its one thread, under other ids.
// REFERENCE-IGNORE: ^Current thread id:

// RUN: %mlir_opt %s %async_to_llvm | %run_async | FileCheck %s

func.func private @mlirAsyncRuntimePrintCurrentThreadId() -> ()
func.func private @printMemrefF32(memref<*xf32>) attributes { llvm.emit_c_interface }

func.func @main() {
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %i2 = arith.constant 2 : index
  %i3 = arith.constant 3 : index
  %c0 = arith.constant 0.0 : f32
  %c1 = arith.constant 1.0 : f32
  %c2 = arith.constant 2.0 : f32
  %c3 = arith.constant 3.0 : f32
  %c4 = arith.constant 4.0 : f32

  %A = memref.alloc() : memref<4xf32>
  linalg.fill ins(%c0 : f32) outs(%A : memref<4xf32>)
  %U = memref.cast %A : memref<4xf32> to memref<*xf32>

  // CHECK: [0, 0, 0, 0]
  func.call @printMemrefF32(%U) : (memref<*xf32>) -> ()

  // CHECK-NEXT: Current thread id: [[MAIN:[0-9a-fx]+]]
  // CHECK-NEXT: main 1
  // CHECK-NEXT: Unranked Memref
  // CHECK-NEXT: [1, 0, 0, 0]
  memref.store %c1, %A[%i0] : memref<4xf32>
  func.call @mlirAsyncRuntimePrintCurrentThreadId() : () -> ()
  vector.print str "main 1\n"
  func.call @printMemrefF32(%U) : (memref<*xf32>) -> ()

  %outer = async.execute {
    // CHECK-NEXT: Current thread id: [[T0:[0-9a-fx]+]]
    // CHECK-NEXT: outer 1
    // CHECK-NEXT: Unranked Memref
    // CHECK-NEXT: [1, 2, 0, 0]
    memref.store %c2, %A[%i1] : memref<4xf32>
    func.call @mlirAsyncRuntimePrintCurrentThreadId() : () -> ()
    vector.print str "outer 1\n"
    func.call @printMemrefF32(%U) : (memref<*xf32>) -> ()

    %first = async.execute {
      // CHECK-NEXT: Current thread id: [[T1:[0-9a-fx]+]]
      // CHECK-NEXT: first
      func.call @mlirAsyncRuntimePrintCurrentThreadId() : () -> ()
      vector.print str "first\n"
      async.yield
    }

    %inner = async.execute [%first] {
      // CHECK-NEXT: Current thread id: [[T2:[0-9a-fx]+]]
      // CHECK-NEXT: inner
      // CHECK-NEXT: Unranked Memref
      // CHECK-NEXT: [1, 2, 3, 0]
      memref.store %c3, %A[%i2] : memref<4xf32>
      func.call @mlirAsyncRuntimePrintCurrentThreadId() : () -> ()
      vector.print str "inner\n"
      func.call @printMemrefF32(%U) : (memref<*xf32>) -> ()
      async.yield
    }
    async.await %inner : !async.token

    // CHECK-NEXT: Current thread id: [[T3:[0-9a-fx]+]]
    // CHECK-NEXT: outer 2
    // CHECK-NEXT: Unranked Memref
    // CHECK-NEXT: [1, 2, 3, 4]
    memref.store %c4, %A[%i3] : memref<4xf32>
    func.call @mlirAsyncRuntimePrintCurrentThreadId() : () -> ()
    vector.print str "outer 2\n"
    func.call @printMemrefF32(%U) : (memref<*xf32>) -> ()
    async.yield
  }
  async.await %outer : !async.token

  // CHECK-NEXT: Current thread id: [[MAIN]]
  // CHECK-NEXT: main 2
  func.call @mlirAsyncRuntimePrintCurrentThreadId() : () -> ()
  vector.print str "main 2\n"

  // Many lines from many tasks, one after the other: exactly 40 thread-id
  // lines, each followed by its task's number.
  %c40 = arith.constant 40 : index
  scf.for %i = %i0 to %c40 step %i1 {
    %t = async.execute {
      func.call @mlirAsyncRuntimePrintCurrentThreadId() : () -> ()
      %x = arith.index_cast %i : index to i64
      vector.print %x : i64
      async.yield
    }
    async.await %t : !async.token
  }
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^0$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^1$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^2$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^3$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^4$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^5$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^6$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^7$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^8$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^9$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^10$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^11$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^12$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^13$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^14$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^15$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^16$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^17$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^18$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^19$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^20$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^21$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^22$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^23$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^24$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^25$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^26$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^27$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^28$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^29$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^30$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^31$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^32$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^33$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^34$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^35$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^36$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^37$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^38$}}
  // CHECK-NEXT: Current thread id: {{[0-9a-fx]+$}}
  // CHECK-NEXT: {{^39$}}
  // CHECK-NEXT: end
  vector.print str "end\n"
  memref.dealloc %A : memref<4xf32>
  return
}
