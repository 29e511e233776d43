//! Stage 4, JIT: parse LLVM IR with inkwell inside an ORC thread-safe
//! context, run the new-pass-manager pipeline (which lowers the coroutines
//! MLIR's async lowering emits), refuse IR that still has coroutine
//! intrinsics, and compile it with a real ORC LLJIT through the LLVM-C API
//! (`inkwell::llvm_sys::orc2`), as mlir-cpu-runner does.

use crate::error::{Error, Result};
use inkwell::context::ContextRef;
use inkwell::llvm_sys::error::{LLVMDisposeErrorMessage, LLVMErrorRef, LLVMGetErrorMessage};
use inkwell::llvm_sys::orc2::lljit::*;
use inkwell::llvm_sys::orc2::*;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetMachine};
use inkwell::types::{AnyTypeEnum, BasicTypeEnum};
use inkwell::values::BasicValue;
use inkwell::OptimizationLevel;
use std::ffi::{c_void, CStr, CString};
use std::sync::Mutex;

/// The entry point's signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    Void,
    I32,
}

/// A program parsed, verified and optimized, not yet compiled: what the
/// harness needs from it before it is (its entry point's kind, the names
/// the libraries must resolve). Owns its module and ORC context until
/// [`Jit::compile`] takes them; dropped before, it frees both.
pub struct Parsed {
    tsc: LLVMOrcThreadSafeContextRef,
    module: Option<Module<'static>>,
    level: u8,
    pub entry_kind: EntryKind,
    /// Functions and globals the module declares but does not define
    /// (name, is a function).
    pub externals: Vec<(String, bool)>,
}

pub struct Jit {
    jit: LLVMOrcLLJITRef,
}

// The LLJIT is only used from the thread that made it; the watchdog never
// touches it. It must outlive every call into its code.
unsafe impl Send for Jit {}

/// Errors that ORC reports through the session instead of a return value.
static SESSION_ERRORS: Mutex<Vec<String>> = Mutex::new(Vec::new());

extern "C" fn report_session_error(_ctx: *mut c_void, err: LLVMErrorRef) {
    let msg = error_message(err);
    if let Ok(mut v) = SESSION_ERRORS.lock() {
        v.push(msg);
    }
}

fn error_message(err: LLVMErrorRef) -> String {
    // SAFETY: consumes `err`, copies and frees its message.
    unsafe {
        let m = LLVMGetErrorMessage(err);
        let s = CStr::from_ptr(m).to_string_lossy().into_owned();
        LLVMDisposeErrorMessage(m);
        s
    }
}

fn check(err: LLVMErrorRef, what: &str) -> Result<()> {
    if err.is_null() {
        Ok(())
    } else {
        Err(Error::usage(format!("{what}: {}", error_message(err))))
    }
}

fn opt_level(level: u8) -> OptimizationLevel {
    match level {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    }
}

fn host_machine(level: u8) -> Result<TargetMachine> {
    Target::initialize_native(&InitializationConfig::default())
        .map_err(|e| Error::usage(format!("cannot initialize the native target: {e}")))?;
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).map_err(|e| Error::usage(format!("no target for this host: {e}")))?;
    let cpu = TargetMachine::get_host_cpu_name();
    let features = TargetMachine::get_host_cpu_features();
    target
        .create_target_machine(
            &triple,
            cpu.to_str().unwrap_or(""),
            features.to_str().unwrap_or(""),
            opt_level(level),
            RelocMode::Default,
            CodeModel::JITDefault,
        )
        .ok_or_else(|| Error::usage("cannot create a target machine for this host"))
}

/// LLVM's parse error is `<name>:LINE:COL: error: MSG` then the source
/// line and a caret; keep it on one line, with the source line quoted.
fn parse_error(name: &str, msg: &str) -> String {
    let mut lines = msg.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("malformed LLVM IR").to_string();
    let first = if first.contains(name) { first } else { format!("{name}: {first}") };
    match lines.next() {
        Some(src) if !src.trim().starts_with('^') => format!("{first} (in `{}`)", src.trim()),
        _ => first,
    }
}

fn check_entry(module: &Module<'_>, entry: &str) -> Result<EntryKind> {
    let f = module
        .get_function(entry)
        .ok_or_else(|| Error::usage(format!("entry point `{entry}` not found in the program (choose one with --entry)")))?;
    if f.count_basic_blocks() == 0 {
        return Err(Error::usage(format!("entry point `{entry}` is only declared, not defined, in the program")));
    }
    let ty = f.get_type();
    let ret = ty.get_return_type();
    let kind = match ret {
        None => Some(EntryKind::Void),
        Some(BasicTypeEnum::IntType(t)) if t.get_bit_width() == 32 => Some(EntryKind::I32),
        _ => None,
    };
    match kind {
        Some(k) if ty.count_param_types() == 0 && !ty.is_var_arg() => Ok(k),
        _ => Err(Error::usage(format!(
            "entry point `{entry}` has type `{}`; expected `void ()` or `i32 ()`",
            AnyTypeEnum::FunctionType(ty).to_string().trim_matches('"')
        ))),
    }
}

