#!/usr/bin/env bash
# Runs each lifecycle scenario of runtime/tests/lifecycle.rs many times in a
# row, with the configuration that made it fail before its fix: TOTAL
# rounds (forked children, chains, bursts, ...) per scenario, split into
# child processes of the rounds the table below gives (a process per run
# for the cheap ones, so each run gets its own fuzz seed). Prints one
# "N passed, N failed" line per scenario, counting rounds. Usage:
#   scripts/check/lifecycle_repeat.sh [TOTAL]      (default 1000)
set -euo pipefail
cd "$(dirname "$0")/../.."
TOTAL=${1:-1000}
cargo test --release -p mlir_async_runtime --test lifecycle --no-run 2> "${TMPDIR:-/tmp}/lifecycle-build.log" ||
  { cat "${TMPDIR:-/tmp}/lifecycle-build.log" >&2; exit 2; }
BIN=$(cargo test --release -p mlir_async_runtime --test lifecycle --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable") and "lifecycle" in m["executable"]][-1])')
failed_total=0
# scenario, then its environment; {seed} becomes the run's number.
while IFS='|' read -r scenario rounds env; do
  [ -n "$scenario" ] || continue
  passed=0 failed=0 first=""
  RUNS=$(( (TOTAL + rounds - 1) / rounds ))
  ROUNDS=$rounds
  for ((i = 1; i <= RUNS; i++)); do
    run_env=${env//\{seed\}/$i}
    # shellcheck disable=SC2086
    if env MLIR_ASYNC_RUNTIME_TEST_SCENARIO="$scenario" MLIR_ASYNC_RUNTIME_TEST_ROUNDS="$ROUNDS" $run_env \
        timeout 60 "$BIN" --exact scenario_child --nocapture > /dev/null 2>&1; then
      passed=$((passed + ROUNDS))
    else
      failed=$((failed + ROUNDS))
      [ -n "$first" ] || first="run $i ($run_env)"
    fi
    printf '\r%s: %d/%d' "$scenario" "$i" "$RUNS" >&2
  done
  printf '\r' >&2
  echo "$scenario [$env], $RUNS processes of $ROUNDS rounds: $passed passed, $failed failed${first:+ (first: $first)}"
  failed_total=$((failed_total + failed))
done <<'LIST'
fork-during-stats|100|MLIR_ASYNC_RUNTIME_WORKERS=2
fork-during-tasks|100|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_SPARE_KEEP_ALIVE_MS=1
fork-during-destroy|100|MLIR_ASYNC_RUNTIME_WORKERS=2 MLIR_ASYNC_RUNTIME_STATS=1
chain-of-five|100|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_MAX_THREADS=1
push-as-spare-idles|20|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_MAX_THREADS=2 MLIR_ASYNC_RUNTIME_FUZZ={seed}
spare-expiry|20|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_MAX_THREADS=2 MLIR_ASYNC_RUNTIME_SPARE_KEEP_ALIVE_MS=1 MLIR_ASYNC_RUNTIME_FUZZ={seed}
spare-churn|20|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_MAX_THREADS=3 MLIR_ASYNC_RUNTIME_SPARE_KEEP_ALIVE_MS=1 MLIR_ASYNC_RUNTIME_FUZZ={seed}
two-continuations|1|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_FUZZ={seed}
two-continuations|1|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_SCHEDULE=pct:{seed}
LIST
[ "$failed_total" -eq 0 ]
