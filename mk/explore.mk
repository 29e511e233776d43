# Deterministic schedules (docs/exploration.md): the runtime's
# MLIR_ASYNC_RUNTIME_SCHEDULE mode driven by jit-harness --explore/--replay.
# Variables from the top Makefile: HARNESS, RUNTIME_SO, RUNNER_UTILS,
# CORPUS_MANIFEST, LLVM_BIN, PYTHON, FLOOR_SO.
#   make explore-ci      every corpus program under 2 seeds of each strategy
#                        and replayed twice in one process; the programs of a
#                        hundred thousand tasks or more under 1 seed each
#                        (part of make test)
#   make explore-corpus  the same with EXPLORE_SCHEDULES seeds for every program
#   make explore-table   the runs-to-failure table of mlir-tests/racy/ (10,000
#                        multithreaded runs with and without fuzzing, schedules
#                        to the failure from 20 first seeds, 100 replays in
#                        separate processes), written into docs/exploration.md

EXPLORE_SCHEDULES ?= 5
EXPLORE_HEAVY     := nested-chain-1m,fanout-100k,blocked-gate-100k.1,blocked-gate-100k.2
EXPLORE_ARGS      ?=
EXPLORE_COMMON     = --harness $(HARNESS) --runtime $(RUNTIME_SO) --libs $(RUNNER_UTILS)

.PHONY: explore-ci explore-corpus explore-table
explore-ci: build corpus ## every corpus program against its sequential reference, once and under 2 seeds of random and PCT schedules, and replayed (make test)
	$(PYTHON) scripts/corpus/explore.py corpus $(EXPLORE_COMMON) \
	  --manifest $(CORPUS_MANIFEST) --schedules 2 --light $(EXPLORE_HEAVY) \
	  --reference $(FLOOR_SO) --mlir-bin $(LLVM_BIN) $(EXPLORE_ARGS)

explore-corpus: build corpus ## every corpus program under EXPLORE_SCHEDULES seeds of each strategy, and replayed
	$(PYTHON) scripts/corpus/explore.py corpus $(EXPLORE_COMMON) \
	  --manifest $(CORPUS_MANIFEST) --schedules $(EXPLORE_SCHEDULES) \
	  --reference $(FLOOR_SO) --mlir-bin $(LLVM_BIN) $(EXPLORE_ARGS)

explore-table: build ## the runs-to-failure table of mlir-tests/racy/, into docs/exploration.md
	$(PYTHON) scripts/corpus/explore.py table $(EXPLORE_COMMON) --llvm-bin $(LLVM_BIN) \
	  --write docs/exploration.md $(EXPLORE_ARGS)