/// Coroutine intrinsics left in the IR make LLVM's code generator abort the
/// whole process, so they are refused here.
fn check_no_coroutines(module: &Module<'_>) -> Result<()> {
    let mut f = module.get_first_function();
    while let Some(func) = f {
        let name = func.get_name().to_string_lossy().into_owned();
        if name.starts_with("llvm.coro.") && func.as_global_value().as_pointer_value().get_first_use().is_some() {
            return Err(Error::usage(format!(
                "the program still calls the coroutine intrinsic {name} after the LLVM pass pipeline; \
                 code generation would abort (lower coroutines: use -O0..-O3 or add coro-early,cgscc(coro-split),coro-cleanup to --llvm-passes)"
            )));
        }
        f = func.get_next_function();
    }
    Ok(())
}

fn externals(module: &Module<'_>) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut f = module.get_first_function();
    while let Some(func) = f {
        let name = func.get_name().to_string_lossy().into_owned();
        if func.count_basic_blocks() == 0 && !name.starts_with("llvm.") && func.get_intrinsic_id() == 0 {
            out.push((name, true));
        }
        f = func.get_next_function();
    }
    let mut g = module.get_first_global();
    while let Some(glob) = g {
        if glob.is_declaration() && matches!(glob.get_linkage(), Linkage::External | Linkage::ExternalWeak) {
            let name = glob.get_name().to_string_lossy().into_owned();
            if !name.starts_with("llvm.") {
                out.push((name, false));
            }
        }
        g = glob.get_next_global();
    }
    out
}

impl Parsed {
    /// Parses `ir` (named `name` in messages), verifies it, checks the
    /// entry point, runs the LLVM pass pipeline (`passes`, or
    /// `default<O{level}>`) and refuses coroutine intrinsics left over.
    pub fn new(ir: &[u8], name: &str, level: u8, passes: Option<&str>, entry: &str) -> Result<Parsed> {
        let tm = host_machine(level)?;
        // SAFETY: a new context, owned by the Parsed from here on (its Drop
        // disposes of it, after the module).
        let tsc = unsafe { LLVMOrcCreateNewThreadSafeContext() };
        let mut parsed = Parsed { tsc, module: None, level, entry_kind: EntryKind::Void, externals: Vec::new() };
        // SAFETY: the context lives as long as `parsed`, which owns the module.
        let ctx = unsafe { ContextRef::new(LLVMOrcThreadSafeContextGetContext(tsc)) };
        let buf = MemoryBuffer::create_from_memory_range_copy(ir, name);
        let module = ctx.create_module_from_ir(buf).map_err(|e| Error::usage(parse_error(name, &e.to_string())))?;
        module
            .verify()
            .map_err(|e| Error::usage(format!("{name}: invalid LLVM IR: {}", e.to_string().trim())))?;
        parsed.entry_kind = check_entry(&module, entry)?;
        module.set_triple(&tm.get_triple());
        module.set_data_layout(&tm.get_target_data().get_data_layout());
        let pipeline = passes.map(str::to_string).unwrap_or_else(|| format!("default<O{level}>"));
        module
            .run_passes(&pipeline, &tm, PassBuilderOptions::create())
            .map_err(|e| Error::usage(format!("LLVM pass pipeline `{pipeline}`: {}", e.to_string().trim())))?;
        check_no_coroutines(&module)?;
        parsed.externals = externals(&module);
        parsed.module = Some(module);
        Ok(parsed)
    }
}

impl Drop for Parsed {
    fn drop(&mut self) {
        // The module first: it holds a reference to the context.
        drop(self.module.take());
        if !self.tsc.is_null() {
            // SAFETY: created in `new`, disposed of once (compile nulls it).
            unsafe { LLVMOrcDisposeThreadSafeContext(self.tsc) };
        }
    }
}

