# jit-harness: every corpus program, checked at every run.
# Variables from the top Makefile: HARNESS, RUNTIME_SO, RUNNER_UTILS,
# CORPUS_MANIFEST, LLVM_PREFIX, PYTHON.
#   make run                      every corpus program, 100 checked runs each,
#                                 against our runtime; one row per program
#   make run RUN_REPEAT=1000 RUN_RUNTIME='$(CXX_RUNTIME)'   (the C++ runtime under LLVM_PREFIX)
# Programs marked REQUIRES for another runtime or UNSUPPORTED on this one
# are skipped; XFAIL ones may fail, and say so in one line (the MLIR
# lowering bugs: docs/lowering-bugs.md); RUN_VERBOSE=1 shows their
# FileCheck dumps too (scripts/corpus/run.py).
RUN_REPEAT  ?= 100
RUN_VERBOSE ?=
RUN_TIMEOUT ?= 30
RUN_RUNTIME ?= $(RUNTIME_SO)

.PHONY: run

# The README's run command: like `make test`, it runs the set-up first,
# which installs what is missing and does nothing (offline) otherwise.
run: setup build corpus ## every corpus program, RUN_REPEAT checked runs each, through jit-harness (runs make setup first)
	@$(PYTHON) scripts/corpus/run.py --harness $(HARNESS) --runtime $(RUN_RUNTIME) \
	  --runner-utils $(RUNNER_UTILS) --llvm-prefix $(LLVM_PREFIX) \
	  --repeat $(RUN_REPEAT) --timeout $(RUN_TIMEOUT) $(if $(RUN_VERBOSE),--verbose) $(CORPUS_MANIFEST)
