#!/usr/bin/env bash
# Runs each lifecycle scenario of runtime/tests/lifecycle.rs RUNS times in a
# row (a fresh child process each time, ROUNDS rounds each), with the
# configuration that made it fail before its fix, and prints one
# "N passed, N failed" line per scenario. Usage:
#   scripts/lifecycle-repeat.sh [RUNS] [ROUNDS]      (defaults 1000 and 20)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-1000}
ROUNDS=${2:-20}
cargo test --release -p mlir_async_runtime --test lifecycle --no-run 2> "${TMPDIR:-/tmp}/lifecycle-build.log" ||
  { cat "${TMPDIR:-/tmp}/lifecycle-build.log" >&2; exit 2; }
BIN=$(cargo test --release -p mlir_async_runtime --test lifecycle --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable") and "lifecycle" in m["executable"]][-1])')
failed_total=0
# scenario, then its environment; {seed} becomes the run's number.
while IFS='|' read -r scenario env; do
  [ -n "$scenario" ] || continue
  passed=0 failed=0 first=""
  for ((i = 1; i <= RUNS; i++)); do
    run_env=${env//\{seed\}/$i}
    # shellcheck disable=SC2086
    if env MLIR_ASYNC_RUNTIME_TEST_SCENARIO="$scenario" MLIR_ASYNC_RUNTIME_TEST_ROUNDS="$ROUNDS" $run_env \
        timeout 60 "$BIN" --exact scenario_child --nocapture > /dev/null 2>&1; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      [ -n "$first" ] || first="run $i ($run_env)"
    fi
    printf '\r%s: %d/%d' "$scenario" "$i" "$RUNS" >&2
  done
  printf '\r' >&2
  echo "$scenario [$env]: $passed passed, $failed failed${first:+ (first: $first)}"
  failed_total=$((failed_total + failed))
done <<'LIST'
fork-during-stats|MLIR_ASYNC_RUNTIME_WORKERS=2
fork-during-tasks|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_SPARE_KEEP_ALIVE_MS=1
fork-during-destroy|MLIR_ASYNC_RUNTIME_WORKERS=2 MLIR_ASYNC_RUNTIME_STATS=1
chain-of-five|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_MAX_THREADS=1
push-as-spare-idles|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_MAX_THREADS=2 MLIR_ASYNC_RUNTIME_FUZZ={seed}
spare-expiry|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_MAX_THREADS=2 MLIR_ASYNC_RUNTIME_SPARE_KEEP_ALIVE_MS=1 MLIR_ASYNC_RUNTIME_FUZZ={seed}
spare-churn|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_MAX_THREADS=3 MLIR_ASYNC_RUNTIME_SPARE_KEEP_ALIVE_MS=1 MLIR_ASYNC_RUNTIME_FUZZ={seed}
two-continuations|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_FUZZ={seed}
two-continuations|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_SCHEDULE=pct:{seed}
LIST
[ "$failed_total" -eq 0 ]
