//! An MLIR program with `async.execute`, built and JIT-compiled in-process
//! with melior, its tasks run by `mlir_async_runtime` linked into this
//! binary, and its tokens and values awaited from Rust.
//!
//! The steps a melior user takes:
//! 1. parse (or build) the module in a context with every dialect;
//! 2. lower it to the LLVM dialect with the project's pipeline
//!    ([`lowering_pipeline`], from `mlir-tests/lib/pipelines.txt`);
//! 3. create an `ExecutionEngine` with no shared library and register the
//!    runtime's functions in it ([`mlir_async_runtime::symbols`]);
//! 4. call the compiled functions with `invoke_packed`, and wrap what they
//!    return in [`AsyncValue`] / [`AsyncToken`] to `.await` or `wait`.

use std::ffi::c_void;

use melior::dialect::DialectRegistry;
use melior::ir::Module;
use melior::pass::PassManager;
use melior::utility::{parse_pass_pipeline, register_all_dialects, register_all_llvm_translations, register_all_passes};
use melior::{Context, ExecutionEngine};
use mlir_async_runtime::{symbols, AsyncToken, AsyncValue, Runtime};

/// The program: `sum(n)` adds `0 + 1 + ... + n-1` in a task and returns
/// the result as `!async.value<i64>`; `failing()` returns the token of a
/// task whose `cf.assert` fails, which puts the token in the error state.
/// `llvm.emit_c_interface` makes the `_mlir_ciface_` wrappers that
/// melior's `invoke_packed` (MLIR's C API) calls.
pub const PROGRAM: &str = r#"
module {
  func.func @sum(%n: i64) -> !async.value<i64> attributes { llvm.emit_c_interface } {
    %token, %value = async.execute -> !async.value<i64> {
      %c0 = arith.constant 0 : i64
      %c1 = arith.constant 1 : i64
      %total = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (i64) : i64 {
        %next = arith.addi %acc, %i : i64
        scf.yield %next : i64
      }
      async.yield %total : i64
    }
    return %value : !async.value<i64>
  }

  func.func @failing() -> !async.token attributes { llvm.emit_c_interface } {
    %token = async.execute {
      %false = arith.constant false
      cf.assert %false, "this task reports an error"
      async.yield
    }
    return %token : !async.token
  }
}
"#;

/// MLIR 19's whole async lowering,
/// `builtin.module(async-func, to-runtime, ref-counting, to-llvm)` of
/// `mlir-tests/lib/pipelines.txt` (the project's one definition, read by the
/// mlir-pipelines crate): what `python3 mlir-tests/lib/pipelines.py` prints.
/// melior 0.22 is MLIR 19 (mlir-sys 0.4), so that is the version.
pub fn lowering_pipeline() -> String {
    let table = mlir_pipelines::Table::embedded().expect("pipelines.txt parses (its own tests say so)");
    table.version(MLIR_VERSION).expect("pipelines.txt has MLIR 19").default_pipeline()
}

/// The MLIR version melior 0.22 binds.
const MLIR_VERSION: u32 = 19;

/// A context that knows every dialect, pass and LLVM translation.
pub fn context() -> Context {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    register_all_passes();
    let context = Context::new();
    context.append_dialect_registry(&registry);
    context.load_all_available_dialects();
    register_all_llvm_translations(&context);
    context
}

/// Parses [`PROGRAM`] and lowers it to the LLVM dialect.
pub fn lowered_module(context: &Context) -> Result<Module<'_>, String> {
    let mut module = Module::parse(context, PROGRAM).ok_or("the program does not parse")?;
    let passes = PassManager::new(context);
    parse_pass_pipeline(passes.as_operation_pass_manager(), &lowering_pipeline())
        .map_err(|e| format!("bad pipeline: {e}"))?;
    passes.run(&mut module).map_err(|e| format!("lowering failed: {e}"))?;
    Ok(module)
}

/// The compiled program in one execution engine, bound to this binary's
/// runtime.
pub struct Program {
    engine: ExecutionEngine,
}

impl Program {
    /// JIT-compiles `module` (lowered) and registers the runtime's
    /// functions in the engine: no `.so` path, no dependence on which
    /// other runtime the process has loaded.
    pub fn new(module: &Module) -> Program {
        let engine = ExecutionEngine::new(module, 2, &[], false);
        for (name, address) in symbols() {
            // SAFETY: each address is the runtime's function of that name,
            // with the signature compiled code expects; it lives as long
            // as the process (linked into this binary).
            unsafe { engine.register_symbol(name, address) };
        }
        Program { engine }
    }

    /// Calls `sum(n)`: the task runs on the runtime's pool; the caller
    /// gets the value with one reference.
    pub fn sum(&self, n: i64) -> AsyncValue {
        let mut n = n;
        let mut result: *mut c_void = std::ptr::null_mut();
        // SAFETY: `invoke_packed` takes a pointer to each argument and one
        // to the result slot, typed as the function's signature after
        // lowering: (i64) -> !llvm.ptr.
        unsafe {
            self.engine
                .invoke_packed("sum", &mut [&mut n as *mut i64 as *mut (), &mut result as *mut *mut c_void as *mut ()])
                .expect("sum is compiled");
            // The function returns a value with one reference for us.
            AsyncValue::from_raw(result)
        }
    }

    /// Calls `failing()`: a token that completes in the error state.
    pub fn failing(&self) -> AsyncToken {
        let mut result: *mut c_void = std::ptr::null_mut();
        // SAFETY: as `sum`: () -> !llvm.ptr.
        unsafe {
            self.engine
                .invoke_packed("failing", &mut [&mut result as *mut *mut c_void as *mut ()])
                .expect("failing is compiled");
            AsyncToken::from_raw(result)
        }
    }
}

impl Drop for Program {
    /// The engine frees its compiled code when it drops: first wait until
    /// no task runs. A task whose value the caller has awaited may still
    /// run the end of its coroutine in that code (what follows its
    /// emplace: its last `DropRef`s, its return); freed under it, the
    /// worker jumps into unmapped memory (SIGSEGV in about one run of
    /// fifteen of this crate's tests under load, on every runtime build
    /// since the tests were written). MLIR's runners call the runtime's
    /// destroy hook before they free an engine for the same reason.
    fn drop(&mut self) {
        if Runtime::is_running() {
            Runtime::start().wait_idle(None);
        }
    }
}

/// `0 + 1 + ... + n-1`, what `sum(n)` computes.
pub fn expected_sum(n: i64) -> i64 {
    n * (n - 1) / 2
}
