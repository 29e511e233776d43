//! Where the LLVM/MLIR toolchain is: the project's one knob, `LLVM_PREFIX`,
//! read at run time, else the prefix this harness was built against
//! (build.rs: `LLVM_PREFIX`, then `LLVM_SYS_191_PREFIX`, then Debian's
//! LLVM 19). The `--mlir-bin` default, the tests and the benches use it.

use std::path::PathBuf;

/// The prefix jit-harness/build.rs linked against.
pub const BUILD_LLVM_PREFIX: &str = env!("JIT_HARNESS_LLVM_PREFIX");

/// `$LLVM_PREFIX` when set and not empty, else [`BUILD_LLVM_PREFIX`].
pub fn llvm_prefix() -> PathBuf {
    match std::env::var_os("LLVM_PREFIX") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(BUILD_LLVM_PREFIX),
    }
}
