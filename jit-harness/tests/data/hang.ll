; Awaits a token that nobody emplaces: the run never ends, and the
; watchdog must report it as hung.
declare ptr @mlirAsyncRuntimeCreateToken()
declare void @mlirAsyncRuntimeAwaitToken(ptr)

define void @main() {
  %t = call ptr @mlirAsyncRuntimeCreateToken()
  call void @mlirAsyncRuntimeAwaitToken(ptr %t)
  ret void
}
