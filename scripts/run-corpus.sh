#!/usr/bin/env bash
# Runs every program of the lowered corpus (target/corpus/manifest.tsv,
# written by `make corpus`) through jit-harness, N checked runs each, against
# one runtime library; one result row per program, then a summary line.
# This is `make run`.
#
#   scripts/run-corpus.sh --harness H --runtime SO --runner-utils A.so,B.so
#       [--kind rust|cxx] [--llvm-prefix P] [--repeat N] [--timeout S] MANIFEST
#
# The runtime's kind (lit's feature rust-runtime or cxx-runtime) is cxx
# when SO lies under the LLVM prefix, unless --kind says. Like lit, per
# program and from the manifest's columns (read by their header names):
#   requires     skipped unless every listed feature is the runtime's kind
#   unsupported  skipped when it lists the runtime's kind (for example a
#                program that hangs there: it is never started)
#   xfail        a failure on a listed kind is expected and not counted
# Exit status: 0 when no program failed, 1 otherwise, 2 on bad arguments.
set -uo pipefail

usage() { sed -n '7,9p' "$0" | sed 's/^# *//' >&2; exit 2; }
harness="" runtime="" utils="" kind="" prefix=/usr/lib/llvm-19 repeat=100 timeout=30 manifest=""
while [ $# -gt 0 ]; do
  case "$1" in
    --harness) harness=$2; shift 2 ;;
    --runtime) runtime=$2; shift 2 ;;
    --runner-utils) utils=$2; shift 2 ;;
    --kind) kind=$2; shift 2 ;;
    --llvm-prefix) prefix=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run-corpus: unknown option $1" >&2; usage ;;
    *) [ -z "$manifest" ] || usage; manifest=$1; shift ;;
  esac
done
[ -n "$harness" ] && [ -n "$runtime" ] && [ -n "$manifest" ] || usage
for f in "$harness" "$runtime" "$manifest"; do
  [ -e "$f" ] || { echo "run-corpus: $f not found" >&2; exit 2; }
done
if [ -z "$kind" ]; then
  case "$(realpath "$runtime")" in "$(realpath "$prefix")"/*) kind=cxx ;; *) kind=rust ;; esac
fi
case "$kind" in rust|cxx) ;; *) echo "run-corpus: --kind must be rust or cxx" >&2; exit 2 ;; esac
feature="$kind-runtime"

# lists LIST FEATURE: true when the comma-separated LIST names FEATURE.
lists() { [[ ",$1," == *",$2,"* ]]; }
# only LIST FEATURE: true when every feature of LIST is FEATURE (the one
# feature a run has).
only() { local f; IFS=, read -r -a fs <<<"$1"; for f in "${fs[@]}"; do [ "$f" = "$2" ] || return 1; done; }

declare -A col=()
total=0 bad=0 skipped=0 xfailed=0
echo "jit-harness: $repeat runs per program against $runtime ($feature)"
while IFS=$'\t' read -r -a row; do
  if [ "${#col[@]}" -eq 0 ]; then
    # The header: "#name<TAB>ll<TAB>...".
    row[0]=${row[0]#\#}
    for i in "${!row[@]}"; do col[${row[$i]}]=$i; done
    for c in name ll check_file check_prefix entry env requires xfail unsupported; do
      [ -n "${col[$c]:-}" ] || { echo "run-corpus: $manifest has no column $c" >&2; exit 2; }
    done
    continue
  fi
  get() { local v=${row[${col[$1]}]:-}; [ "$v" = "-" ] && v=""; printf '%s' "$v"; }
  name=$(get name)
  [ -n "$name" ] || continue
  requires=$(get requires) unsupported=$(get unsupported) xfail=$(get xfail)
  if [ -n "$requires" ] && ! only "$requires" "$feature"; then
    printf '%s: skipped (requires %s)\n' "$name" "$requires"; skipped=$((skipped + 1)); continue
  fi
  if [ -n "$unsupported" ] && lists "$unsupported" "$feature"; then
    printf '%s: skipped (unsupported on %s)\n' "$name" "$feature"; skipped=$((skipped + 1)); continue
  fi
  args=(--check "$(get check_file)" --entry "$(get entry)" --name "$name")
  [ -n "$(get check_prefix)" ] && args+=(--check-prefix "$(get check_prefix)")
  read -r -a envs <<<"$(get env)"
  total=$((total + 1))
  if env ${envs[@]+"${envs[@]}"} "$harness" "$(get ll)" --runtime "$runtime" --shared-lib "$utils" \
       --repeat "$repeat" --timeout "$timeout" "${args[@]}" </dev/null; then
    :
  elif [ -n "$xfail" ] && lists "$xfail" "$feature"; then
    echo "$name: expected failure on $feature (xfail)"; xfailed=$((xfailed + 1))
  else
    bad=$((bad + 1))
  fi
done <"$manifest"
echo "jit-harness: $((total - bad - xfailed)) passed, $bad failed, $xfailed expected failures, $skipped skipped"
[ "$bad" -eq 0 ]
