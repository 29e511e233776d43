//! Builds `csrc/tls.c` (the initial-exec thread-local slots, see
//! `src/sync/tls.rs`), and sets the link settings of the shared library.
//!
//! - `-z nodelete`: a `dlclose` (for example dropping a `libloading::Library`)
//!   must never unmap code that a worker thread of the pool may still be
//!   executing. The C++ runtime is NODELETE too.
//! - `-z pack-relative-relocs`: relative relocations as a compact DT_RELR
//!   table (21 KiB -> 2 KiB), which the loader touches at every load. It
//!   makes the library need glibc 2.36 (the version `GLIBC_ABI_DT_RELR`);
//!   `MLIR_ASYNC_RS_PACK_RELOCS=0` leaves it out, and the Python wheel
//!   (python/setup.py) does, so that it loads on glibc 2.34 and later
//!   (manylinux_2_34: RHEL 9, Ubuntu 22.04).
//! - `-Bsymbolic-functions`: references inside the library to its own
//!   exported functions bind to them at link time. Without it, the
//!   addresses the init hooks put into an engine's symbol map went through
//!   the GOT and, with the C++ runtime loaded first, resolved to the C++
//!   runtime's functions of the same names (ELF interposition), so the
//!   engine bound the other runtime after all (`docs/symbol-binding.md`).
//! - lld with `link/hot-symbols.txt` as symbol ordering: the functions that
//!   programs actually run are placed together, so far fewer code pages of
//!   the library become resident (see scripts/bench/hot_symbols.sh). Without
//!   lld-19 (scripts/toolchain/setup.sh installs it) the library links with the
//!   default linker and a warning.
//!
//! The LLVM install is `LLVM_PREFIX` (the Makefile's knob; Debian's
//! location when unset): `-B` names its `bin/`, and the tests get it as
//! `MLIR_ASYNC_LLVM_PREFIX`, their default for the C++ runtime's path.
//! Since Rust 1.90, rustc on x86_64 Linux links with its own rust-lld and
//! puts its `-B` before ours, so the `ld.lld` that runs is rust-lld
//! (seen with `strace -f -e trace=execve`); it is an lld too, so the
//! symbol ordering applies. Older toolchains run the prefix's lld-19.

use std::path::{Path, PathBuf};

/// Where Debian's llvm-19 packages install; `LLVM_PREFIX` overrides it.
const DEFAULT_LLVM_PREFIX: &str = "/usr/lib/llvm-19";

fn link_arg(arg: &str) {
    println!("cargo:rustc-cdylib-link-arg={arg}");
}

fn main() {
    println!("cargo:rerun-if-changed=csrc/tls.c");
    cc::Build::new().file("csrc/tls.c").flag("-fPIC").opt_level(2).compile("mlir_async_runtime_tls");

    let order = Path::new(env!("CARGO_MANIFEST_DIR")).join("link/hot-symbols.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LLVM_PREFIX");
    let prefix = std::env::var_os("LLVM_PREFIX")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_LLVM_PREFIX), PathBuf::from);
    println!("cargo:rustc-env=MLIR_ASYNC_LLVM_PREFIX={}", prefix.display());
    let lld_dir = prefix.join("bin");

    link_arg("-Wl,-z,nodelete");
    println!("cargo:rerun-if-env-changed=MLIR_ASYNC_RS_PACK_RELOCS");
    if std::env::var("MLIR_ASYNC_RS_PACK_RELOCS").as_deref() != Ok("0") {
        link_arg("-Wl,-z,pack-relative-relocs");
    }
    link_arg("-Wl,-Bsymbolic-functions");
    if lld_dir.join("ld.lld").exists() {
        link_arg("-fuse-ld=lld");
        link_arg(&format!("-B{}", lld_dir.display()));
        link_arg(&format!("-Wl,--symbol-ordering-file={}", order.display()));
        // A symbol of the list that this build lacks is not an error; the
        // `link_order` test reports a list gone stale.
        link_arg("-Wl,--no-warn-symbol-ordering");
    } else {
        println!(
            "cargo:warning=ld.lld not found in {}: linking without hot-code ordering \
             (run scripts/toolchain/setup.sh to install lld-19)",
            lld_dir.display()
        );
    }
}
