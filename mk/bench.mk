# Macro-benchmarks: our async runtime against MLIR's C++ one and against the
# single-thread floor runtime (bench/floor), under mlir-cpu-runner (and
# jit-harness). See bench/README.md.
# Variables from the top Makefile: LLVM_BIN, RUNTIME_SO, CXX_RUNTIME, HARNESS, LIT.
#   make bench                          all workloads, 11 interleaved runs each
#   make bench BENCH_RUNS=21 BENCH_ARGS="--only fib-spawn"
#   make floor                          target/floor/libmlir_async_floor.so
#   make lit-floor                      the lit corpus against the floor
BENCH_RUNS   ?= 11
BENCH_ARGS   ?=
BENCH_PYTHON ?= python3

# The floor runtime: one C file, built with the system C compiler (the one
# cargo links with).
FLOOR_SO     := $(CURDIR)/target/floor/libmlir_async_floor.so
FLOOR_SRC    := bench/floor/floor.c
FLOOR_CFLAGS ?= -std=c11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror

.PHONY: bench floor lit-floor
floor: $(FLOOR_SO)

$(FLOOR_SO): $(FLOOR_SRC) mk/bench.mk
	@mkdir -p $(dir $@)
	$(CC) $(FLOOR_CFLAGS) -o $@ $(FLOOR_SRC)

# Every corpus program a single-thread runtime can run must pass on the
# floor (feature floor-runtime: tests of our MLIR_ASYNC_RUNTIME_WORKERS,
# REQUIRES: rust-runtime, are skipped).
lit-floor: setup $(FLOOR_SO)
	$(LIT) -sv mlir-tests --param runtime=$(FLOOR_SO) --param runtime_kind=floor

bench: build $(FLOOR_SO)
	$(BENCH_PYTHON) scripts/bench.py --runs $(BENCH_RUNS) \
	  --runtime $(RUNTIME_SO) --cxx $(CXX_RUNTIME) --floor $(FLOOR_SO) \
	  --harness $(HARNESS) --llvm-bin $(LLVM_BIN) --out $(CURDIR)/target/bench $(BENCH_ARGS)

# Deterministic per-task costs (callgrind instructions and allocations, one
# worker, difference of two sizes), scripts/bench_instr.py:
#   make bench-instr           ours, the floor and C++: a table
#   make bench-instr-check     ours against bench/instr-budget.json (make test)
#   make bench-instr-budget    write ours' numbers into the budget (lowers
#                              only; BENCH_INSTR_ARGS=--allow-raise to raise)
BENCH_INSTR_ARGS ?=
BENCH_INSTR = $(BENCH_PYTHON) scripts/bench_instr.py --runtime $(RUNTIME_SO) \
	--floor $(FLOOR_SO) --cxx $(CXX_RUNTIME) --llvm-bin $(LLVM_BIN) \
	--out $(CURDIR)/target/bench-instr

.PHONY: bench-instr bench-instr-check bench-instr-budget bench-ci
bench-instr: build $(FLOOR_SO)
	$(BENCH_INSTR) $(BENCH_INSTR_ARGS)

bench-instr-check: build $(FLOOR_SO)
	$(BENCH_PYTHON) -m unittest discover -s scripts -p 'test_bench_instr.py'
	$(BENCH_INSTR) --check $(BENCH_INSTR_ARGS)

bench-instr-budget: build $(FLOOR_SO)
	$(BENCH_INSTR) --write-budget $(BENCH_INSTR_ARGS)

# The benchmark suite's part of make test: the floor runs the corpus, and
# ours stays within its instruction and allocation budget.
bench-ci: lit-floor bench-instr-check
