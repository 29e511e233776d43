#!/usr/bin/env bash
# Regenerates runtime/link/hot-symbols.txt: the functions of our runtime
# library that real programs execute, in the order lld should place them.
#
# Why: the library's own code pages count in every process's resident
# memory. Left to the linker's default order, the few hot functions are
# spread over the whole .text (half of it std's never-run backtrace
# symbolizer), and the kernel's 64 KiB fault-around maps nearly all of it.
# Packed together they fit in a few windows (472 -> 236 KiB resident).
#
# How: run benchmark programs under `valgrind --tool=callgrind` with the
# runtime, and list every function that ran inside the library.
# Re-run after changing the runtime or the toolchain; the runtime's test
# `link_order` fails when the list has gone stale.
set -euo pipefail
cd "$(dirname "$0")/../.."

LLVM_PREFIX=$(python3 mlir-tests/lib/toolchain.py prefix)
LIB=$PWD/target/release/libmlir_async_runtime.so
OUT=runtime/link/hot-symbols.txt
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

command -v valgrind >/dev/null || { echo "hot-symbols: valgrind is needed" >&2; exit 1; }
cargo build --release -p mlir_async_runtime >&2

# The project's pipeline for this MLIR (mlir-tests/lib/pipelines.txt).
PIPELINE=$(python3 mlir-tests/lib/pipelines.py --llvm-prefix "$LLVM_PREFIX")
for prog in fan-out fib-spawn value-pipeline blocking-awaits nested-chain; do
  "$LLVM_PREFIX/bin/mlir-opt" "bench/$prog.mlir" -pass-pipeline="$PIPELINE" > "$WORK/$prog.mlir"
  echo "hot-symbols: profiling $prog" >&2
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$WORK/$prog.cg" \
    "$LLVM_PREFIX/bin/mlir-cpu-runner" "$WORK/$prog.mlir" -e main -entry-point-result=void -O0 \
    -shared-libs="$LLVM_PREFIX/lib/libmlir_c_runner_utils.so" -shared-libs="$LIB" \
    > /dev/null 2> "$WORK/$prog.log"
done

python3 - "$WORK" "$OUT" <<'PY'
import glob, re, sys
work, out = sys.argv[1:]
hot = set()
for path in glob.glob(f'{work}/*.cg'):
    obs, fns, cur_ob = {}, {}, None
    for line in open(path):
        m = re.match(r'^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$', line.rstrip('\n'))
        if not m:
            continue
        kind, ident, name = m.groups()
        table = obs if kind.endswith('ob') else fns
        if name:
            table[ident] = name
        if kind == 'ob':
            cur_ob = obs.get(ident)
        elif kind == 'fn' and cur_ob and cur_ob.endswith('libmlir_async_runtime.so'):
            # callgrind marks recursion levels as name'2, name'3, ...
            name = re.sub(r"'\d+$", '', fns[ident])
            if not name.startswith('0x'):  # PLT stubs and the like have no name
                hot.add(name)
with open(out, 'w') as f:
    f.write(''.join(f'{name}\n' for name in sorted(hot)))
print(f'hot-symbols: {len(hot)} functions written to {out}', file=sys.stderr)
PY
