#!/usr/bin/env bash
# The one ahead-of-time compile step (docs/aot.md): LLVM IR from the async
# lowering to an object file whose MLIR entry is renamed, ready to link with
# a C main. Used by scripts/corpus/aot_test.sh (make aot-test) and
# scripts/bench/pack_build.py (make bench-pack).
#   1. opt -passes='default<ON>': runs the LLVM coroutine passes (coro-early,
#      coro-split, coro-cleanup), which llc alone cannot lower;
#   2. llc -ON, position-independent;
#   3. llvm-objcopy renames the entry (MLIR's `main` returns void) to NEW.
#
# Usage: scripts/corpus/aot_compile.sh [--llvm-prefix P] [-O N] IN.ll OUT.o ENTRY NEW
#   -O N  optimisation level of opt and llc (default 1, the level aot-test runs)
# Writes OUT.bc beside OUT.o; exits non-zero, with the tool's message on
# stderr, when a step fails.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
llvm=$(python3 "$root/mlir-tests/lib/toolchain.py" prefix) level=1
while [ $# -gt 0 ]; do
  case "$1" in
    --llvm-prefix) llvm=$2; shift 2 ;;
    -O) level=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "aot-compile: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -ne 4 ]; then
  echo "aot-compile: need IN.ll OUT.o ENTRY NEW (see --help)" >&2
  exit 2
fi
ll=$1 obj=$2 entry=$3 new=$4
"$llvm/bin/opt" -passes="default<O$level>" "$ll" -o "${obj%.o}.bc"
"$llvm/bin/llc" -O"$level" -filetype=obj -relocation-model=pic "${obj%.o}.bc" -o "$obj"
"$llvm/bin/llvm-objcopy" --redefine-sym "$entry=$new" "$obj"
