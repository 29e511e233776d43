#!/usr/bin/env bash
# Builds MLIR's async-parallel-for, with our patches, as a pass plugin
# (make lowering-fixes; docs/lowering-bugs.md):
#
#   1. the source: Debian's source package of the MLIR in use, which
#      `make setup` fetched (scripts/toolchain/fetch_mlir_source.sh); only
#      mlir/lib/Dialect/Async/Transforms/ is extracted from its tarball
#      (once: target/lowering-fixes/upstream/<major>/, kept pristine);
#   2. the patches lowering-fixes/<major>/*.patch, in name order, applied to
#      a copy (OUT/src/) with `patch --fuzz=0`; a hunk that does not apply
#      at exactly its line number fails the build (the line numbers in
#      docs/lowering-bugs.md are the release's);
#   3. AsyncParallelFor.cpp and PassDetail.cpp of that copy, and
#      lowering-fixes/plugin.cpp (the entry point, which registers
#      async-parallel-for-fixed), compiled against the version's headers with
#      -fvisibility=hidden and linked with -Bsymbolic (checked against its
#      libMLIR and libLLVM, which the plugin takes from the mlir-opt that
#      loads it): only mlirGetPassPluginInfo is exported, and every call to
#      the patched functions stays inside the plugin (checked below with nm).
#
#   OUT/libmlir_async_lowering_fixes.so   the plugin
#   OUT/mlir-version                      the MLIR version it is built for
#   OUT/inputs                            a hash of what went into it: when
#                                         nothing changed, nothing is rebuilt
#
# Usage: lowering-fixes/build.sh [--version N] [--out DIR] [--extra-patch FILE]
#   --version N       MLIR major version (default 19, the installed one;
#                     another one needs `scripts/toolchain/fetch_mlir.sh --dev N`)
#   --out DIR         default target/lowering-fixes (19) or
#                     target/lowering-fixes/N
#   --extra-patch F   apply F after ours (the test of the symbol binding
#                     builds a deliberately wrong plugin this way)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version=19
out=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --extra-patch) extra+=("$(realpath "$2")"); shift 2 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "lowering-fixes: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$version" =~ ^[0-9]+$ ]] || { echo "lowering-fixes: not a version: $version" >&2; exit 2; }
if [ -z "$out" ]; then
  out="$root/target/lowering-fixes"
  [ "$version" = 19 ] || out="$out/$version"
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The headers and libraries of MLIR N.
if [ "$version" = 19 ]; then
  prefix=${LLVM_PREFIX:-/usr/lib/llvm-19}
  include="$prefix/include"
  libdir="$prefix/lib"
else
  prefix=$(bash "$root/scripts/toolchain/fetch_mlir.sh" --offline --prefix "$version") || exit 1
  include="$root/target/compat/$version/dev/usr/lib/llvm-$version/include"
  libdir="$prefix/lib"
  if [ ! -f "$include/mlir/Dialect/Async/Passes.h" ]; then
    echo "lowering-fixes: MLIR $version's headers are not in target/compat/$version/dev:" \
         "run \`make setup\` (scripts/toolchain/fetch_mlir.sh --dev $version)" >&2
    exit 1
  fi
fi
# The compiler libMLIR was built with: TypeIDs of templates (op traits:
# hasTrait<ConstantLike>) come from the compiler's spelling of type names
# (llvm::getTypeName), and g++ spells them differently from clang, so that
# a g++-built pass silently fails every trait test (m_Constant never
# matches) and lowers differently from libMLIR's own.
CXX=${CXX:-${LLVM_PREFIX:-/usr/lib/llvm-19}/bin/clang++}
if ! command -v "$CXX" >/dev/null; then
  echo "lowering-fixes: no $CXX (clang-19): run \`make setup\`" >&2
  exit 1
fi
mlir_so=$(ls "$libdir"/libMLIR.so.* 2>/dev/null | head -1 || true)
# libLLVM: in the prefix, or (an unpacked one) in <prefix>/../<multiarch>.
llvm_so=$(ls "$libdir"/libLLVM.so.* "$libdir"/libLLVM-"$version".so "$prefix"/../*-linux-gnu*/libLLVM.so.* 2>/dev/null | head -1 || true)
if [ -z "$mlir_so" ] || [ -z "$llvm_so" ]; then
  echo "lowering-fixes: no libMLIR.so/libLLVM.so of MLIR $version in $libdir: run \`make setup\`" >&2
  exit 1
fi

