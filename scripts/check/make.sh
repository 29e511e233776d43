#!/usr/bin/env bash
# Checks the build itself (`make check-make`, part of `make test`):
#  1. `make help` lists every target of Makefile and mk/*.mk exactly once,
#     with a description, and nothing else; every target is .PHONY;
#  2. variables: none is defined in two files; every $(VAR) that an mk/
#     file uses is defined in it or named in its header line "Variables
#     from the top Makefile: ..." (and defined there), and every name in
#     that line is used; LLVM_PREFIX set to another prefix reaches every
#     recipe and the variables cargo's build scripts read;
#  3. the network: `make -n build install` shows no step that reaches it
#     (pip, apt-get, curl, wget, cargo fetch, setup.sh, ...), `make -n run`
#     only the set-up (which, with the toolchain present, runs without a
#     network: checked under `unshare -n`), `make -n test` the set-up,
#     only --offline uses of the other MLIR versions' cache and only
#     `pip --isolated CMD --no-index` (make wheel), cargo runs
#     offline (CARGO_NET_OFFLINE=true), and, where `unshare -n` is allowed,
#     `make install` (DESTDIR staged) really runs without a network and
#     installs what it should, and `make wheel` builds the wheel;
#  4. make run's loop (scripts/corpus/run.py) skips programs UNSUPPORTED on
#     the runtime under test, and those that REQUIRE another, and lets XFAIL
#     ones fail;
#  5. no dependency declared in a Cargo.toml is unused (cargo-machete).
# Prints one line per check, then "check-make: N passed, M failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
MAKE=${MAKE:-make}
passed=0 failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; shift; printf '    %s\n' "$@"; failed=$((failed + 1)); }
files=(Makefile mk/*.mk)

# ---- 1. make help ------------------------------------------------------------
phony=$(sed -n 's/^\.PHONY:[[:space:]]*//p' "${files[@]}" | tr ' ' '\n' | grep . | sort)
# Every rule with a plain name (not a file path or a variable).
rules=$(grep -hoE '^[a-z][a-zA-Z0-9_.-]*:([^=]|$)' "${files[@]}" | sed 's/:.*//' | sort -u)
help=$($MAKE --no-print-directory -s help)
listed=$(echo "$help" | sed -n 's/^  \([a-zA-Z0-9_.-]*\)  *[^ ].*$/\1/p' | sort)
if [ "$rules" = "$listed" ]; then
  pass "make help lists the $(echo "$rules" | wc -l) targets, once each, with a line each"
else
  fail "make help and the rules differ (< rule not listed, > listed without a rule)" \
    "$(diff <(echo "$rules") <(echo "$listed") | grep '^[<>]' | tr '\n' ' ')"
fi
[ "$rules" = "$phony" ] && pass "every target is .PHONY" \
  || fail "targets and .PHONY differ:" "$(diff <(echo "$rules") <(echo "$phony") | grep '^[<>]' | tr '\n' ' ')"
dups=$(echo "$listed" | uniq -d)
[ -z "$dups" ] && pass "make help has no duplicate" || fail "make help lists twice: $dups"

# ---- 2. variables ---------------------------------------------------------------
if problems=$(python3 - "${files[@]}" <<'PY'
import re, sys
files = sys.argv[1:]
# Make's own variables and the environment's.
builtin = {'CURDIR', 'MAKE', 'MAKEFILE_LIST', 'MAKECMDGOALS', 'MAKEFLAGS', 'SHELL', 'HOME', 'PATH', 'CC'}  # CC: make's own default C compiler
DEF = re.compile(r'^([A-Z_][A-Z0-9_]*)\s*(?::=|\?=|\+=|=)', re.M)
USE = re.compile(r'(?<!\$)\$\(([A-Z_][A-Z0-9_]*)\)')
defs, uses, declared = {}, {}, {}
for f in files:
    text = open(f).read()
    defs[f] = set(DEF.findall(text))
    code = '\n'.join(l for l in text.splitlines() if not l.lstrip().startswith('#'))
    uses[f] = set(USE.findall(code)) - builtin
    # The header: the comment lines before the first other line.
    header = ' '.join(l.lstrip('#').strip() for l in
                      re.match(r'(?:#[^\n]*\n)*', text).group(0).splitlines())
    m = re.search(r'Variables from the top Makefile:([^.]*)\.', header)
    declared[f] = set(re.findall(r'[A-Z_][A-Z0-9_]*', m.group(1))) if m else set()
bad = []
owners = {}
for f in files:
    for v in defs[f]:
        owners.setdefault(v, []).append(f)
for v, fs in sorted(owners.items()):
    if len(fs) > 1:
        bad.append('%s is defined in %s' % (v, ' and '.join(fs)))
top = defs['Makefile']
for v in sorted(uses['Makefile'] - top):
    bad.append('Makefile uses %s without defining it' % v)
for f in files[1:]:
    for v in sorted(uses[f] - defs[f] - declared[f]):
        bad.append('%s uses %s without defining it or naming it in its header' % (f, v))
    for v in sorted(declared[f] - top):
        bad.append('%s names %s in its header; the top Makefile does not define it' % (f, v))
    for v in sorted(declared[f] - uses[f]):
        bad.append('%s names %s in its header but does not use it' % (f, v))
print('\n'.join(bad))
sys.exit(1 if bad else 0)
PY
); then
  pass "no variable is defined twice; every mk/ file declares the variables it uses"
else
  fail "variables:" "$problems"
fi

# ---- 2b. LLVM_PREFIX is the one toolchain knob --------------------------------------
# With another prefix, no command of the targets that take the toolchain
# names the default one, and cargo's build scripts get the variables derived
# from it (a variable set in the environment wins over .cargo/config.toml).
knob=/nonexistent/llvm-knob
goals=(test check lit-cxx run compat bench bench-instr bench-harness explore-table stress fuzz-lowering)
dry=$(LLVM_PREFIX=$knob $MAKE --no-print-directory -n "${goals[@]}" 2>&1)
default=$(sed -n 's/^LLVM_PREFIX *?= *//p' Makefile)
stale=$(echo "$dry" | grep -nF "$default" || true)
envs=$(LLVM_PREFIX=$knob $MAKE --no-print-directory -s -f Makefile -f - print-env <<<'print-env: ; @echo "$$LLVM_PREFIX $$LLVM_SYS_191_PREFIX $$MLIR_SYS_190_PREFIX $$TABLEGEN_190_PREFIX $$LIBCLANG_PATH"' 2>&1)
if [ -z "$stale" ] && [ "$envs" = "$knob $knob $knob $knob $knob/lib" ] && echo "$dry" | grep -q -- "--param llvm_prefix=$knob"; then
  pass "LLVM_PREFIX=$knob reaches every recipe of ${#goals[@]} goals ($(echo "$dry" | grep -c "$knob") lines) and cargo's build scripts"
else
  fail "LLVM_PREFIX does not reach everything (recipes naming $default; cargo's variables: $envs):" ${stale:+"$stale"}
fi

# ---- 3. the network ------------------------------------------------------------
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
NET_STEP='\b(pip3?|apt-get|apt|curl|wget|rustup|npm|git (clone|fetch|pull))\b|cargo fetch|setup\.sh|CARGO_NET_OFFLINE=false'
dry=$($MAKE --no-print-directory -n build install PREFIX=/usr DESTDIR="$stage" 2>&1)
net=$(echo "$dry" | grep -nE "$NET_STEP" || true)
if [ -z "$net" ]; then pass "make -n build install: no network step ($(echo "$dry" | wc -l) lines)"; else fail "make -n build install shows a network step:" "$net"; fi
# `make run`, the README's run command, calls the set-up first (as `make
# test` does); with the toolchain present the set-up does nothing, offline.
dry=$($MAKE --no-print-directory -n run 2>&1)
net=$(echo "$dry" | grep -nE "$NET_STEP" | grep -vE '^[0-9]+:bash scripts/toolchain/setup\.sh$' || true)
if [ -z "$net" ] && echo "$dry" | grep -qx 'bash scripts/toolchain/setup.sh'; then
  pass "make -n run: the set-up, then no network step"
else
  fail "make -n run: expected the set-up and no other network step:" "$net"
fi
# `make test` too: the set-up is its one network step; the other MLIR
# versions (compat-ci, fuzz-lowering-ci) come from the cache the set-up
# filled, read with --offline, and pip runs only as `pip --isolated CMD
# --no-index` (make wheel: no index, no configuration that could name one).
dry=$($MAKE --no-print-directory -n test 2>&1)
pip_offline='\bpip --isolated [a-z]+ --no-index\b'
net=$(echo "$dry" | grep -nE "$NET_STEP" | grep -vE '^[0-9]+:bash scripts/toolchain/setup\.sh$' | grep -vE "$pip_offline" || true)
fetch=$(echo "$dry" | grep -nE 'compat\.py|symbol_binding\.py|fetch_mlir\.sh|fetch_mlir_source\.sh' || true)
online=$(echo "$fetch" | grep -v -- '--offline' || true)
if [ -z "$net$online" ] && [ -n "$fetch" ] && echo "$dry" | grep -qx 'bash scripts/toolchain/setup.sh'; then
  pass "make -n test: the set-up, then no network step ($(echo "$fetch" | wc -l) uses of the MLIR cache, all --offline; $(echo "$dry" | grep -cE "$pip_offline") of pip, all --isolated --no-index)"
else
  fail "make -n test: a network step besides the set-up:" ${net:+"$net"} ${online:+"$online"}
fi
offline=$($MAKE --no-print-directory -s -f Makefile -f - print-offline <<<'print-offline: ; @echo "$$CARGO_NET_OFFLINE"' 2>&1)
[ "$offline" = true ] && pass "cargo runs with CARGO_NET_OFFLINE=true" || fail "CARGO_NET_OFFLINE in recipes is '$offline', not true"
if unshare -n true 2>/dev/null; then
  if unshare -n bash scripts/toolchain/setup.sh >"$stage.log" 2>&1; then
    pass "with the toolchain present, the set-up runs without a network"
  else
    fail "the set-up failed without a network (is the toolchain complete?):" "$(tail -5 "$stage.log")"
  fi
  if unshare -n $MAKE --no-print-directory install PREFIX=/usr DESTDIR="$stage" >"$stage.log" 2>&1; then
    pass "make install ran in a network namespace with no network"
    missing=()
    for f in lib/libmlir_async_runtime.so lib/libmlir_async_runtime.a include/mlir-async-runtime/AsyncRuntime.h \
             lib/pkgconfig/mlir-async-runtime.pc lib/pkgconfig/mlir-async-runtime-static.pc bin/jit-harness bin/trace-view; do
      [ -e "$stage/usr/$f" ] || missing+=("$f")
    done
    [ "${#missing[@]}" -eq 0 ] && pass "DESTDIR=... PREFIX=/usr installs under DESTDIR/usr" \
      || fail "missing under DESTDIR/usr:" "${missing[@]}"
    grep -qx 'prefix=/usr' "$stage/usr/lib/pkgconfig/mlir-async-runtime.pc" \
      && pass "the staged .pc files name PREFIX, not DESTDIR" \
      || fail "mlir-async-runtime.pc: $(grep '^prefix=' "$stage/usr/lib/pkgconfig/mlir-async-runtime.pc")"
  else
    fail "make install failed without a network:" "$(tail -5 "$stage.log")"
  fi
  # make wheel too: pip, setuptools-rust, cargo and auditwheel, offline.
  if unshare -n $MAKE --no-print-directory wheel >"$stage.log" 2>&1; then
    pass "make wheel ran in a network namespace with no network: $(cd target/wheels && ls mlir_async_rs-*.whl)"
  else
    fail "make wheel failed without a network:" "$(tail -5 "$stage.log")"
  fi
  rm -f "$stage.log"
else
  echo "SKIP make install and make wheel without a network: unshare -n is not permitted here"
fi

# ---- 4. make run honours the manifest's markers ----------------------------------
# scripts/corpus/run.py with a stand-in harness that logs the programs it is
# started on and fails on the one named "fails".
fake=$stage/fake-harness
printf '#!/bin/sh\necho "$1" >>%s/started\ncase "$1" in *fails.ll) exit 1;; esac\n' "$stage" >"$fake"
chmod +x "$fake"
touch "$stage/runtime.so"
{
  printf '#name\tll\tcheck_file\tcheck_prefix\tentry\tentry_result\tenv\trequires\txfail\tunsupported\tsource\n'
  printf 'plain\tplain.ll\tc\t-\tmain\tvoid\t-\t-\t-\t-\ts\n'
  printf 'hangs\thangs.ll\tc\t-\tmain\tvoid\t-\t-\t-\tcxx-runtime\ts\n'
  printf 'ours\tours.ll\tc\t-\tmain\tvoid\t-\trust-runtime\t-\t-\ts\n'
  printf 'fails\tfails.ll\tc\t-\tmain\tvoid\t-\t-\tcxx-runtime\t-\ts\n'
} >"$stage/manifest.tsv"
run_log=$(python3 scripts/corpus/run.py --harness "$fake" --runtime "$stage/runtime.so" --kind cxx "$stage/manifest.tsv" 2>&1)
status=$?
if [ $status -eq 0 ] && [ "$(sort "$stage/started" | tr '\n' ' ')" = "fails.ll plain.ll " ] \
   && echo "$run_log" | grep -q '^hangs: skipped (unsupported on cxx-runtime)$' \
   && echo "$run_log" | grep -q '^jit-harness: 1 passed, 0 failed, 1 expected failures, 2 skipped$'; then
  pass "make run (cxx-runtime) never starts an UNSUPPORTED program, skips REQUIRES, allows XFAIL"
else
  fail "scripts/corpus/run.py --kind cxx (status $status, started: $(tr '\n' ' ' <"$stage/started" 2>/dev/null)):" "$run_log"
fi
rm -f "$stage/started"
run_log=$(python3 scripts/corpus/run.py --harness "$fake" --runtime "$stage/runtime.so" --kind rust "$stage/manifest.tsv" 2>&1)
if [ $? -ne 0 ] && [ "$(sort "$stage/started" | tr '\n' ' ')" = "fails.ll hangs.ll ours.ll plain.ll " ]; then
  pass "make run (rust-runtime) runs the others and fails on an unexpected failure"
else
  fail "scripts/corpus/run.py --kind rust:" "$run_log"
fi

# ---- 5. no declared dependency is unused -------------------------------------------
# cargo-machete (pinned, installed by make setup) over every Cargo.toml of
# the repository: a dependency, dev- or build-dependency whose name no
# source file of its package mentions.
source scripts/toolchain/packages.sh
if ! machete_present; then
  fail "cargo-machete $MACHETE_VERSION is not in $TOOLS_ROOT: run \`make setup\`"
else
  report=$("$MACHETE" --skip-target-dir . 2>&1)
  status=$?
  # "pkg -- ./PATH/Cargo.toml:" then one tab-indented crate per line.
  found=$(echo "$report" | awk '/^[^ \t].* -- .*Cargo\.toml:$/ { pkg = $1; next }
                               /^\t/ && pkg != "" { sub(/^\t/, ""); print pkg ":" $0; next }
                               { pkg = "" }' | sort)
  unknown=$(echo "$found" | grep . || true)
  if [ $status -gt 1 ]; then
    fail "cargo-machete failed (status $status):" "$report"
  elif [ -n "$unknown" ]; then
    fail "declared dependencies that no code uses (package:crate):" $unknown
  else
    pass "cargo-machete $MACHETE_VERSION: no unused dependency in $(git ls-files '*Cargo.toml' | wc -l) Cargo.toml files"
  fi
fi

echo "check-make: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
