#!/usr/bin/env bash
# The ahead-of-time test (docs/aot.md): `make aot-test`, part of `make test`.
# Uses the library as a user gets it, installed in PREFIX (`make install
# PREFIX=...`), found through PKG_CONFIG_PATH=PREFIX/lib/pkgconfig:
#  1. pkg-config knows both modules, at the crate's version;
#  2. the header compiles as C99 and as C++11 and C++17 (-Werror), declares
#     exactly the library's exported functions (but the runners' own
#     hooks), and under C++17 the same declarations as MLIR's header;
#  3. every program of the lowered corpus (MANIFEST, from `make corpus`) is
#     compiled ahead of time by scripts/corpus/aot_compile.sh: opt
#     -passes='default<O1>' (which runs the coroutine passes), llc, the
#     entry renamed and called from
#     aot-tests/main.c; linked against the shared library and against the
#     static one with `pkg-config --libs`; run; its stdout FileChecked and
#     nothing left alive;
#  4. process exit without the destroy hook (aot-tests/exit.c), both
#     linkages.
# Prints one line per check, then "aot-test: N passed, M failed".
#
# Usage: scripts/corpus/aot_test.sh --prefix DIR --manifest FILE
#            [--llvm-prefix P] [--out DIR] [NAME...]
#   NAME...  only these corpus programs (default: all of the manifest)
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
lib=$root/mlir-tests/lib
prefix="" manifest="" llvm=$(python3 "$lib/toolchain.py" prefix) out=$root/target/aot only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --manifest) manifest=$2; shift 2 ;;
    --llvm-prefix) llvm=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "aot-test: unknown option $1" >&2; exit 2 ;;
    *) only+=("$1"); shift ;;
  esac
done
if [ -z "$prefix" ] || [ ! -f "$manifest" ]; then
  echo "aot-test: need --prefix DIR (an install) and --manifest FILE (make corpus)" >&2
  exit 2
