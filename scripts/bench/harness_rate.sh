#!/usr/bin/env bash
# Checked runs per second: one corpus program N times through jit-harness
# (one process, --repeat N, output checked after every run) against N
# separate `mlir-cpu-runner | FileCheck` processes (what lit does per run),
# plus the harness's resident memory sampled over its N runs.
#
#   scripts/bench/harness_rate.sh [-n N] [--runner-n M] [--program NAME]
#       [--harness PATH] [--runtime SO] [--llvm-bin DIR] [--corpus DIR]
#
# N defaults to 1000; M (the mlir-cpu-runner processes) defaults to N, capped
# at 300 (about 50-90 ms each): the rate is a rate, so fewer processes give the
# same number in less time. The program defaults to `values` from the corpus
# (target/corpus, written by `make corpus`); its .ll goes to the harness, and
# the LLVM dialect it was translated from (<id>.llvm.mlir) to mlir-cpu-runner.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
lib=$root/mlir-tests/lib
n=1000
runner_n=""
program=values
harness=$root/target/release/jit-harness
runtime=$root/target/release/libmlir_async_runtime.so
llvm_bin=$(python3 "$lib/toolchain.py" bin)
corpus=$root/target/corpus

while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2;;
    --runner-n) runner_n=$2; shift 2;;
    --program) program=$2; shift 2;;
    --harness) harness=$2; shift 2;;
    --runtime) runtime=$2; shift 2;;
    --llvm-bin) llvm_bin=$2; shift 2;;
    --corpus) corpus=$2; shift 2;;
    -h|--help) sed -n '2,14p' "$0"; exit 0;;
    *) echo "bench-harness: unknown argument $1" >&2; exit 2;;
  esac
done
[ -n "$runner_n" ] || runner_n=$(( n < 300 ? n : 300 ))

llvm_lib=$(cd "$llvm_bin/../lib" && pwd)
libs=$llvm_lib/libmlir_c_runner_utils.so,$llvm_lib/libmlir_runner_utils.so
manifest=$corpus/manifest.tsv
[ -x "$harness" ] || { echo "bench-harness: no harness at $harness (make build)" >&2; exit 2; }
[ -f "$runtime" ] || { echo "bench-harness: no runtime at $runtime" >&2; exit 2; }
[ -f "$manifest" ] || { echo "bench-harness: no $manifest (make corpus)" >&2; exit 2; }

# The program's row, by the one manifest reader (mlir-tests/lib/manifest.py;
# '-' is an empty cell), and its jit-harness command (harness.py).
row=$(python3 "$lib/manifest.py" rows "$manifest" "$program" --runtime-kind rust \
  --llvm-prefix "$(dirname "$llvm_bin")" --columns ll,check_file,check_prefix,entry,entry_result,env,mlir)
[ -n "$row" ] || { echo "bench-harness: $program is not in $manifest" >&2; exit 2; }
IFS=$'\t' read -r _ _ ll check prefix entry result envs mlir <<<"$row"
[ "$prefix" = "-" ] && prefix=CHECK
[ "$envs" = "-" ] && envs=""
[ "$mlir" != "-" ] && [ -f "$mlir" ] || { echo "bench-harness: $manifest has no LLVM dialect file for $program (make corpus)" >&2; exit 2; }
mapfile -d '' harness_cmd < <(python3 "$lib/harness.py" row "$manifest" "$program" --harness "$harness" \
  --runtime "$runtime" --libs "$libs" -- --repeat "$n" --json)
[ "${#harness_cmd[@]}" -gt 0 ] || { echo "bench-harness: no harness command for $program" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
rate() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.1f", n / t }'; }

# jit-harness: one process, N checked runs, RSS sampled every 10 ms.
t0=$(now)
"${harness_cmd[@]}" >"$work/harness.json" &
pid=$!
: >"$work/rss"
while kill -0 "$pid" 2>/dev/null; do
  awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null >>"$work/rss" || true
  sleep 0.01
done
status=0
wait "$pid" || status=$?
t1=$(now)
harness_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
if [ "$status" -ne 0 ]; then
  echo "bench-harness: jit-harness failed (exit $status): $(cat "$work/harness.json")" >&2
  exit 1
fi

# mlir-cpu-runner: one process per run, each output checked by FileCheck.
t0=$(now)
for ((i = 0; i < runner_n; i++)); do
  env $envs "$llvm_bin/mlir-cpu-runner" "$mlir" -O0 -e "$entry" \
    -entry-point-result="$result" -shared-libs="$libs,$runtime" \
    | "$llvm_bin/FileCheck" "$check" --check-prefix="$prefix" \
    || { echo "bench-harness: mlir-cpu-runner run $((i + 1)) failed its check" >&2; exit 1; }
done
t1=$(now)
runner_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')

hr=$(rate "$n" "$harness_s")
rr=$(rate "$runner_n" "$runner_s")
ratio=$(awk -v a="$hr" -v b="$rr" 'BEGIN { printf "%.0f", a / b }')
echo "program: $program ($ll) against $runtime"
echo "jit-harness:     $n checked runs in ${harness_s}s (JIT compile included): $hr runs/s"
echo "                 $(cat "$work/harness.json")"
echo "mlir-cpu-runner: $runner_n checked runs (runner | FileCheck) in ${runner_s}s: $rr runs/s"
echo "ratio:           ${ratio}x"
# Growth is measured from the sample at 20% of the samples (the JIT and the
# runtime's threads are up by then) to the last one.
awk -v n="$n" '
  { v[NR] = $1; if ($1 > max) max = $1 }
  END {
    if (NR < 5) { print "rss: too few samples (" NR "); use a larger -n"; exit }
    q = int(NR / 5); if (q < 1) q = 1
    printf "rss (KiB):       %d samples over %d runs: at 20%% %d, at 50%% %d, last %d, max %d, growth after 20%% %+d\n",
      NR, n, v[q], v[int(NR / 2)], v[NR], max, v[NR] - v[q]
  }' "$work/rss"