# 1. The source package (fetched by make setup; the build never downloads).
srcdir=$(bash "$root/scripts/toolchain/fetch_mlir_source.sh" --offline --print "$version") || exit 1
tarball=$(ls "$srcdir"/*.orig.tar.* | head -1)
sub=mlir/lib/Dialect/Async/Transforms
# Pristine, shared by every build of the version (make lowering-fixes-ci
# builds a second, wrong plugin).
upstream="$root/target/lowering-fixes/upstream/$version"
stamp="$upstream/.from"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$(basename "$tarball")" ]; then
  echo "lowering-fixes: extracting $sub from $(basename "$tarball")" >&2
  rm -rf "$upstream" "$upstream.tmp"
  mkdir -p "$upstream.tmp"
  tar -xf "$tarball" -C "$upstream.tmp" --strip-components=1 --wildcards "*/$sub/*"
  basename "$tarball" > "$upstream.tmp/.from"
  mv "$upstream.tmp" "$upstream"
fi

# 2. Our patches, on a fresh copy.
patches=("$root"/lowering-fixes/"$version"/*.patch)
[ -e "${patches[0]}" ] || { echo "lowering-fixes: no patches in lowering-fixes/$version/" >&2; exit 1; }
so="$out/libmlir_async_lowering_fixes.so"
# Up to date when nothing that goes into it changed (make test calls this
# every time).
inputs=$( { echo "$tarball $CXX $include $mlir_so"; cat "${patches[@]}" ${extra[@]+"${extra[@]}"} \
            "$root/lowering-fixes/plugin.cpp" "$0"; } | sha256sum | cut -d' ' -f1)
if [ -f "$so" ] && [ -f "$out/inputs" ] && [ "$(cat "$out/inputs")" = "$inputs" ]; then
  echo "lowering-fixes: $so is up to date" >&2
  exit 0
fi
rm -f "$so" "$out/inputs"
rm -rf "$out/src"
mkdir -p "$out/src"
cp -r "$upstream/mlir" "$out/src/"
names=()
for p in "${patches[@]}" ${extra[@]+"${extra[@]}"}; do
  log=$(patch -p1 --fuzz=0 --no-backup-if-mismatch -d "$out/src" -i "$p" 2>&1) || {
    echo "lowering-fixes: $(basename "$p") does not apply to $(basename "$tarball"):" >&2
    echo "$log" >&2
    exit 1
  }
  if grep -q 'offset' <<<"$log"; then
    echo "lowering-fixes: $(basename "$p") applies only at another line ($log): update its line numbers" >&2
    exit 1
  fi
  names+=("$(basename "$p" .patch)")
done

# 3. The plugin.
obj="$out/obj"
rm -rf "$obj"
mkdir -p "$obj"
flags=(-std=c++17 -O2 -DNDEBUG -fPIC -fno-rtti -fvisibility=hidden -fvisibility-inlines-hidden
       -w -I"$include" -I"$out/src/$sub")
defs=(-DLOWERING_FIXES_PATCHES="\"$(IFS=' '; echo "${names[*]}")\"")
pids=()
for f in "$out/src/$sub/AsyncParallelFor.cpp" "$out/src/$sub/PassDetail.cpp" "$root/lowering-fixes/plugin.cpp"; do
  "$CXX" "${flags[@]}" "${defs[@]}" -c "$f" -o "$obj/$(basename "$f" .cpp).o" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || { echo "lowering-fixes: compiling failed (above)" >&2; exit 1; }; done
# Linked against libMLIR and libLLVM once, to check that every symbol
# resolves; the plugin itself names neither (no DT_NEEDED): mlir-opt has
# MLIR linked in statically and exports it, and its own libLLVM is loaded
# already. Naming them would load a second MLIR into the process, and into
# another version's mlir-opt a second LLVM too, which crashes it at load.
"$CXX" -shared -o "$obj/check.so" "$obj"/*.o -Wl,-Bsymbolic -Wl,--no-undefined "$mlir_so" "$llvm_so"
"$CXX" -shared -o "$so.tmp" "$obj"/*.o -Wl,-Bsymbolic

# Only the entry point is exported; the patched functions are local.
exported=$(nm -D --defined-only "$so.tmp" | awk '$2 ~ /[TWVDBR]/ { print $3 }' | grep -vxE '_init|_fini|__bss_start|_edata|_end' || true)
if [ "$exported" != "mlirGetPassPluginInfo" ]; then
  echo "lowering-fixes: the plugin exports more than mlirGetPassPluginInfo:" $exported >&2
  exit 1
fi
nm -D --undefined-only "$so.tmp" > "$obj/undefined.txt"
nm "$so.tmp" > "$obj/symbols.txt"
for sym in createAsyncParallelForPass populateAsyncParallelForPatterns cloneConstantsIntoTheRegion; do
  if grep -q "$sym" "$obj/undefined.txt"; then
    echo "lowering-fixes: the plugin calls libMLIR's $sym instead of its own" >&2
    exit 1
  fi
  grep -q " t .*$sym" "$obj/symbols.txt" || { echo "lowering-fixes: no local $sym in the plugin" >&2; exit 1; }
done
mv "$so.tmp" "$so"
grep -o '^#define LLVM_VERSION_STRING "[^"]*"' "$include/llvm/Config/llvm-config.h" \
  | sed 's/.*"\(.*\)"/\1/' > "$out/mlir-version"
echo "$inputs" > "$out/inputs"
echo "lowering-fixes: $so (MLIR $(cat "$out/mlir-version"), patches: ${names[*]})" >&2
