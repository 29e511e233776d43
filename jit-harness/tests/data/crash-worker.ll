; A task that writes through a null pointer on a runtime worker thread: a
; crash that is not a stack overflow, and must not be called one.
declare void @mlirAsyncRuntimeExecute(ptr, ptr)
declare ptr @mlirAsyncRuntimeCreateToken()
declare void @mlirAsyncRuntimeAwaitToken(ptr)

define void @task(ptr %handle) {
  store volatile i32 1, ptr null
  ret void
}

define void @main() {
  %t = call ptr @mlirAsyncRuntimeCreateToken()
  call void @mlirAsyncRuntimeExecute(ptr null, ptr @task)
  call void @mlirAsyncRuntimeAwaitToken(ptr %t)
  ret void
}
