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
# dpkg-query); another N is the one scripts/toolchain/fetch_mlir.sh unpacked into
# target/compat/N (its packages.txt). Source packages need a deb-src entry:
# when apt knows no source of that version, this adds
# /etc/apt/sources.list.d/mlir-async-rs-src.sources, deb-src for the
# suites the binaries come from (Debian 12: bookworm, bookworm-updates,
# bookworm-security), and runs apt-get update once.
#
# When the archive's pool lacks the upstream tarball of that version
# (MLIR 22: bookworm-security lists llvm-toolchain-22 1:22.1.8-1~deb12u1,
# but its llvm-toolchain-22_22.1.8.orig.tar.xz is not in the pool: 404),
# the same tarball is taken from another Debian suite that carries the
# same upstream version (sid, trixie-backports, bookworm-backports: deb-src
# entries in a private apt configuration under the cache, nothing added to
# the system) and checked against the SHA-256 that the .dsc of the version
# in use gives for it; source.txt says so.
#
# `make setup` (scripts/toolchain/setup.sh) runs it; the build calls it with
# --offline, which only checks the cache and says to run make setup.
#
# Usage: scripts/toolchain/fetch_mlir_source.sh [--cache DIR] [--offline] [--print] N...
#   --print    print each version's cache directory on stdout
#   --offline  only use the cache: exit 1 if a version is not in it
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
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
# Added by mlir-async-rs's scripts/toolchain/fetch_mlir_source.sh (make setup): the
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

# The SHA-256 and name of the upstream tarball of source package $1 $2, as
# its .dsc gives them (apt-cache showsrc): "SUM NAME".
orig_checksum() {
  apt-cache showsrc "$1" 2>/dev/null | awk -v v="$2" '
    /^Package:/ { keep = 0 } $0 == "Version: " v { keep = 1 }
    /^Checksums-Sha256:/ { sums = keep; next } /^[^ ]/ { sums = 0 }
    sums && $3 ~ /\.orig\.tar\./ { print $1, $3; exit }'
}

# Downloads the upstream tarball of $1 $2 into $3 from another Debian suite
# with the same upstream version (see the header), checks it, and prints
# where it came from.
orig_elsewhere() {
  local pkg=$1 ver=$2 dir=$3 sum name
  read -r sum name < <(orig_checksum "$pkg" "$ver") || true
  [ -n "${name:-}" ] || { echo "mlir-source-fetch: no upstream tarball listed for $pkg $ver" >&2; return 1; }
  echo "mlir-source-fetch: $name is not in the pool of $pkg $ver; looking in other Debian suites" >&2
  local apt="$cache/apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir/other"
  cat > "$apt/sources.list" <<'SRC'
deb-src http://deb.debian.org/debian sid main
deb-src http://deb.debian.org/debian trixie-backports main
deb-src http://deb.debian.org/debian bookworm-backports main
SRC
  local o=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
           -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o APT::Sandbox::User="$(id -un)")
  apt-get "${o[@]}" update -qq
  local other
  for other in $(apt-cache "${o[@]}" showsrc "$pkg" | awk -v n="$name" '
      /^Version:/ { v = $2 } $3 == n { print v }' | sort -u); do
    # The .dsc of another version may be missing too; the tarball is what counts.
    (cd "$dir/other" && apt-get "${o[@]}" source -qq --download-only "$pkg=$other" >/dev/null 2>&1) || true
    if [ -f "$dir/other/$name" ] && [ "$(sha256sum "$dir/other/$name" | cut -d' ' -f1)" = "$sum" ]; then
      mv "$dir/other/$name" "$dir/$name"
      rm -rf "$dir/other"
      echo "$name from the pool of $pkg $other (SHA-256 $sum, as the .dsc of $ver says)"
      return 0
    fi
  done
  echo "mlir-source-fetch: no Debian suite has $name with SHA-256 $sum" >&2
  return 1
}

fetch() {
  local v=$1 dest="$cache/$1"
  if [ -f "$dest/source.txt" ]; then
    echo "mlir-source-fetch: llvm-toolchain-$v source is cached in $dest" >&2
    return
  fi
  if [ "$offline" -eq 1 ]; then
    echo "mlir-source-fetch: the source package of MLIR $v (llvm-toolchain-$v) is not in $dest:" \
         "run \`make setup\` (scripts/toolchain/setup.sh fetches it once)" >&2
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
  local from=""
  if ! (cd "$dest.tmp" && apt-get source -qq --download-only "${sandbox[@]}" "$pkg=$ver" >/dev/null 2>"$dest.tmp/apt.log"); then
    from=$(orig_elsewhere "$pkg" "$ver" "$dest.tmp") || { cat "$dest.tmp/apt.log" >&2; exit 1; }
  fi
  rm -f "$dest.tmp/apt.log"
  t1=$(date +%s.%N)
  ls "$dest.tmp"/*.orig.tar.* >/dev/null
  {
    echo "$pkg $ver"
    [ -z "$from" ] || echo "# $from"
    awk -v b="$(du -cb "$dest.tmp"/* | tail -1 | cut -f1)" -v d="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" \
      'BEGIN { printf "# downloaded %.1f MB in %.1f s (scripts/toolchain/fetch_mlir_source.sh)\n", b / 1e6, d }'
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
