; Leaves a task blocked forever: it awaits a token that nobody emplaces,
; while main returns at once. Under the C++ runtime the run ends and the
; destroy hook then waits for the task forever; under ours the run itself
; waits for it. Either way the watchdog must report it.
declare ptr @mlirAsyncRuntimeCreateToken()
declare void @mlirAsyncRuntimeAwaitToken(ptr)
declare void @mlirAsyncRuntimeExecute(ptr, ptr)

@gate = global ptr null

define void @blocked(ptr %handle) {
  %t = load ptr, ptr @gate
  call void @mlirAsyncRuntimeAwaitToken(ptr %t)
  ret void
}

define void @main() {
  %t = call ptr @mlirAsyncRuntimeCreateToken()
  store ptr %t, ptr @gate
  call void @mlirAsyncRuntimeExecute(ptr null, ptr @blocked)
  ret void
}
