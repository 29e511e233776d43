// RUN: mlir-opt %s -split-input-file -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=true num-workers=1 min-task-size=3})" | FileCheck %s
// RUN: mlir-opt %s -split-input-file -pass-pipeline="builtin.module(async-parallel-for{async-dispatch=false num-workers=1 min-task-size=3})" | FileCheck %s --check-prefix=SEQ

// The block-aligned dispatch rounds the block size up to a multiple of the
// statically known inner iterations; the number of blocks must come from
// that aligned size. Blocks counted from the unaligned size start past the
// end of the iteration space and wrap around to its first rows.

// 2x2 with min-task-size=3: block size 3, aligned to 4, one block (not
// ceil(4 / 3) = 2).

// CHECK-LABEL: func @aligned_static
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         scf.if %{{.*}} {
// CHECK:           func.call @parallel_compute_fn_with_aligned_loops(%[[C0]], %[[C4]], %[[C2]], %[[C2]],
// CHECK-NOT:       async.create_group
// CHECK:         } else {

// SEQ-LABEL: func @aligned_static
// SEQ-DAG:     %[[C0:.*]] = arith.constant 0 : index
// SEQ-DAG:     %[[C1:.*]] = arith.constant 1 : index
// SEQ-DAG:     %[[C4:.*]] = arith.constant 4 : index
// SEQ:         scf.if %{{.*}} {
// SEQ:           %[[GROUP:.*]] = async.create_group %[[C0]] : !async.group
// SEQ:           scf.for %{{.*}} = %[[C1]] to %[[C1]] step %[[C1]] {
// SEQ:             func.call @parallel_compute_fn_with_aligned_loops(%{{.*}}, %[[C4]],
// SEQ:         } else {
func.func @aligned_static(%V: memref<2x2xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1 : i64
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c2) step (%c1, %c1) {
    %x = memref.load %V[%i, %j] : memref<2x2xi64>
    %y = arith.addi %x, %one : i64
    memref.store %y, %V[%i, %j] : memref<2x2xi64>
    scf.reduce
  }
  return
}

// -----

// A dynamic outer dimension: the block count of the aligned dispatch is
// ceil_div(tripCount, alignedBlockSize), computed at run time.

// CHECK-LABEL: func @aligned_dynamic
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK:         %[[TRIP:.*]] = arith.muli %{{.*}}, %[[C2]] : index
// CHECK:         %[[BS:.*]] = arith.minsi %[[TRIP]], %{{.*}} : index
// CHECK:         %[[USE_ALIGNED:.*]] = arith.cmpi sge, %[[BS]], %[[C2]] : index
// CHECK:         scf.if %[[USE_ALIGNED]] {
// CHECK:           %[[BLOCKS:.*]] = arith.ceildivsi %[[BS]], %[[C2]] : index
// CHECK:           %[[ALIGNED:.*]] = arith.muli %[[BLOCKS]], %[[C2]] : index
// CHECK:           %[[COUNT:.*]] = arith.ceildivsi %[[TRIP]], %[[ALIGNED]] : index
// CHECK:           func.call @async_dispatch_fn(%{{.*}}, %{{.*}}, %[[COUNT]], %[[ALIGNED]],

// SEQ-LABEL: func @aligned_dynamic
// SEQ-DAG:     %[[C1:.*]] = arith.constant 1 : index
// SEQ-DAG:     %[[C2:.*]] = arith.constant 2 : index
// SEQ:         %[[TRIP:.*]] = arith.muli %{{.*}}, %[[C2]] : index
// SEQ:         scf.if %{{.*}} {
// SEQ:           %[[ALIGNED:.*]] = arith.muli %{{.*}}, %[[C2]] : index
// SEQ:           %[[COUNT:.*]] = arith.ceildivsi %[[TRIP]], %[[ALIGNED]] : index
// SEQ:           scf.for %{{.*}} = %[[C1]] to %[[COUNT]] step %[[C1]] {
func.func @aligned_dynamic(%V: memref<?x2xi64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1 : i64
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c2) step (%c1, %c1) {
    %x = memref.load %V[%i, %j] : memref<?x2xi64>
    %y = arith.addi %x, %one : i64
    memref.store %y, %V[%i, %j] : memref<?x2xi64>
    scf.reduce
  }
  return
}
