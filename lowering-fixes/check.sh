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
#      one line and fails;
#   6. MLIR 22's plugin: the lit tests pass with it and fail with MLIR 22's
#      pass, and unaffected loops lower to MLIR 22's IR exactly;
#   7. the patches that docs/lowering-bugs.md prints are the applied ones.
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
bash lowering-fixes/build.sh --version 22
plugin=$("$PYTHON" mlir-tests/lib/pipelines.py --plugin | sed 's/^--load-pass-plugin=//')
opt="$prefix/bin/mlir-opt"

# 1. lit tests, both ways (and 6., for MLIR 22).
p22=$(bash scripts/toolchain/fetch_mlir.sh --offline --prefix 22)
tests=$(find lowering-fixes/test -name '*.mlir' -not -path '*/Inputs/*' | wc -l)
for p in "$prefix" "$p22"; do
  v=$(basename "$p")
  if "$LIT" -q lowering-fixes/test --param llvm_prefix="$p"; then
    pass "$v: the $tests lit tests pass with async-parallel-for-fixed"
  else
    fail "$v: lit lowering-fixes/test with the plugin"
  fi
  unpatched=$("$LIT" -q lowering-fixes/test --param llvm_prefix="$p" --param unpatched=1 2>&1 || true)
  failed=$(grep -c '^FAIL: ' <<<"$unpatched" || true)
  if [ "$failed" = "$tests" ]; then
    pass "$v: all $tests fail with MLIR's own async-parallel-for"
  else
    fail "$v: with MLIR's own async-parallel-for, $failed of $tests lit tests fail (all should)"
  fi
done
env22() {
  LD_LIBRARY_PATH="$("$PYTHON" -c 'import sys; sys.path.insert(0, "mlir-tests/lib"); import toolchain; print(toolchain.toolchain_env(sys.argv[1])["LD_LIBRARY_PATH"])' "$p22")" "$@"
}

# 2. Unaffected loops: the same IR as MLIR's pass.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
input=lowering-fixes/test/Inputs/unaffected.mlir
options=("" "num-workers=4 min-task-size=16" "async-dispatch=false num-workers=2 min-task-size=1" "num-workers=-1 min-task-size=5")
same=0
plugin22=$(dirname "$plugin")/22/libmlir_async_lowering_fixes.so
for o in "${options[@]}"; do
  "$opt" "$input" --pass-pipeline="builtin.module(async-parallel-for{$o})" > "$tmp/mlir.ir"
  "$opt" --load-pass-plugin="$plugin" "$input" --pass-pipeline="builtin.module(async-parallel-for-fixed{$o})" > "$tmp/fixed.ir"
  env22 "$p22/bin/mlir-opt" "$input" --pass-pipeline="builtin.module(async-parallel-for{$o})" > "$tmp/mlir22.ir"
  env22 "$p22/bin/mlir-opt" --load-pass-plugin="$plugin22" "$input" \
    --pass-pipeline="builtin.module(async-parallel-for-fixed{$o})" > "$tmp/fixed22.ir"
  if cmp -s "$tmp/mlir.ir" "$tmp/fixed.ir" && cmp -s "$tmp/mlir22.ir" "$tmp/fixed22.ir"; then same=$((same + 1)); else
    fail "{$o}: a plugin lowers $input differently from its MLIR's pass:"
    diff "$tmp/mlir.ir" "$tmp/fixed.ir" | head -10 >&2
    diff "$tmp/mlir22.ir" "$tmp/fixed22.ir" | head -10 >&2
  fi
done
[ "$same" -eq "${#options[@]}" ] && pass "loops the bugs do not touch: the same IR as MLIR's pass (19 and 22) under ${#options[@]} option sets"

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
out=$(env22 "$p22/bin/mlir-opt" --load-pass-plugin="$plugin" "$input" \
      --pass-pipeline="builtin.module(async-parallel-for-fixed)" 2>&1 >/dev/null) && status=0 || status=$?
line=$(grep -m1 '^libmlir_async_lowering_fixes: ' <<<"$out" || true)
if [ "$status" -ne 0 ] && [[ "$line" == *"built for MLIR 19."*"loaded by MLIR 22."* ]]; then
  pass "MLIR 22's mlir-opt refuses the MLIR 19 plugin: $line"
else
  fail "MLIR 22's mlir-opt with the MLIR 19 plugin: exit $status, $(head -3 <<<"$out")"
fi

# 7. The docs print the applied patches.
if "$PYTHON" - <<'PY'
import glob, re, sys
doc = open('docs/lowering-bugs.md').read()
blocks = re.findall(r'```diff\n(.*?)```', doc, re.S)
patches = [open(p).read() for p in sorted(glob.glob('lowering-fixes/19/*.patch'))]
sys.exit(0 if blocks == patches else 1)
PY
then
  pass "docs/lowering-bugs.md prints exactly lowering-fixes/19/*.patch"
else
  fail "the diff blocks of docs/lowering-bugs.md are not lowering-fixes/19/*.patch"
fi

[ "$fails" -eq 0 ] || { echo "lowering-fixes-ci: $fails check(s) failed" >&2; exit 1; }
