// async.func / async.call (lowered by async-func-to-async-runtime): an async
// function runs as a coroutine that returns a token and/or values at once and
// completes them later. Checks results through a chain of async calls that
// await each other (non-blocking inside async.func, blocking in main),
// recursion through async.call, and error propagation: a cf.assert failing
// in an async.func puts its results in error, an async.func awaiting it is
// in error too, and a healthy call next to it is not.

// RUN: %mlir_opt %s %async_func_to_llvm | %run_async | FileCheck %s

async.func @square(%x: i64) -> !async.value<i64> {
  %y = arith.muli %x, %x : i64
  return %y : i64
}

// Token plus value: sum of squares of x and x+1, awaited without blocking.
async.func @sum_sq(%x: i64) -> (!async.token, !async.value<i64>) {
  %one = arith.constant 1 : i64
  %x1 = arith.addi %x, %one : i64
  %a = async.call @square(%x) : (i64) -> !async.value<i64>
  %b = async.call @square(%x1) : (i64) -> !async.value<i64>
  %ra = async.await %a : !async.value<i64>
  %rb = async.await %b : !async.value<i64>
  %s = arith.addi %ra, %rb : i64
  return %s : i64
}

// Recursive: fib(n) with async calls for both halves.
async.func @fib(%n: i64) -> !async.value<i64> {
  %two = arith.constant 2 : i64
  %one = arith.constant 1 : i64
  %small = arith.cmpi slt, %n, %two : i64
  cf.cond_br %small, ^leaf, ^rec
^leaf:
  return %n : i64
^rec:
  %n1 = arith.subi %n, %one : i64
  %n2 = arith.subi %n, %two : i64
  %a = async.call @fib(%n1) : (i64) -> !async.value<i64>
  %b = async.call @fib(%n2) : (i64) -> !async.value<i64>
  %ra = async.await %a : !async.value<i64>
  %rb = async.await %b : !async.value<i64>
  %s = arith.addi %ra, %rb : i64
  return %s : i64
}

// x / 4; fails when x is negative.
async.func @checked_quarter(%x: f64) -> !async.value<f64> {
  %zero = arith.constant 0.0 : f64
  %ok = arith.cmpf oge, %x, %zero : f64
  cf.assert %ok, "expected failure (negative input)"
  %q = arith.constant 0.25 : f64
  %r = arith.mulf %x, %q : f64
  return %r : f64
}

// Awaits a failing call: its own result must be in error.
async.func @plus_quarter(%x: f64) -> !async.value<f64> {
  %v = async.call @checked_quarter(%x) : (f64) -> !async.value<f64>
  %r = async.await %v : !async.value<f64>
  %one = arith.constant 1.0 : f64
  %s = arith.addf %r, %one : f64
  return %s : f64
}

async.func @stateful(%m: memref<i64>) -> !async.token {
  %k = arith.constant 77 : i64
  memref.store %k, %m[] : memref<i64>
  return
}

func.func @main() {
  %c3 = arith.constant 3 : i64
  %t, %v = async.call @sum_sq(%c3) : (i64) -> (!async.token, !async.value<i64>)
  async.await %t : !async.token
  %r = async.await %v : !async.value<i64>
  // CHECK: sum_sq(3) = 25
  vector.print str "sum_sq(3) = "
  vector.print %r : i64

  %c15 = arith.constant 15 : i64
  %f = async.call @fib(%c15) : (i64) -> !async.value<i64>
  %rf = async.await %f : !async.value<i64>
  // CHECK-NEXT: fib(15) = 610
  vector.print str "fib(15) = "
  vector.print %rf : i64

  %m = memref.alloc() : memref<i64>
  %ts = async.call @stateful(%m) : (memref<i64>) -> !async.token
  async.await %ts : !async.token
  %mv = memref.load %m[] : memref<i64>
  // CHECK-NEXT: stateful: 77
  vector.print str "stateful: "
  vector.print %mv : i64
  memref.dealloc %m : memref<i64>

  %good = arith.constant 16.0 : f64
  %bad = arith.constant -4.0 : f64
  %vg = async.call @plus_quarter(%good) : (f64) -> !async.value<f64>
  %vb = async.call @plus_quarter(%bad) : (f64) -> !async.value<f64>
  %vd = async.call @checked_quarter(%bad) : (f64) -> !async.value<f64>
  async.runtime.await %vg : !async.value<f64>
  async.runtime.await %vb : !async.value<f64>
  async.runtime.await %vd : !async.value<f64>
  %eg = async.runtime.is_error %vg : !async.value<f64>
  %eb = async.runtime.is_error %vb : !async.value<f64>
  %ed = async.runtime.is_error %vd : !async.value<f64>
  // CHECK-NEXT: errors: direct 1, through await 1, healthy 0
  vector.print str "errors: direct "
  vector.print %ed : i1 punctuation <no_punctuation>
  vector.print str ", through await "
  vector.print %eb : i1 punctuation <no_punctuation>
  vector.print str ", healthy "
  vector.print %eg : i1
  %rg = async.await %vg : !async.value<f64>
  // CHECK-NEXT: plus_quarter(16) = 5
  vector.print str "plus_quarter(16) = "
  vector.print %rg : f64
  return
}
