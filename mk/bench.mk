# Macro-benchmarks: our async runtime against MLIR's C++ one under
# mlir-cpu-runner (and jit-harness once it is built). See bench/README.md.
# Variables from the top Makefile: LLVM_BIN, RUNTIME_SO, CXX_RUNTIME, HARNESS.
#   make bench                          all workloads, 5 runs each
#   make bench BENCH_RUNS=11 BENCH_ARGS="--only fib-spawn"
BENCH_RUNS   ?= 5
BENCH_ARGS   ?=
BENCH_PYTHON ?= python3

.PHONY: bench
bench: build
	$(BENCH_PYTHON) scripts/bench.py --runs $(BENCH_RUNS) \
	  --runtime $(RUNTIME_SO) --cxx $(CXX_RUNTIME) --harness $(HARNESS) \
	  --llvm-bin $(LLVM_BIN) --out $(CURDIR)/target/bench $(BENCH_ARGS)
