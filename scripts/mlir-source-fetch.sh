#!/usr/bin/env bash
# Fetches Debian's source package of an MLIR version (llvm-toolchain-N, the
# exact version whose binaries are in use) for `make lowering-fixes`, which
# builds MLIR's async-parallel-for from it with our patches
# (lowering-fixes/, docs/lowering-bugs.md). Only the upstream tarball and
# Debian's patch set are downloaded (apt-get source --download-only: no
# unpacking, no build dependencies), into a cache under target/:
#
#   target/mlir-src/N/llvm-toolchain-N_*.orig.tar.xz   upstream's source (~165 MB)
#   target/mlir-src/N/llvm-toolchain-N_*.debian.tar.xz Debian's patches
#   target/mlir-src/N/source.txt   package and version (written last: a
#                                  cache without it is incomplete)
#
# The version: MLIR 19 is the installed one (the version of libmlir-19,
# dpkg-query); another N is the one scripts/compat-fetch.sh unpacked into
# target/compat/N (its packages.txt). Source packages need a deb-src entry:
# when apt knows no source of that version, this adds
# /etc/apt/sources.list.d/mlir-async-rs-src.sources, deb-src for the
# suites the binaries come from (Debian 12: bookworm, bookworm-updates,
# bookworm-security), and runs apt-get update once.
#
# `make setup` (scripts/setup.sh) runs it; the build calls it with
# --offline, which only checks the cache and says to run make setup.
#
# Usage: scripts/mlir-source-fetch.sh [--cache DIR] [--offline] [--print] N...
#   --print    print each version's cache directory on stdout
#   --offline  only use the cache: exit 1 if a version is not in it
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${MLIR_SRC_CACHE:-$root/target/mlir-src}"
offline=0
print=0
versions=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache="$2"; shift 2 ;;
    --offline) offline=1; shift ;;
    --print) print=1; shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    -*) echo "mlir-source-fetch: unknown option $1" >&2; exit 2 ;;
    *) [[ "$1" =~ ^[0-9]+$ ]] || { echo "mlir-source-fetch: not a version: $1" >&2; exit 2; }
       versions+=("$1"); shift ;;
  esac
done
[ "${#versions[@]}" -gt 0 ] || { echo "mlir-source-fetch: no version given (e.g. 19)" >&2; exit 2; }

SOURCES=/etc/apt/sources.list.d/mlir-async-rs-src.sources

# The Debian version of MLIR N's binaries in use.
binary_version() {
  local v=$1 list="$root/target/compat/$1/packages.txt"
  local status
  status=$(dpkg-query -W -f '${Status}' "libmlir-$v" 2>/dev/null || true)
  if [ "$status" = "install ok installed" ]; then
    dpkg-query -W -f '${Version}\n' "libmlir-$v"
  elif [ -f "$list" ] && grep -q "^libmlir-$v " "$list"; then
    awk -v p="libmlir-$v" '$1 == p { print $2 }' "$list"
  else
    echo "mlir-source-fetch: MLIR $v is neither installed nor in target/compat/$v:" \
         "run \`make setup\`" >&2
    exit 1
  fi
}

# Succeeds when apt knows source package $1 in version $2.
source_known() {
  local info
  info=$(apt-cache showsrc "$1" 2>/dev/null) || return 1
  grep -qxF "Version: $2" <<<"$info"
}

updated=0
ensure_source() {
  local pkg=$1 ver=$2
  source_known "$pkg" "$ver" && return 0
  if [ "$updated" -eq 0 ]; then
    if [ ! -f "$SOURCES" ]; then
      echo "mlir-source-fetch: adding deb-src entries in $SOURCES" >&2
      local SUDO=""
      [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      $SUDO tee "$SOURCES" >/dev/null <<'SRC'
# Added by mlir-async-rs's scripts/mlir-source-fetch.sh (make setup): the
# source packages of the LLVM/MLIR in use, for make lowering-fixes.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    fi
    echo "mlir-source-fetch: apt knows no source $pkg $ver; running apt-get update" >&2
    local SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    updated=1
    source_known "$pkg" "$ver" && return 0
  fi
  echo "mlir-source-fetch: no source package $pkg $ver in the configured apt sources" \
       "(deb-src entries: $SOURCES)" >&2
  exit 1
}

fetch() {
  local v=$1 dest="$cache/$1"
  if [ -f "$dest/source.txt" ]; then
    echo "mlir-source-fetch: llvm-toolchain-$v source is cached in $dest" >&2
    return
  fi
  if [ "$offline" -eq 1 ]; then
    echo "mlir-source-fetch: the source package of MLIR $v (llvm-toolchain-$v) is not in $dest:" \
         "run \`make setup\` (scripts/setup.sh fetches it once)" >&2
    exit 1
  fi
  local ver pkg="llvm-toolchain-$v"
  ver=$(binary_version "$v")
  ensure_source "$pkg" "$ver"
  rm -rf "$dest.tmp"
  mkdir -p "$dest.tmp"
  echo "mlir-source-fetch: downloading $pkg $ver (source)" >&2
  local sandbox=() t0 t1
  # As root, apt would download as _apt, which cannot write here.
  [ "$(id -u)" -eq 0 ] && sandbox=(-o APT::Sandbox::User=root)
  t0=$(date +%s.%N)
  (cd "$dest.tmp" && apt-get source -qq --download-only "${sandbox[@]}" "$pkg=$ver" >/dev/null)
  t1=$(date +%s.%N)
  ls "$dest.tmp"/*.orig.tar.* >/dev/null
  {
    echo "$pkg $ver"
    awk -v b="$(du -cb "$dest.tmp"/* | tail -1 | cut -f1)" -v d="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" \
      'BEGIN { printf "# downloaded %.1f MB in %.1f s (scripts/mlir-source-fetch.sh)\n", b / 1e6, d }'
  } > "$dest.tmp/source.tmp"
  mv "$dest.tmp/source.tmp" "$dest.tmp/source.txt"
  rm -rf "$dest"
  mv "$dest.tmp" "$dest"
  echo "mlir-source-fetch: $pkg $ver: $(tail -1 "$dest/source.txt" | sed 's/^# //')" >&2
}

for v in "${versions[@]}"; do
  fetch "$v"
  [ "$print" -eq 0 ] || echo "$cache/$v"
done
