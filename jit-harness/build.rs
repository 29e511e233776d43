//! Builds the FileCheck shim (shim/filecheck_shim.cpp) against the headers
//! of LLVM 19 under LLVM_PREFIX and links it with libLLVM-19, which inkwell links already; and
//! exports the harness's `pthread_create` (src/main.rs) from the executable,
//! so that the libraries it loads create their threads through it (an
//! alternate signal stack on each: src/crash/threads.rs).

use std::path::PathBuf;
use std::process::Command;

/// Debian's LLVM 19, when neither LLVM_PREFIX nor LLVM_SYS_191_PREFIX is set.
const DEFAULT_LLVM_PREFIX: &str = "/usr/lib/llvm-19";

fn main() {
    // The project's toolchain knob first, then llvm-sys's own variable.
    let prefix = ["LLVM_PREFIX", "LLVM_SYS_191_PREFIX"]
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_LLVM_PREFIX));
    let llvm_config = prefix.join("bin/llvm-config");
    let out = Command::new(&llvm_config)
        .arg("--cxxflags")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e} (scripts/toolchain/setup.sh installs llvm-19-dev)", llvm_config.display()));
    assert!(out.status.success(), "{} --cxxflags failed", llvm_config.display());
    let flags = String::from_utf8(out.stdout).expect("llvm-config prints text");

    let mut build = cc::Build::new();
    build.cpp(true).file("shim/filecheck_shim.cpp").include("shim").warnings(true).extra_warnings(true);
    for flag in flags.split_whitespace() {
        // LLVM's headers as system headers: their warnings are not ours.
        match flag.strip_prefix("-I") {
            Some(dir) => build.flag("-isystem").flag(dir),
            None => build.flag(flag),
        };
    }
    build.compile("filecheck_shim");

    println!("cargo:rustc-link-search=native={}", prefix.join("lib").display());
    println!("cargo:rustc-link-lib=dylib=LLVM-19");
    println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol=pthread_create");
    println!("cargo:rerun-if-changed=shim/filecheck_shim.cpp");
    println!("cargo:rerun-if-changed=shim/filecheck_shim.h");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_191_PREFIX");
    println!("cargo:rerun-if-env-changed=LLVM_PREFIX");
    // The --mlir-bin default when LLVM_PREFIX is not set at run time (src/toolchain.rs).
    println!("cargo:rustc-env=JIT_HARNESS_LLVM_PREFIX={}", prefix.display());
}
