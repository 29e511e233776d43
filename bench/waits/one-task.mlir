// one-task: the idle phase of a run. main is one async.execute with an
// empty body and one blocking async.await, nothing else, so a run through
// `jit-harness --repeat N` costs what the runtime takes to start the task,
// wake the waiter and go idle again before the next run (the harness waits
// for the runtime to be idle between runs).
//
// BENCH-WAIT: harness
//
// No output: the harness's summary line gives the per-run median.
func.func @main() {
  %t = async.execute {
    async.yield
  }
  async.await %t : !async.token
  return
}