fi
prefix=$(cd "$prefix" && pwd)
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
CC=${CC:-cc}
CXX=${CXX:-c++}
FILECHECK=$llvm/bin/FileCheck
# The runner utils (printMemref..., the vector.print helpers) by full path:
# never -L$llvm/lib, whose libmlir_async_runtime.so is the C++ runtime. The
# rpath to our library comes first for the same reason.
UTILS=("$llvm/lib/libmlir_c_runner_utils.so" "$llvm/lib/libmlir_runner_utils.so" "-Wl,-rpath,$llvm/lib" -lm)
mkdir -p "$out"
# No executable of an earlier run may stand in for one that fails to build.
rm -f "$out"/*.shared "$out"/*.static "$out"/*.o "$out"/*.bc
passed=0 failed=0

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() {
  echo "FAIL $1: $2"
  shift 2
  local f
  for f in "$@"; do [ -s "$f" ] && sed -n '1,15s/^/    /p' "$f"; done
  failed=$((failed + 1))
}
# check NAME COMMAND...: one check that passes when COMMAND succeeds.
check() {
  local name=$1 log="$out/$1.log"
  shift
  if "$@" >"$log" 2>&1; then pass "$name"; else fail "$name" "$*" "$log"; fi
}

# counted_once FILE: the counters table was printed exactly once.
counted_once() { [ "$(grep -c 'counters since process start' "$1")" -eq 1 ]; }
# trace_tasks FILE N: the trace file is JSON with N task events.
trace_tasks() {
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["traceEvents"]; n=sum(1 for x in e if x.get("cat")=="task"); sys.exit(0 if n==int(sys.argv[2]) else "%d task events" % n)' "$1" "$2"
}

# ---- 1. pkg-config ----------------------------------------------------------
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/runtime/Cargo.toml")
for pc in mlir-async-runtime mlir-async-runtime-static; do
  check "pkg-config-$pc" test "$(pkg-config --modversion "$pc" 2>&1)" = "$version"
done
libdir=$(pkg-config --variable=libdir mlir-async-runtime)
read -r -a CFLAGS <<<"$(pkg-config --cflags mlir-async-runtime)"
read -r -a LIBS_SHARED <<<"$(pkg-config --libs mlir-async-runtime)"
read -r -a LIBS_STATIC <<<"$(pkg-config --libs mlir-async-runtime-static)"
LIBS_SHARED+=("-Wl,-rpath,$libdir")

# ---- 2. the header ----------------------------------------------------------
header=$prefix/include/mlir-async-runtime/AsyncRuntime.h
check header-c99 "$CC" -std=c99 -pedantic -Wall -Wextra -Werror "${CFLAGS[@]}" \
  -c "$root/aot-tests/header_c.c" -o "$out/header_c.o"
check header-c++11 "$CXX" -std=c++11 -pedantic -Wall -Wextra -Werror "${CFLAGS[@]}" \
  -x c++ -fsyntax-only "$header"
check header-same-as-mlir "$CXX" -std=c++17 -Wall -Wextra -Werror "${CFLAGS[@]}" \
  -I"$llvm/include" -fsyntax-only "$root/aot-tests/header_mlir.cpp"
# abi_names: the ABI's function names in a symbol list (stdin);
# declared_names FILE: those that FILE declares (a name followed by "(").
ABI_RE='(mlirAsyncRuntim[A-Za-z]+|rust_mlir_async_runtime_[a-z_]+|__mlir_[a-z_]+)'
abi_names() { grep -xE "$ABI_RE" | sort -u; }
declared_names() { grep -oE "\\b$ABI_RE *\\(" "$1" | tr -d ' (' | sort -u; }
# The runners' hooks stay out of the header: init takes a C++ reference,
# and __mlir_runner_* are MLIR 14-16's names of the same hooks.
runner_only='^(__mlir_execution_engine_init|__mlir_runner_init|__mlir_runner_destroy)$'
nm -D --defined-only "$libdir/libmlir_async_runtime.so" | awk '{print $3}' | abi_names \
  | grep -vE "$runner_only" >"$out/exports-shared.txt"
nm --defined-only "$libdir/libmlir_async_runtime.a" 2>/dev/null | awk '$2 == "T" {print $3}' \
  | abi_names | grep -vE "$runner_only" >"$out/exports-static.txt"
declared_names "$header" >"$out/header-names.txt"
declared_names "$llvm/include/mlir/ExecutionEngine/AsyncRuntime.h" >"$out/mlir-names.txt"
check header-declares-the-shared-exports diff "$out/header-names.txt" "$out/exports-shared.txt"
check header-declares-the-static-exports diff "$out/header-names.txt" "$out/exports-static.txt"
check header-has-every-mlir-function bash -c "comm -23 '$out/mlir-names.txt' '$out/header-names.txt' | (! grep .)"

# ---- 3. corpus programs ahead of time ----------------------------------------
"$CC" -std=c99 -Wall -Werror "${CFLAGS[@]}" -c "$root/aot-tests/main.c" -o "$out/main.o" \
  || { fail aot-main "cannot compile aot-tests/main.c"; }

# run_program NAME LINK EXE CHECK_FILE PREFIX ENV...: runs, checks, reports.
run_program() {
  local name=$1 link=$2 exe=$3 check_file=$4 check_prefix=$5
  shift 5
  local stdout="$out/$name.$link.out" stderr="$out/$name.$link.err" status
  env "$@" timeout 120 "$exe" </dev/null >"$stdout" 2>"$stderr"
  status=$?
  if [ $status -ne 0 ]; then
    echo "exit status $status"; return 1
  fi
  if ! "$FILECHECK" "$check_file" --check-prefix="$check_prefix" --input-file "$stdout" 2>"$out/$name.$link.filecheck"; then
    echo "FileCheck failed"; cat "$out/$name.$link.filecheck"; return 1
  fi
  if ! grep -q '^aot-main: idle=1 live tokens=0 values=0 groups=0 tasks=0$' "$stderr"; then
    echo "not idle, or objects left alive:"; grep '^aot-main' "$stderr"; return 1
  fi
  return 0
}

# The manifest's rows with lit's verdict for our runtime (the one reader and
# skip rule: mlir-tests/lib/manifest.py, rules.py); '-' is an empty cell.
rows=$(python3 "$lib/manifest.py" rows "$manifest" ${only[@]+"${only[@]}"} --runtime-kind rust \
  --llvm-prefix "$llvm" --columns name,ll,check_file,check_prefix,entry,entry_result,env) \
  || { echo "aot-test: cannot read $manifest" >&2; exit 2; }
while IFS=$'\t' read -r expected why name ll check_file check_prefix entry entry_result env; do
  [ -n "$name" ] || continue
  if [ "$expected" = unsupported ]; then echo "SKIP $name: $why"; continue; fi
  if [ "$entry_result" != void ]; then echo "SKIP $name: entry returns $entry_result, main.c calls a void entry"; continue; fi
  [ "$check_prefix" != - ] || check_prefix=CHECK
  [ "$env" != - ] || env=""
  read -r -a envs <<<"$env"
  obj=$out/$name.o
  # opt (its default<O1> pipeline runs the coroutine passes, which llc
  # alone cannot do), llc, the entry renamed: the one recipe.
  if ! bash "$root/scripts/corpus/aot_compile.sh" --llvm-prefix "$llvm" "$ll" "$obj" "$entry" aot_entry \
       2>"$out/$name.compile.log"; then
    fail "$name compile" "opt/llc/llvm-objcopy failed" "$out/$name.compile.log"; continue
  fi
  for link in shared static; do
    exe=$out/$name.$link
    if [ $link = shared ]; then libs=("${LIBS_SHARED[@]}"); else libs=("${LIBS_STATIC[@]}"); fi
    if ! "$CC" -o "$exe" "$out/main.o" "$obj" "${libs[@]}" "${UTILS[@]}" 2>"$out/$name.$link.link.log"; then
      fail "$name $link" "link failed" "$out/$name.$link.link.log"; continue
    fi
    if run_program "$name" $link "$exe" "$check_file" "$check_prefix" ${envs[@]+"${envs[@]}"} >"$out/$name.$link.why" 2>&1; then
      pass "$name $link"
    elif [ "$expected" = xfail ]; then
      echo "XFAIL $name $link"
    else
      fail "$name $link" "see $out/$name.$link.{out,err}" "$out/$name.$link.why" "$out/$name.$link.err"
    fi
  done
done <<<"$rows"

# A compiled program that never calls the destroy hook still writes its
# trace and counters at exit, with its main thread's waits.
traced_program() {
  local exe=$1 trace=$out/traced.json
  rm -f "$trace"
  MLIR_ASYNC_RUNTIME_TRACE=$trace MLIR_ASYNC_RUNTIME_STATS=1 timeout 120 "$exe" </dev/null >/dev/null 2>"$out/traced.err" &&
    counted_once "$out/traced.err" &&
    python3 - "$trace" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
tasks = [e for e in events if e.get("cat") == "task"]
waits = [e for e in events if e.get("cat") == "wait"]
assert tasks, "no task events"
# A task runs on a pool worker, or (route "waiter") on the main thread while
# it waits in a blocking await (threads/README.md, "A waiting thread runs its producers").
assert all(names.get(e["tid"], "").startswith("mlir-async-")
           or (e["args"]["route"] == "waiter" and names.get(e["tid"]) == "main") for e in tasks), \
    "a task outside the pool that no waiting thread ran"
assert waits and all(names.get(e["tid"]) == "main" for e in waits), \
    "the waits are not all the main thread's: %s" % sorted({names.get(e["tid"]) for e in waits})
PY
}
if [ -x "$out/parallel-for-1d.1.shared" ]; then
  check trace-of-a-compiled-program-written-at-exit traced_program "$out/parallel-for-1d.1.shared"
fi

# The shared executables load our library from PREFIX, not the C++ one of
# the same file name in $llvm/lib; the static ones load none.
some=$(ls "$out"/*.shared 2>/dev/null | head -1)
if [ -n "$some" ]; then
  check shared-links-our-library bash -c "ldd '$some' | grep -q '=> $libdir/libmlir_async_runtime.so '"
  check static-needs-no-runtime-library bash -c "! readelf -d '${some%.shared}.static' | grep -q 'libmlir_async_runtime'"
fi

# ---- 4. process exit without the destroy hook ----------------------------------
exit_c=$root/aot-tests/exit.c
# exit_case MODE STATUS TAG [ENV...]: runs exit.$link MODE with ENV; checks
# its exit status and FileChecks its stdout (prefix: MODE in capitals).
exit_case() {
  local mode=$1 want=$2 tag=$3 base status
  shift 3
  base=$out/exit-$mode$tag.$link
  env "$@" timeout 30 "$out/exit.$link" "$mode" </dev/null >"$base.out" 2>"$base.err"
  status=$?
  [ $status -eq "$want" ] || { echo "exit status $status, expected $want"; cat "$base.err"; return 1; }
  "$FILECHECK" "$exit_c" --check-prefix="$(echo "$mode" | tr a-z- A-Z-)" --input-file "$base.out"
}
queued_observed() {
  local trace=$out/exit-queued.$link.json
  rm -f "$trace"
  exit_case queued 0 -observed MLIR_ASYNC_RUNTIME_TRACE="$trace" MLIR_ASYNC_RUNTIME_STATS=1 &&
    trace_tasks "$trace" 8 && counted_once "$out/exit-queued-observed.$link.err" &&
    grep -qE '^  tasks executed +8$' "$out/exit-queued-observed.$link.err"
}
from_task_observed() {
  local trace=$out/exit-from-task.$link.json
  rm -f "$trace"
  exit_case from-task 7 "" MLIR_ASYNC_RUNTIME_TRACE="$trace" MLIR_ASYNC_RUNTIME_STATS=1 &&
    trace_tasks "$trace" 0 && counted_once "$out/exit-from-task.$link.err"
}
destroy_observed() {
  exit_case destroy 0 "" MLIR_ASYNC_RUNTIME_STATS=1 && counted_once "$out/exit-destroy.$link.err"
}
for link in shared static; do
  if [ $link = shared ]; then libs=("${LIBS_SHARED[@]}"); else libs=("${LIBS_STATIC[@]}"); fi
  if ! "$CC" -std=c11 -Wall -Wextra -Werror "${CFLAGS[@]}" -o "$out/exit.$link" "$exit_c" "${libs[@]}" \
       2>"$out/exit.$link.link.log"; then
    fail "exit $link" "cannot build aot-tests/exit.c" "$out/exit.$link.link.log"; continue
  fi
  check "exit-queued-tasks-run-at-exit.$link" exit_case queued 0 ""
  check "exit-queued-trace-and-counters-written.$link" queued_observed
  check "exit-from-a-task-does-not-wait.$link" from_task_observed
  check "exit-after-destroy-does-nothing-more.$link" destroy_observed
done

echo "aot-test: $passed passed, $failed failed"
[ $failed -eq 0 ]
