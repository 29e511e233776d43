#!/usr/bin/env bash
# Checks, without installing anything and without the network, that the
# toolchain of scripts/toolchain/packages.sh is present: the Debian packages, the
# Rust crates of Cargo.lock in cargo's cache and, with --lit, lit and
# psutil. Prints what is missing and exits 1; silent and 0 when all is
# there. `make build`, `make install`, `make run` and the other targets
# call it; `make setup` (scripts/toolchain/setup.sh) is what installs.
#
# Usage: scripts/toolchain/check.sh [--lit]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/toolchain/packages.sh

with_lit=0
case "${1:-}" in
  --lit) with_lit=1 ;;
  "") ;;
  -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
  *) echo "check-toolchain: unknown argument $1 (usage: $0 [--lit])" >&2; exit 2 ;;
esac

missing=$(missing_packages | tr '\n' ' ')
crates=""
crates_present || crates="the Rust crates of Cargo.lock"
py=""
if [ $with_lit -eq 1 ]; then
  py=$(missing_py_modules | tr '\n' ' ')
  command -v lit >/dev/null 2>&1 || [ -n "$py" ] || py="lit (not on PATH)"
fi
if [ -n "$missing$crates$py" ]; then
  echo "check-toolchain: missing:${missing:+ Debian packages: $missing}${crates:+ $crates}${py:+ Python: $py}" >&2
  echo "check-toolchain: run \`make setup\` once (it installs them; nothing else reaches the network)" >&2
  exit 1
fi
