# Entry points. `make test` is what CI runs (.ci/run); `make run` is the
# README's main command. Targets owned by one part of the project live in
# mk/*.mk and are included below.

LLVM_PREFIX ?= /usr/lib/llvm-19
LLVM_BIN    := $(LLVM_PREFIX)/bin
CXX_RUNTIME := $(LLVM_PREFIX)/lib/libmlir_async_runtime.so
RUNTIME_SO  := $(CURDIR)/target/release/libmlir_async_runtime.so
HARNESS     := $(CURDIR)/target/release/jit-harness
CARGO       ?= cargo
LIT         ?= lit
# The lowering pipelines of every MLIR version, defined once (read by
# mlir-tests/lib/pipelines.py, the corpus, bench, stress, compat, jit-harness).
PIPELINES   := mlir-tests/lib/pipelines.txt
export PATH := $(PATH):$(HOME)/.local/bin

.PHONY: all setup build test test-rust lit lit-cxx
all: build

# Installs LLVM/MLIR 19 and lit when missing; does nothing otherwise.
setup:
	@bash scripts/setup.sh

build: setup
	$(CARGO) build --release --workspace

# Rust tests, the lit corpus, the corpus under MLIR 22's runner (make
# compat-ci: fetches MLIR 22 into target/compat once), then the reliability
# suite's CI part: loom models, the re-injected historic bugs, and a reduced
# stress run (docs/reliability.md), then the benchmarks' CI part: the floor
# runtime runs the corpus and the per-task instruction/allocation budget
# holds (bench/README.md).
test: build test-rust lit compat-ci reliability-ci bench-ci

test-rust: build
	$(CARGO) test --release --workspace

# The corpus against our runtime (the default of the lit parameter).
lit: build
	$(LIT) -sv mlir-tests --param runtime=$(RUNTIME_SO)

# The same corpus against the C++ runtime of MLIR 19.
lit-cxx: setup
	$(LIT) -sv mlir-tests --param runtime=$(CXX_RUNTIME)

-include mk/*.mk

# Per-operation costs (criterion) against a raw rayon::spawn floor.
.PHONY: bench-micro
bench-micro: setup
	$(CARGO) bench -p mlir_async_runtime --bench operations
