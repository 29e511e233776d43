; The entry point itself recurses without end, on the harness's main thread,
; on its second run.
@runs = global i32 0

define void @recurse(ptr %p) {
  %buf = alloca [256 x i8]
  store volatile i8 1, ptr %buf
  call void @recurse(ptr %buf)
  ret void
}

define void @main() {
  %n = load i32, ptr @runs
  %n1 = add i32 %n, 1
  store i32 %n1, ptr @runs
  %second = icmp eq i32 %n1, 2
  br i1 %second, label %overflow, label %done
overflow:
  call void @recurse(ptr null)
  br label %done
done:
  ret void
}
