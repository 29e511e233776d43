#!/usr/bin/env bash
# The drop-in shapes of issue 39 (runtime/tests/drop_in.rs) against MLIR's
# C++ runtime and ours, through the C ABI (runtime/tests/c/drop_in_shapes.c,
# loaded with dlopen): what each runtime does with each shape, as a table
# on stdout. Our runtime runs in its default mode, with each opt-out, and
# with the old policy (WAITERS_RUN_TASKS=any) for contrast. A shape that
# does not finish within its limit is "hung (killed at N s)".
#
#   scripts/check/drop_in_cxx.sh [--cxx LIB] [--ours LIB] [--limit S]
#
# Exit status: 0 when every shape finishes on our runtime in the default
# mode and each opt-out with the results the C++ runtime gives (the lines
# match once their counts are compared: see `verdict` below); 1 otherwise;
# 2 for bad arguments or a missing library.
set -u
cd "$(dirname "$0")/../.."

CXX_LIB="${LLVM_PREFIX:-/usr/lib/llvm-19}/lib/libmlir_async_runtime.so"
OURS_LIB=target/release/libmlir_async_runtime.so
LIMIT=40
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case $1 in
        --cxx) CXX_LIB=$2; shift 2 ;;
        --ours) OURS_LIB=$2; shift 2 ;;
        --limit) LIMIT=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "drop_in_cxx: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
for lib in "$CXX_LIB" "$OURS_LIB"; do
    [ -f "$lib" ] || { echo "drop_in_cxx: no library $lib" >&2; exit 2; }
done

bin=target/drop-in-shapes/drop_in_shapes
mkdir -p "$(dirname "$bin")"
cc -O1 -std=c11 -Wall -Werror -o "$bin" runtime/tests/c/drop_in_shapes.c -ldl -lm -pthread || exit 2

# run LIB SHAPE [ENV=VALUE...]: the shape's line, or why there is none.
run() {
    local lib=$1 shape=$2 out status
    shift 2
    out=$(env "$@" timeout -s KILL "$LIMIT" "$bin" "$lib" "$shape" 2>/dev/null)
    status=$?
    if [ $status -eq 137 ]; then
        echo "hung (killed at $LIMIT s)"
    elif [ $status -ne 0 ] || [ -z "$out" ]; then
        echo "failed (exit $status)"
    else
        echo "${out#*: }"
    fi
}

# The figures that decide a shape, from its line: whether it completed
# and its counts, leaving out timings (shape 3's slowest await).
verdict() { sed 's/; slowest await.*//' <<<"$1"; }

modes=("default:" "WAITERS_RUN_TASKS=0:MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=0"
       "TASK_STACKS=0:MLIR_ASYNC_RUNTIME_TASK_STACKS=0" "WAITERS_RUN_TASKS=any:MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=any")
names=("lock held across an await" "signal after the await" "unrelated long task"
       "floating-point state" "reported workers")
echo "| shape | C++ ($CXX_LIB) | ours, default | ours, WAITERS_RUN_TASKS=0 | ours, TASK_STACKS=0 | ours, =any (the old policy, opt-in) |"
echo "|---|---|---|---|---|---|"
failures=0
for shape in 1 2 3 4 5; do
    cxx=$(run "$CXX_LIB" $shape)
    row="| $shape ${names[$((shape - 1))]} | $cxx"
    for mode in "${modes[@]}"; do
        name=${mode%%:*} env=${mode#*:}
        if [ -n "$env" ]; then ours=$(run "$OURS_LIB" $shape "$env"); else ours=$(run "$OURS_LIB" $shape); fi
        row="$row | $ours"
        if [ "$name" != "WAITERS_RUN_TASKS=any" ] && [ "$(verdict "$ours")" != "$(verdict "$cxx")" ]; then
            echo "drop_in_cxx: shape $shape, $name: ours \"$ours\", C++ \"$cxx\"" >&2
            failures=$((failures + 1))
        fi
    done
    echo "$row |"
done
[ $failures -eq 0 ]
