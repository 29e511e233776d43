; Calls a function that no library and not the process defines.
declare void @no_such_function_anywhere()

define void @main() {
  call void @no_such_function_anywhere()
  ret void
}
