// REFERENCE-IGNORE: ^workers: 
// Prints the runtime's number of workers, which the sequential reference
// (one inline worker) cannot share with a multithreaded run, then a result
// that does not depend on it.
func.func @main() {
  %n = async.runtime.num_worker_threads : index
  vector.print str "workers: "
  vector.print %n : index
  %t = async.execute { async.yield }
  async.await %t : !async.token
  %c = arith.constant 42 : i64
  vector.print str "result: "
  vector.print %c : i64
  return
}
