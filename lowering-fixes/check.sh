#!/usr/bin/env bash
# The checks of the async-parallel-for plugin (make lowering-fixes-ci, in
# make test; docs/lowering-bugs.md). Builds it if needed, then:
#   1. the upstream-style lit tests of lowering-fixes/test pass with the
#      plugin, and every one of them fails with MLIR's own pass;
#   2. on loops the bugs do not touch (test/Inputs/unaffected.mlir), under
#      several option sets, the plugin's pass prints exactly the IR of
#      MLIR's own (a plugin compiled wrongly, e.g. with g++, does not);
#   3. a plugin built with a deliberately wrong patch on top
#      (test/Inputs/wrong-dispatch.patch: createAsyncParallelForPass, a
#      function libMLIR also defines, swaps the dispatch mode) prints other
#      IR: the plugin's calls reach its own patched copy, not MLIR's;
#   4. the corpus programs of the two bugs (XFAIL for MLIR's pass) pass
#      with it, on our runtime, with their sequential reference
#      (lit --param fixed_lowering=1);
#   5. bad input: MLIR 22's mlir-opt, loading the MLIR 19 plugin, says so in
#      one line and fails (when make setup unpacked MLIR 22).
# Usage: lowering-fixes/check.sh   (LLVM_PREFIX, LIT, PYTHON from the environment)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
prefix=${LLVM_PREFIX:-/usr/lib/llvm-19}
LIT=${LIT:-lit}
PYTHON=${PYTHON:-python3}
fails=0
pass() { echo "lowering-fixes-ci: ok: $*"; }
fail() { echo "lowering-fixes-ci: FAILED: $*" >&2; fails=$((fails + 1)); }

bash lowering-fixes/build.sh
plugin=$("$PYTHON" mlir-tests/lib/pipelines.py --plugin | sed 's/^--load-pass-plugin=//')
opt="$prefix/bin/mlir-opt"

# 1. lit tests, both ways.
tests=$(find lowering-fixes/test -name '*.mlir' -not -path '*/Inputs/*' | wc -l)
if "$LIT" -q lowering-fixes/test --param llvm_prefix="$prefix"; then
  pass "the $tests lit tests pass with async-parallel-for-fixed"
else
  fail "lit lowering-fixes/test with the plugin"
fi
unpatched=$("$LIT" -q lowering-fixes/test --param llvm_prefix="$prefix" --param unpatched=1 2>&1 || true)
failed=$(grep -c '^FAIL: ' <<<"$unpatched" || true)
if [ "$failed" = "$tests" ]; then
  pass "all $tests fail with MLIR's own async-parallel-for"
else
  fail "with MLIR's own async-parallel-for, $failed of $tests lit tests fail (all should)"
fi

# 2. Unaffected loops: the same IR as MLIR's pass.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
input=lowering-fixes/test/Inputs/unaffected.mlir
options=("" "num-workers=4 min-task-size=16" "async-dispatch=false num-workers=2 min-task-size=1" "num-workers=-1 min-task-size=5")
same=0
for o in "${options[@]}"; do
  "$opt" "$input" --pass-pipeline="builtin.module(async-parallel-for{$o})" > "$tmp/mlir.ir"
  "$opt" --load-pass-plugin="$plugin" "$input" --pass-pipeline="builtin.module(async-parallel-for-fixed{$o})" > "$tmp/fixed.ir"
  if cmp -s "$tmp/mlir.ir" "$tmp/fixed.ir"; then same=$((same + 1)); else
    fail "{$o}: the plugin lowers $input differently from MLIR's pass:"
    diff "$tmp/mlir.ir" "$tmp/fixed.ir" | head -10 >&2
  fi
done
[ "$same" -eq "${#options[@]}" ] && pass "loops the bugs do not touch: the same IR as MLIR's pass under ${#options[@]} option sets"

# 3. A deliberately wrong patch changes the output.
bash lowering-fixes/build.sh --out target/lowering-fixes/wrong --extra-patch lowering-fixes/test/Inputs/wrong-dispatch.patch
"$opt" --load-pass-plugin="$plugin" "$input" --pass-pipeline="builtin.module(async-parallel-for-fixed)" > "$tmp/fixed.ir"
"$opt" --load-pass-plugin=target/lowering-fixes/wrong/libmlir_async_lowering_fixes.so "$input" \
  --pass-pipeline="builtin.module(async-parallel-for-fixed)" > "$tmp/wrong.ir"
if cmp -s "$tmp/fixed.ir" "$tmp/wrong.ir"; then
  fail "a wrong patch of createAsyncParallelForPass leaves the output alone: the plugin calls libMLIR's copy"
elif grep -q 'async_dispatch_fn' "$tmp/fixed.ir" && ! grep -q 'async_dispatch_fn' "$tmp/wrong.ir"; then
  pass "a deliberately wrong patch (createAsyncParallelForPass, dispatch mode swapped) changes the output as it should"
else
  fail "the wrong patch changed the output, but not into the sequential dispatch"
fi

# 4. The corpus programs of the two bugs.
if "$LIT" -v mlir-tests --param llvm_prefix="$prefix" --param fixed_lowering=1 \
     --filter 'parallel-for-(2d-aligned-blocks|empty-dimension)' > "$tmp/lit.log" 2>&1 \
   && [ "$(grep -c '^PASS: ' "$tmp/lit.log")" -eq 3 ]; then
  pass "the 3 corpus programs of the bugs (XFAIL with MLIR's pass) pass with the plugin"
else
  fail "corpus programs with --param fixed_lowering=1:"
  grep -E '^(PASS|FAIL|XFAIL|XPASS|UNSUPPORTED):' "$tmp/lit.log" >&2 || tail -5 "$tmp/lit.log" >&2
fi

# 5. Another MLIR's mlir-opt.
if p22=$(bash scripts/compat-fetch.sh --offline --prefix 22 2>/dev/null); then
  out=$(LD_LIBRARY_PATH="$("$PYTHON" -c 'import sys; sys.path.insert(0, "mlir-tests/lib"); import toolchain; print(toolchain.toolchain_env(sys.argv[1])["LD_LIBRARY_PATH"])' "$p22")" \
        "$p22/bin/mlir-opt" --load-pass-plugin="$plugin" "$input" \
        --pass-pipeline="builtin.module(async-parallel-for-fixed)" 2>&1 >/dev/null) && status=0 || status=$?
  line=$(grep -m1 '^libmlir_async_lowering_fixes: ' <<<"$out" || true)
  if [ "$status" -ne 0 ] && [[ "$line" == *"built for MLIR 19."*"loaded by MLIR 22."* ]]; then
    pass "MLIR 22's mlir-opt refuses it: $line"
  else
    fail "MLIR 22's mlir-opt with the MLIR 19 plugin: exit $status, $(head -3 <<<"$out")"
  fi
else
  echo "lowering-fixes-ci: skipped: MLIR 22 is not in target/compat (make setup)"
fi

[ "$fails" -eq 0 ] || { echo "lowering-fixes-ci: $fails check(s) failed" >&2; exit 1; }
