// A task blocks on a token nobody completes, and main awaits the task:
// every thread is blocked. The ordinary runtime hangs; a deterministic
// schedule reports the deadlock.
func.func @block_on(%t: !async.token) {
  async.await %t : !async.token
  return
}
func.func @main() {
  %never = async.runtime.create : !async.token
  %a = async.execute {
    func.call @block_on(%never) : (!async.token) -> ()
    async.yield
  }
  async.await %a : !async.token
  vector.print str "unreachable\n"
  return
}
