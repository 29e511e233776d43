# Benchmarks, see bench/README.md: our async runtime against MLIR's C++ one
# and against the single-thread floor runtime (bench/floor), under
# mlir-cpu-runner and jit-harness; per-task callgrind costs with a budget;
# criterion per-operation costs; the harness's checked runs per second.
# Variables from the top Makefile: CARGO, PYTHON, LIT_CORPUS, LLVM_BIN, RUNTIME_SO,
# CXX_RUNTIME, HARNESS, CORPUS_DIR, FLOOR_SO.
#   make bench                          all workloads, 11 interleaved runs each
#   make bench BENCH_RUNS=21 BENCH_ARGS="--only fib-spawn"
#   make floor                          target/floor/libmlir_async_floor.so
#   make lit-floor                      the lit corpus against the floor
#   make bench-micro                    criterion per-operation costs
#   make bench-harness BENCH_HARNESS_N=1000
BENCH_RUNS      ?= 11
BENCH_ARGS      ?=
BENCH_HARNESS_N ?= 1000

# The floor runtime: one C file, built with the system C compiler (the one
# cargo links with).
FLOOR_SRC    := bench/floor/floor.c
FLOOR_CFLAGS ?= -std=c11 -O2 -g -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror

.PHONY: bench floor lit-floor bench-micro bench-harness
floor: $(FLOOR_SO) ## builds the single-thread floor runtime (bench/floor), the yardstick of make bench

# make build builds it too: it is jit-harness --reference's default
# reference runtime (target/floor, next to target/release).
build: $(FLOOR_SO)

$(FLOOR_SO): $(FLOOR_SRC) mk/bench.mk
	@mkdir -p $(dir $@)
	$(CC) $(FLOOR_CFLAGS) -o $@ $(FLOOR_SRC)

# Every corpus program a single-thread runtime can run must pass on the
# floor (feature floor-runtime: tests of our MLIR_ASYNC_RUNTIME_WORKERS,
# REQUIRES: rust-runtime, are skipped).
lit-floor: toolchain-lit $(FLOOR_SO) ## the lit corpus against the floor runtime (make test)
	$(LIT_CORPUS) --param runtime=$(FLOOR_SO) --param runtime_kind=floor

bench: build $(FLOOR_SO) ## macro-benchmarks: ours, the C++ runtime and the floor, interleaved; table and target/bench/ratios.svg
	$(PYTHON) scripts/bench/bench.py --runs $(BENCH_RUNS) \
	  --runtime $(RUNTIME_SO) --cxx $(CXX_RUNTIME) --floor $(FLOOR_SO) \
	  --harness $(HARNESS) --llvm-bin $(LLVM_BIN) --out $(CURDIR)/target/bench $(BENCH_ARGS)

# Per-operation costs (criterion) against a raw rayon::spawn floor.
bench-micro: toolchain ## criterion per-operation costs against a raw rayon::spawn
	$(CARGO) bench -p mlir_async_runtime --bench operations

# Checked runs per second: the harness against one mlir-cpu-runner per run.
bench-harness: build corpus ## checked runs per second: jit-harness vs one mlir-cpu-runner per run
	bash scripts/bench/harness_rate.sh -n $(BENCH_HARNESS_N) --harness $(HARNESS) \
	  --runtime $(RUNTIME_SO) --llvm-bin $(LLVM_BIN) --corpus $(CORPUS_DIR)

# Deterministic per-task costs (callgrind instructions and allocations, one
# worker, difference of two sizes), scripts/bench/instr.py:
#   make bench-instr           ours, the floor and C++: a table
#   make bench-instr-check     ours against bench/instr-budget.json (make test)
#   make bench-instr-budget    write ours' numbers into the budget (lowers
#                              only; BENCH_INSTR_ARGS=--allow-raise to raise)
BENCH_INSTR_ARGS ?=
BENCH_INSTR = $(PYTHON) scripts/bench/instr.py --runtime $(RUNTIME_SO) \
	--floor $(FLOOR_SO) --cxx $(CXX_RUNTIME) --llvm-bin $(LLVM_BIN) \
	--out $(CURDIR)/target/bench-instr

