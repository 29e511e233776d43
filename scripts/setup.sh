#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test this project:
# LLVM/MLIR 19 (llvm-19-dev, llvm-19-tools for FileCheck, mlir-19-tools,
# libmlir-19 with the C++ runtime, libmlir-19-dev for its header, lld-19 to
# link the runtime with its hot code packed together), g++ (jit-harness
# compiles a C++ shim over LLVM's FileCheck library), valgrind (make
# bench-instr counts instructions with callgrind), gcc (builds the floor
# runtime of bench/floor and links bench-instr's programs), `lit`, and
# `psutil` (without it lit cannot enforce per-test timeouts, and a hang would
# stall CI instead of failing it).
# Does nothing when everything is present, so `make` can call it every time.
set -euo pipefail

LLVM_PREFIX=/usr/lib/llvm-19
APT_PACKAGES=(llvm-19-dev llvm-19-tools mlir-19-tools libmlir-19 libmlir-19-dev lld-19 g++ valgrind gcc)

# One file per package that proves it is installed.
declare -A PROBE=(
  [llvm-19-dev]="$LLVM_PREFIX/lib/libLLVM.so"
  [llvm-19-tools]="$LLVM_PREFIX/bin/FileCheck"
  [mlir-19-tools]="$LLVM_PREFIX/bin/mlir-cpu-runner"
  [libmlir-19]="$LLVM_PREFIX/lib/libmlir_async_runtime.so"
  [libmlir-19-dev]="$LLVM_PREFIX/include/mlir/ExecutionEngine/AsyncRuntime.h"
  [lld-19]="$LLVM_PREFIX/bin/ld.lld"
  [g++]="/usr/bin/g++"
  [valgrind]="/usr/bin/valgrind"
  [gcc]="/usr/bin/gcc"
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  [ -e "${PROBE[$pkg]}" ] || missing+=("$pkg")
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY_MISSING=()
python3 -c 'import lit' >/dev/null 2>&1 || PY_MISSING+=(lit)
python3 -c 'import psutil' >/dev/null 2>&1 || PY_MISSING+=(psutil)
if [ "${#PY_MISSING[@]}" -gt 0 ]; then
  echo "setup: installing ${PY_MISSING[*]} from PyPI" >&2
  python3 -m pip install --quiet --root-user-action=ignore "${PY_MISSING[@]}"
fi
if ! command -v lit >/dev/null 2>&1; then
  echo "setup: lit is installed but not on PATH (PATH=$PATH)" >&2
  exit 1
fi

for pkg in "${APT_PACKAGES[@]}"; do
  if [ ! -e "${PROBE[$pkg]}" ]; then
    echo "setup: $pkg is installed but ${PROBE[$pkg]} is missing" >&2
    exit 1
  fi
done
