; A task that recurses without end on a runtime worker thread (a thread the
; runtime library creates): the harness must still name the run and say
; "stack overflow" before the process dies.
declare void @mlirAsyncRuntimeExecute(ptr, ptr)
declare ptr @mlirAsyncRuntimeCreateToken()
declare void @mlirAsyncRuntimeAwaitToken(ptr)

define void @recurse(ptr %p) {
  %buf = alloca [256 x i8]
  store volatile i8 1, ptr %buf
  call void @recurse(ptr %buf)
  ret void
}

define void @task(ptr %handle) {
  call void @recurse(ptr null)
  ret void
}

define void @main() {
  %t = call ptr @mlirAsyncRuntimeCreateToken()
  call void @mlirAsyncRuntimeExecute(ptr null, ptr @task)
  call void @mlirAsyncRuntimeAwaitToken(ptr %t)
  ret void
}
