#!/bin/sh
# The benchmark pack's entry point (docs/scaling.md): run.py does the work,
# with python3's standard library only. `./run.sh --help` says how.
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null 2>&1 || { echo "run.sh: python3 is needed" >&2; exit 2; }
exec python3 "$here/run.py" "$@"
