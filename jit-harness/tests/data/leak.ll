; Creates a token (two references: the caller's and the emplacer's),
; emplaces it (drops the emplacer's) and never drops the caller's: one
; token leaks per run.
declare ptr @mlirAsyncRuntimeCreateToken()
declare void @mlirAsyncRuntimeEmplaceToken(ptr)
declare void @mlirAsyncRuntimeAwaitToken(ptr)

define void @main() {
  %t = call ptr @mlirAsyncRuntimeCreateToken()
  call void @mlirAsyncRuntimeEmplaceToken(ptr %t)
  call void @mlirAsyncRuntimeAwaitToken(ptr %t)
  ret void
}
