#!/usr/bin/env bash
# The virtual environment of make catalyst (docs/catalyst.md): creates
# target/catalyst-venv (or $CATALYST_VENV) and installs into it, from PyPI,
# exactly the packages of scripts/catalyst/requirements.txt (pip --no-deps:
# nothing else is resolved; wheels only). Called by scripts/toolchain/setup.sh, the one
# set-up step that reaches the network. Does nothing, offline, when the
# venv already holds that list (a stamp file records the list's checksum).
#   setup-venv.sh           creates or updates the venv
#   setup-venv.sh --check   only checks, offline: exit 1 and says to run
#                           make setup when the venv is missing or stale
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VENV=${CATALYST_VENV:-$PWD/target/catalyst-venv}
REQS=scripts/catalyst/requirements.txt
STAMP=$VENV/.requirements.sha256
want=$(sha256sum "$REQS" | cut -d' ' -f1)

current() { [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; }

if [ "${1:-}" = "--check" ]; then
  current && exit 0
  echo "catalyst: $VENV is missing or does not hold $REQS: run make setup" >&2
  exit 1
fi
current && exit 0

echo "setup: installing pennylane-catalyst and its pinned dependencies into $VENV" >&2
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
  --only-binary=:all: -r "$REQS"
# The list must be complete: pip check fails on a missing dependency.
"$VENV/bin/python" -m pip check --disable-pip-version-check >/dev/null
echo "$want" > "$STAMP"
