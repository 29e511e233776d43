; Crashes on its third run: the harness must name that run before dying.
@runs = global i32 0

define void @main() {
  %n = load i32, ptr @runs
  %n1 = add i32 %n, 1
  store i32 %n1, ptr @runs
  %third = icmp eq i32 %n1, 3
  br i1 %third, label %crash, label %done
crash:
  store volatile i32 1, ptr null
  br label %done
done:
  ret void
}
