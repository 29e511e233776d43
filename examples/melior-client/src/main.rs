//! Runs the example program once from a blocking caller: prints `sum(n)`
//! and whether `failing()` reported its error.
//!
//! Usage: melior-client [N]   (default 1000000)

use std::process::ExitCode;

use melior_client::{context, lowered_module, Program};
use mlir_async_runtime::Runtime;

fn main() -> ExitCode {
    let n = match std::env::args().nth(1).as_deref() {
        None => 1_000_000,
        Some("-h" | "--help") => {
            println!("usage: melior-client [N]\nJIT-compiles an async MLIR program with melior and prints sum(0..N) computed in a runtime task");
            return ExitCode::SUCCESS;
        }
        Some(arg) => match arg.parse::<i64>() {
            Ok(n) if n >= 0 => n,
            _ => {
                eprintln!("melior-client: N must be a non-negative integer, got {arg:?}");
                return ExitCode::from(2);
            }
        },
    };
    let runtime = Runtime::start().guard();
    let context = context();
    let module = match lowered_module(&context) {
        Ok(module) => module,
        Err(e) => {
            eprintln!("melior-client: {e}");
            return ExitCode::FAILURE;
        }
    };
    let program = Program::new(&module);
    match program.sum(n).wait() {
        Ok(value) => println!("sum {}", value.read::<i64>()),
        Err(e) => println!("sum: {e}"),
    }
    println!("failing reported an error: {}", program.failing().wait().is_err());
    drop(program);
    match runtime.shutdown() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("melior-client: {e}");
            ExitCode::FAILURE
        }
    }
}
