define void @main() {
  ret i32 oops
}
