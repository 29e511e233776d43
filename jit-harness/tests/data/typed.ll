; An entry point of a type the harness cannot call.
define i64 @main(i32 %a) {
  ret i64 0
}
