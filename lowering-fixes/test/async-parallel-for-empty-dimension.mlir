// RUN: mlir-opt %s -split-input-file -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=true num-workers=1 min-task-size=3})" | FileCheck %s

// A dimension whose upper bound is below its lower bound is empty, and so
// is the loop: every trip count is clamped at zero before the product that
// the zero-iterations test looks at (a negative trip count is not zero, and
// two negative ones multiply to a positive count).

// From 1 to 0: the trip count folds to 0 and the loop to nothing.

// CHECK-LABEL: func @empty_static
// CHECK:         %[[TRUE:.*]] = arith.constant true
// CHECK:         scf.if %[[TRUE]] {
// CHECK-NEXT:    } else {
func.func @empty_static(%V: memref<4xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i64
  scf.parallel (%i) = (%c1) to (%c0) step (%c1) {
    memref.store %one, %V[%i] : memref<4xi64>
    scf.reduce
  }
  return
}

// -----

// Dynamic bounds, unit steps (ceil_div(range, 1) folds to range).

// CHECK-LABEL: func @empty_dynamic
// CHECK-SAME:    (%{{.*}}: memref<?x?xi64>, %[[LB0:.*]]: index, %[[UB0:.*]]: index, %[[LB1:.*]]: index, %[[UB1:.*]]: index)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[R0:.*]] = arith.subi %[[UB0]], %[[LB0]] : index
// CHECK:         %[[T0:.*]] = arith.maxsi %[[R0]], %[[C0]] : index
// CHECK:         %[[R1:.*]] = arith.subi %[[UB1]], %[[LB1]] : index
// CHECK:         %[[T1:.*]] = arith.maxsi %[[R1]], %[[C0]] : index
// CHECK:         %[[T:.*]] = arith.muli %[[T0]], %[[T1]] : index
// CHECK:         %[[EMPTY:.*]] = arith.cmpi eq, %[[T]], %[[C0]] : index
// CHECK:         scf.if %[[EMPTY]] {
// CHECK-NEXT:    } else {
func.func @empty_dynamic(%V: memref<?x?xi64>, %lb0: index, %ub0: index, %lb1: index, %ub1: index) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i64
  scf.parallel (%i, %j) = (%lb0, %lb1) to (%ub0, %ub1) step (%c1, %c1) {
    memref.store %one, %V[%i, %j] : memref<?x?xi64>
    scf.reduce
  }
  return
}
