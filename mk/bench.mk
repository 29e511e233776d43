# Benchmarks, see bench/README.md.
# Variables from the top Makefile: CARGO, PYTHON, LLVM_BIN, RUNTIME_SO,
# CXX_RUNTIME, HARNESS, CORPUS_DIR.
#   make bench                          macro-benchmarks, all workloads, 5 runs each
#   make bench BENCH_RUNS=11 BENCH_ARGS="--only fib-spawn"
#   make bench-micro                    criterion per-operation costs
#   make bench-harness BENCH_HARNESS_N=1000
BENCH_RUNS      ?= 5
BENCH_ARGS      ?=
BENCH_HARNESS_N ?= 1000

.PHONY: bench bench-micro bench-harness

# Our async runtime against MLIR's C++ one under mlir-cpu-runner and
# jit-harness.
bench: build ## macro-benchmarks against the C++ runtime: table and target/bench/ratios.svg
	$(PYTHON) scripts/bench.py --runs $(BENCH_RUNS) \
	  --runtime $(RUNTIME_SO) --cxx $(CXX_RUNTIME) --harness $(HARNESS) \
	  --llvm-bin $(LLVM_BIN) --out $(CURDIR)/target/bench $(BENCH_ARGS)

# Per-operation costs (criterion) against a raw rayon::spawn floor.
bench-micro: toolchain ## criterion per-operation costs against a raw rayon::spawn
	$(CARGO) bench -p mlir_async_runtime --bench operations

# Checked runs per second: the harness against one mlir-cpu-runner per run.
bench-harness: build corpus ## checked runs per second: jit-harness vs one mlir-cpu-runner per run
	bash scripts/bench-harness.sh -n $(BENCH_HARNESS_N) --harness $(HARNESS) \
	  --runtime $(RUNTIME_SO) --llvm-bin $(LLVM_BIN) --corpus $(CORPUS_DIR)
