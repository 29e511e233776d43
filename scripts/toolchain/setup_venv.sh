#!/usr/bin/env bash
# A virtual environment holding exactly a pinned list of PyPI packages:
# creates VENV and installs into it, from PyPI, the packages of
# REQUIREMENTS (pip --no-deps: nothing else is resolved; wheels only), then
# runs pip check (the list must be complete). Called by scripts/toolchain/setup.sh,
# the one set-up step that reaches the network, for
#   target/catalyst-venv  scripts/catalyst/requirements.txt  (make catalyst,
#                         docs/catalyst.md: pennylane-catalyst, 1.2 GB)
#   target/wheel-tools    python/build-requirements.txt  (make wheel:
#                         setuptools-rust, auditwheel)
#   target/python-engine-venv  scripts/python_engine/requirements.txt (make
#                         python-engine-ci, docs/python-engine.md: MLIR
#                         Python bindings of LLVM 22 and 24, 1.2 GB)
# Does nothing, offline, when the venv already holds that list (a stamp
# file records the checksum of the list's requirement lines).
#   setup_venv.sh VENV REQUIREMENTS           creates or updates the venv
#   setup_venv.sh --check VENV REQUIREMENTS   only checks, offline: exit 1
#                                              and says to run make setup
#                                              when the venv is missing or stale
set -euo pipefail
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
if [ $# -ne 2 ]; then
  echo "usage: setup_venv.sh [--check] VENV REQUIREMENTS" >&2
  exit 2
fi
VENV=$1 REQS=$2
STAMP=$VENV/.requirements.sha256
# The checksum of the requirement lines only: a comment edited does not
# make the venv stale (the Catalyst one is 1.2 GB to download again).
want=$(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$REQS" | sha256sum | cut -d' ' -f1)

current() { [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; }

if [ "$check" = 1 ]; then
  current && exit 0
  echo "setup_venv: $VENV is missing or does not hold $REQS: run make setup" >&2
  exit 1
fi
current && exit 0

echo "setup: installing the packages of $REQS into $VENV" >&2
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
  --only-binary=:all: -r "$REQS"
# The list must be complete: pip check fails on a missing dependency.
"$VENV/bin/python" -m pip check --disable-pip-version-check >/dev/null
echo "$want" > "$STAMP"
