#!/usr/bin/env bash
# `make run`'s loop: every program of the lowered corpus through jit-harness.
# The logic (and --help) is scripts/run_corpus.py; this name stays for the
# callers that run it with bash (mk/harness.mk, scripts/check-make.sh).
exec python3 "$(dirname "${BASH_SOURCE[0]}")/run_corpus.py" "$@"
