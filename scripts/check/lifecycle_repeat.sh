#!/usr/bin/env bash
# Runs each lifecycle scenario of runtime/tests/lifecycle.rs many times in a
# row, with the configuration that made it fail before its fix: TOTAL
# rounds (forked children, chains, bursts, ...) per scenario, split into
# child processes of the rounds the table below gives (a process per run
# for the cheap ones, so each run gets its own fuzz seed or schedule).
# Prints one line per scenario, counting rounds: passed, failed, and of
# the failed ones how many hung (the 60 s limit, or the child's own check:
# exit 3) and how many lost a task (exit 5). Usage:
#   scripts/check/lifecycle_repeat.sh [TOTAL [PATTERN]]   (default 1000, all)
# PATTERN (a grep -E pattern) selects table lines, e.g. 'exit-|destroy-'.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOTAL=${1:-1000}
PATTERN=${2:-.}
cargo test --release -p mlir_async_runtime --test lifecycle --no-run 2> "${TMPDIR:-/tmp}/lifecycle-build.log" ||
  { cat "${TMPDIR:-/tmp}/lifecycle-build.log" >&2; exit 2; }
BIN=$(cargo test --release -p mlir_async_runtime --test lifecycle --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable") and "lifecycle" in m["executable"]][-1])')

# scenario|rounds per process|environment; {seed} becomes the run's number.
LIST='fork-during-stats|100|MLIR_ASYNC_RUNTIME_WORKERS=2
fork-during-tasks|100|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_TASK_STACKS=0
fork-during-destroy|100|MLIR_ASYNC_RUNTIME_WORKERS=2 MLIR_ASYNC_RUNTIME_STATS=1
chain-of-five|100|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_MAX_THREADS=1
push-as-spare-idles|20|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_MAX_THREADS=2 MLIR_ASYNC_RUNTIME_TASK_STACKS=0 MLIR_ASYNC_RUNTIME_FUZZ={seed}
spare-churn|20|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_MAX_THREADS=3 MLIR_ASYNC_RUNTIME_TASK_STACKS=0 MLIR_ASYNC_RUNTIME_FUZZ={seed}
two-continuations|1|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_FUZZ={seed}
two-continuations|1|MLIR_ASYNC_RUNTIME_WORKERS=1 MLIR_ASYNC_RUNTIME_SCHEDULE=pct:{seed}
'
# The exit paths of issue 27 under each executor, one run per process (a
# round of destroy-while-queuing is one destroy while the other thread
# queues: 10 per process).
for path in exit-without-destroy destroy-in-tls-destructor destroy-while-queuing destroy-twice; do
  rounds=1; [ "$path" = destroy-while-queuing ] && rounds=10
  for executor in "MLIR_ASYNC_RUNTIME_WORKERS=2" "MLIR_ASYNC_RUNTIME_SCHEDULE=random:{seed}" \
                  "MLIR_ASYNC_RUNTIME_SCHEDULE=pct:{seed}" "MLIR_ASYNC_RUNTIME_FUZZ={seed}"; do
    LIST+="$path|$rounds|$executor"$'\n'
  done
done

failed_total=0
while IFS='|' read -r scenario rounds env; do
  [ -n "$scenario" ] || continue
  passed=0 failed=0 hung=0 lost=0 first="" start=$SECONDS
  RUNS=$(( (TOTAL + rounds - 1) / rounds ))
  ROUNDS=$rounds
  for ((i = 1; i <= RUNS; i++)); do
    run_env=${env//\{seed\}/$i}
    status=0
    # shellcheck disable=SC2086
    env MLIR_ASYNC_RUNTIME_TEST_SCENARIO="$scenario" MLIR_ASYNC_RUNTIME_TEST_ROUNDS="$ROUNDS" $run_env \
      timeout -k 5 60 "$BIN" --exact scenario_child --nocapture > /dev/null 2>&1 || status=$?
    if [ $status -eq 0 ]; then
      passed=$((passed + ROUNDS))
    else
      failed=$((failed + ROUNDS))
      case $status in 3|124|137) hung=$((hung + 1)) ;; 5) lost=$((lost + 1)) ;; esac
      [ -n "$first" ] || first="run $i ($run_env, exit $status)"
    fi
    printf '\r%s: %d/%d' "$scenario" "$i" "$RUNS" >&2
  done
  printf '\r' >&2
  echo "$scenario [$env], $RUNS processes of $ROUNDS rounds: $passed passed, $failed failed" \
    "($hung process(es) hung, $lost lost tasks) in $((SECONDS - start)) s${first:+ (first: $first)}"
  failed_total=$((failed_total + failed))
done < <(printf '%s' "$LIST" | grep -E -- "$PATTERN")
[ "$failed_total" -eq 0 ]
