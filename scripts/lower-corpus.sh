#!/usr/bin/env bash
# Lower every program of the async MLIR corpus (mlir-tests/*.mlir) to LLVM IR
# for tools that run it without lit (the JIT harness):
#   target/corpus/<id>.llvm.mlir  one per RUN line: the RUN line's mlir-opt
#                              stage (LLVM dialect, what the runners take)
#   target/corpus/<id>.ll      the same through `mlir-translate --mlir-to-llvmir`
#   target/corpus/manifest.tsv one row per <id>, tab-separated, '-' = empty:
#     name ll check_file check_prefix entry entry_result env requires xfail
#     unsupported source mlir pipeline
#   (pipeline: the RUN line's pass pipeline, for jit-harness --pipeline; env: space-separated VAR=VAL to set when running, e.g.
#    MLIR_ASYNC_RUNTIME_WORKERS=3; requires/xfail/unsupported: lit features,
#    comma-separated, e.g. rust-runtime / cxx-runtime; check with
#    FileCheck <check_file> --check-prefix=<check_prefix> on the program's stdout.)
# The RUN-line convention and the parser live in mlir-tests/lib/corpus.py and
# are documented at the top of mlir-tests/lit.cfg.py; the pipelines come from
# mlir-tests/lib/pipelines.txt, for the MLIR version of the prefix (llvm-N).
#
# Usage: scripts/lower-corpus.sh [--out DIR] [--llvm-prefix P] [FILE.mlir...]
# Env:   LLVM_PREFIX (default: mlir-tests/lib/toolchain.py's), CORPUS_OUT, CORPUS_JOBS.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${CORPUS_OUT:-$root/target/corpus}"
prefix=$(python3 "$root/mlir-tests/lib/toolchain.py" prefix)
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --llvm-prefix) prefix="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) files+=("$1"); shift ;;
  esac
done
# Start clean so that removed or renamed programs leave no stale .ll.
mkdir -p "$out"
rm -rf "$out"/*.ll "$out"/*.llvm.mlir "$out"/*.tmp "$out"/src "$out"/manifest.tsv
exec python3 "$root/mlir-tests/lib/corpus.py" lower --out "$out" \
  --llvm-prefix "$prefix" ${files[@]+"${files[@]}"}
