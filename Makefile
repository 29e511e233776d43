# Entry points; `make help` lists every target. `make test` is what CI runs
# (.ci/run); `make run` is the README's main command. Targets owned by one
# part of the project live in mk/*.mk, included below; each of those files
# names, in its header, the variables it takes from this one.
#
# The network: `make setup` (scripts/setup.sh) is the one step that reaches
# it, and `make test` calls it first. Every other target only checks that
# the toolchain is present (scripts/check-toolchain.sh) and runs cargo
# offline (CARGO_NET_OFFLINE below).

# ---- variables shared by the mk/ files ---------------------------------------
LLVM_PREFIX  ?= /usr/lib/llvm-19
LLVM_BIN     := $(LLVM_PREFIX)/bin
# MLIR's C++ runtime, the reference; and the runner utils (printMemref...)
# that corpus programs call, comma-separated as the harness takes them.
CXX_RUNTIME  := $(LLVM_PREFIX)/lib/libmlir_async_runtime.so
RUNNER_UTILS := $(LLVM_PREFIX)/lib/libmlir_c_runner_utils.so,$(LLVM_PREFIX)/lib/libmlir_runner_utils.so
RUNTIME_SO   := $(CURDIR)/target/release/libmlir_async_runtime.so
RUNTIME_A    := $(CURDIR)/target/release/libmlir_async_runtime.a
HARNESS      := $(CURDIR)/target/release/jit-harness
# The floor runtime (bench/floor, built by mk/bench.mk): every task inline,
# in program order, on one thread; the yardstick of make bench and make
# catalyst, and jit-harness --reference's reference runtime.
FLOOR_SO     := $(CURDIR)/target/floor/libmlir_async_floor.so
TRACE_VIEW   := $(CURDIR)/target/release/trace-view
# The lowered corpus (mk/corpus.mk): one .ll per program and the manifest.
CORPUS_DIR      := $(CURDIR)/target/corpus
CORPUS_MANIFEST := $(CORPUS_DIR)/manifest.tsv
CARGO  ?= cargo
LIT    ?= lit
PYTHON ?= python3
# The lowering pipelines of every MLIR version, defined once (read by
# mlir-tests/lib/pipelines.py, the corpus, bench, stress, compat, jit-harness).
PIPELINES := mlir-tests/lib/pipelines.txt
export PATH := $(PATH):$(HOME)/.local/bin
# cargo (and every script that calls it) never downloads: `make setup`
# fetched every crate of Cargo.lock. `make build CARGO_NET_OFFLINE=false`
# lets it.
CARGO_NET_OFFLINE ?= true
export CARGO_NET_OFFLINE

.DEFAULT_GOAL := all
.PHONY: all help setup toolchain toolchain-lit build test test-rust lit lit-cxx check-make

all: build ## the same as make build

help: ## lists every target with what it does
	@echo "make TARGET [VARIABLE=value ...]; the mk/ file headers list each target's variables"
	@awk -F':[^#]*## ' '/^[a-zA-Z0-9_.-]+:[^=]*## / { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

setup: ## installs what is missing: LLVM/MLIR 19 packages, lit, psutil, the Rust crates, the Catalyst venv (the one network step)
	@bash scripts/setup.sh

# With `setup` or `test` among the goals, set-up runs before the check.
AFTER_SETUP := $(if $(filter setup test,$(MAKECMDGOALS)),setup)

toolchain: $(AFTER_SETUP) ## checks, offline, that the toolchain is present (says to run make setup if not)
	@bash scripts/check-toolchain.sh

toolchain-lit: $(AFTER_SETUP) ## the same, and lit and psutil too
	@bash scripts/check-toolchain.sh --lit

build: toolchain ## builds the runtime (.so and .a), jit-harness, trace-view (release) and the floor runtime (jit-harness --reference's)
	$(CARGO) build --release --workspace

# Set-up first, then the Rust tests, the lit corpus, the corpus under MLIR
# 22's runner (make compat-ci: fetches MLIR 22 into target/compat once), the
# ahead-of-time test, the checks of this build itself, the reliability
# suite's CI part (loom models, the re-injected historic bugs, a reduced
# stress run: docs/reliability.md), the benchmarks' CI part (the floor
# runtime runs the corpus; the per-task instruction/allocation budget
# holds: bench/README.md), and the corpus under deterministic schedules
# (make explore-ci: docs/exploration.md; every program is also compared
# with its sequential reference there), random parallel and async
# programs against their sequential reference on MLIR 19 and 22 (make
# fuzz-lowering-ci: docs/lowering-bugs.md), and PennyLane Catalyst's
# programs on the C++ runtime and ours (make catalyst-ci: docs/catalyst.md).
test: setup build test-rust lit compat-ci aot-test check-make reliability-ci bench-ci explore-ci fuzz-lowering-ci catalyst-ci ## what CI runs: make setup, then every target marked (make test)

test-rust: build ## cargo test of the workspace (make test)
	$(CARGO) test --release --workspace

lit: build toolchain-lit ## the lit corpus against our runtime (make test)
	$(LIT) -sv mlir-tests --param runtime=$(RUNTIME_SO)

lit-cxx: toolchain-lit ## the lit corpus against MLIR 19's C++ runtime
	$(LIT) -sv mlir-tests --param runtime=$(CXX_RUNTIME)

check-make: ## checks this build: make help, variables of mk/, no network in build/install/run (make test)
	@bash scripts/check-make.sh

check-layers: ## the runtime's layers: each module imports only from its layer and those lib.rs declares before it, no import cycle (make test)
	@$(PYTHON) scripts/check-layers.py runtime/src
test: check-layers
.PHONY: check-layers

-include mk/*.mk
