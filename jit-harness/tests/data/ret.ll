; An `i32 ()` entry point: the harness appends the result as a line, as
; mlir-cpu-runner -entry-point-result=i32 prints it.
define i32 @main() {
  ret i32 7
}