impl Jit {
    /// Compiles a parsed program with a new ORC LLJIT (code generation at
    /// the level of its IR pipeline), its external names defined as
    /// `symbols` (name, address, is a function; resolved by the caller) and
    /// the rest looked up in the process; returns the JIT and the address
    /// of `entry`.
    pub fn compile(mut parsed: Parsed, symbols: &[(String, usize, bool)], entry: &str) -> Result<(Jit, usize)> {
        let this = Jit::create(parsed.level)?;
        // SAFETY: `this.jit` is a live LLJIT.
        let jd = unsafe { LLVMOrcLLJITGetMainJITDylib(this.jit) };
        this.define(jd, symbols)?;
        this.search_process(jd)?;
        let module = parsed.module.take().expect("a Parsed holds its module until compiled");
        // SAFETY: the ThreadSafeModule takes the module (forgotten here) and
        // its own reference to the context, whose creation reference is
        // then released once (the Parsed's Drop sees it null).
        let tsm = unsafe {
            let raw = module.as_mut_ptr();
            std::mem::forget(module);
            let tsm = LLVMOrcCreateNewThreadSafeModule(raw, parsed.tsc);
            LLVMOrcDisposeThreadSafeContext(parsed.tsc);
            parsed.tsc = std::ptr::null_mut();
            tsm
        };
        // SAFETY: takes ownership of the module.
        check(unsafe { LLVMOrcLLJITAddLLVMIRModule(this.jit, jd, tsm) }, "cannot add the program to the JIT")?;
        let addr = this.lookup(entry)?;
        Ok((this, addr))
    }

    /// A new LLJIT generating code for this host at `level`.
    fn create(level: u8) -> Result<Jit> {
        let tm = host_machine(level)?;
        // SAFETY: the builder takes ownership of the target machine builder,
        // which takes the target machine (forgotten here); LLVMOrcCreateLLJIT
        // takes the builder.
        unsafe {
            let jtmb = LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm.as_mut_ptr());
            std::mem::forget(tm);
            let builder = LLVMOrcCreateLLJITBuilder();
            LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
            let mut jit = std::ptr::null_mut();
            check(LLVMOrcCreateLLJIT(&mut jit, builder), "cannot create the ORC LLJIT")?;
            LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(jit), report_session_error, std::ptr::null_mut());
            Ok(Jit { jit })
        }
    }

    /// Defines the program's external names at the addresses given.
    fn define(&self, jd: LLVMOrcJITDylibRef, symbols: &[(String, usize, bool)]) -> Result<()> {
        if symbols.is_empty() {
            return Ok(());
        }
        let mut pairs: Vec<LLVMOrcCSymbolMapPair> = symbols
            .iter()
            .map(|(n, addr, is_fn)| {
                let c = CString::new(n.as_str()).unwrap_or_default();
                let flags = LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsExported as u8
                    | if *is_fn { LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsCallable as u8 } else { 0 };
                LLVMOrcCSymbolMapPair {
                    // SAFETY: interns the name; its ownership passes to the MU.
                    Name: unsafe { LLVMOrcLLJITMangleAndIntern(self.jit, c.as_ptr()) },
                    Sym: LLVMJITEvaluatedSymbol {
                        Address: *addr as u64,
                        Flags: LLVMJITSymbolFlags { GenericFlags: flags, TargetFlags: 0 },
                    },
                }
            })
            .collect();
        // SAFETY: the MU copies the pairs; the dylib takes the MU.
        unsafe {
            let mu = LLVMOrcAbsoluteSymbols(pairs.as_mut_ptr(), pairs.len());
            check(LLVMOrcJITDylibDefine(jd, mu), "cannot define the resolved symbols")
        }
    }

    /// Names code generation introduces (memset, __udivti3, ...) come from
    /// the process.
    fn search_process(&self, jd: LLVMOrcJITDylibRef) -> Result<()> {
        // SAFETY: the dylib takes the generator.
        unsafe {
            let mut gen = std::ptr::null_mut();
            let prefix = LLVMOrcLLJITGetGlobalPrefix(self.jit);
            check(
                LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&mut gen, prefix, None, std::ptr::null_mut()),
                "cannot search the process for symbols",
            )?;
            LLVMOrcJITDylibAddGenerator(jd, gen);
        }
        Ok(())
    }

    /// Compiles the program (lazily, at the first lookup) and returns the
    /// address of `entry`, or the compiler's errors.
    fn lookup(&self, entry: &str) -> Result<usize> {
        let mut addr: LLVMOrcExecutorAddress = 0;
        let cname = CString::new(entry).map_err(|_| Error::usage("--entry contains a NUL byte"))?;
        // SAFETY: a live LLJIT and a NUL-terminated name.
        let err = unsafe { LLVMOrcLLJITLookup(self.jit, &mut addr, cname.as_ptr()) };
        if !err.is_null() {
            let msg = error_message(err);
            let session = SESSION_ERRORS.lock().map(|v| v.join("; ")).unwrap_or_default();
            let detail = if session.is_empty() || session == msg { msg } else { format!("{msg} ({session})") };
            return Err(Error::usage(format!("cannot compile the program: {detail}")));
        }
        Ok(addr as usize)
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        // SAFETY: frees the JIT'd code; the caller has run the destroy hooks
        // first, so no runtime task still points into it.
        unsafe {
            let err = LLVMOrcDisposeLLJIT(self.jit);
            if !err.is_null() {
                let _ = error_message(err);
            }
        }
    }
}
