// Two async tasks and a group: prints from the worker threads and then
// from main, through libmlir_c_runner_utils (C stdio).
func.func @main() {
  %c2 = arith.constant 2 : index
  %group = async.create_group %c2 : !async.group
  %t0 = async.execute {
    %c = arith.constant 40 : i64
    func.call @printI64(%c) : (i64) -> ()
    func.call @printNewline() : () -> ()
    async.yield
  }
  %t1 = async.execute [%t0] {
    %c = arith.constant 41 : i64
    func.call @printI64(%c) : (i64) -> ()
    func.call @printNewline() : () -> ()
    async.yield
  }
  %r0 = async.add_to_group %t0, %group : !async.token
  %r1 = async.add_to_group %t1, %group : !async.token
  async.await_all %group
  %c = arith.constant 42 : i64
  func.call @printI64(%c) : (i64) -> ()
  func.call @printNewline() : () -> ()
  return
}
func.func private @printI64(i64)
func.func private @printNewline()