.PHONY: bench-instr bench-instr-check bench-instr-budget bench-ci
bench-instr: build $(FLOOR_SO) ## callgrind instructions and allocations per task: ours, the floor, C++
	$(BENCH_INSTR) $(BENCH_INSTR_ARGS)

bench-instr-check: build $(FLOOR_SO) ## ours' per-task costs against bench/instr-budget.json, fails 3% above (make test)
	$(PYTHON) -m unittest discover -s scripts/bench -p 'test_instr.py'
	$(BENCH_INSTR) --check $(BENCH_INSTR_ARGS)

bench-instr-budget: build $(FLOOR_SO) ## writes ours' per-task costs into the budget (lowers only)
	$(BENCH_INSTR) --write-budget $(BENCH_INSTR_ARGS)

# The parallel-loop benchmarks' own logic (scripts/bench/loops.py): the
# three lowerings of every bench/loops kernel are what they claim; and the
# wait-path benchmarks' (scripts/bench/waits.py): the harness's summary line
# and the wake program's median are read right, a missing one is a FAIL.
.PHONY: bench-loops-check trace-loop
bench-loops-check: toolchain ## bench/loops: each kernel lowers async / OpenMP / sequential as claimed; bench/waits' parsing
	LLVM_BIN=$(LLVM_BIN) $(PYTHON) -m unittest discover -s scripts/bench -p 'test_loops.py'
	LLVM_BIN=$(LLVM_BIN) $(PYTHON) -m unittest discover -s scripts/bench -p 'test_waits.py'

# One fine-grained parallel loop on our runtime: which thread runs each
# block, in which order, how long the last block and the caller wait
# (bench/loops/trace-before.md is one such summary).
trace-loop: build ## trace of one fine-grained parallel loop: target/trace/loop.{md,svg,png}
	$(PYTHON) scripts/bench/trace_loop.py --runtime $(RUNTIME_SO) --llvm-bin $(LLVM_BIN) \
	  --trace-view $(CURDIR)/target/release/trace-view -o $(CURDIR)/target/trace/loop

# Many blocked tasks (issue 25; scripts/bench/blocked.py, bench/README.md):
# mlir-tests/blocked-tasks.mlir with N tasks blocked at once, 2 workers, the
# process's threads, RSS and mappings sampled.
#   make bench-blocked          10,000 and 100,000 tasks on ours: a table
#   make bench-blocked BENCH_BLOCKED_ARGS="--runtime $(CXX_RUNTIME) --tasks 2,3"
#   make bench-blocked-check    10,000 tasks: completed, at most workers + 2
#                               OS threads, at most 64 KiB of RSS per blocked
#                               task (make test)
BENCH_BLOCKED_ARGS ?=
BENCH_BLOCKED = $(PYTHON) scripts/bench/blocked.py --runtime $(RUNTIME_SO) \
	--harness $(HARNESS) --llvm-bin $(LLVM_BIN) --workers 2

.PHONY: bench-blocked bench-blocked-check
bench-blocked: build ## many blocked tasks: 10,000 and 100,000 tasks blocked at once, threads and RSS per task
	$(BENCH_BLOCKED) $(BENCH_BLOCKED_ARGS)

bench-blocked-check: build ## 10,000 blocked tasks complete with <= workers + 2 threads and <= 64 KiB RSS each (make test)
	$(PYTHON) -m unittest discover -s scripts/bench -p 'test_blocked.py'
	$(BENCH_BLOCKED) --tasks 10000 --check $(BENCH_BLOCKED_ARGS)

# The benchmark suite's part of make test: the floor runs the corpus, ours
# stays within its instruction and allocation budget, and holds 10,000
# blocked tasks on 2 workers.
bench-ci: lit-floor bench-instr-check bench-loops-check bench-blocked-check ## the floor's corpus, the instruction budget, the loop lowerings, 10,000 blocked tasks (make test)
