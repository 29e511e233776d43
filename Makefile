# Entry points; `make help` lists every target. `make test` is what CI runs
# (.ci/run); `make run` is the README's main command. Targets owned by one
# part of the project live in mk/*.mk, included below; each of those files
# names, in its header, the variables it takes from this one.
#
# The network: `make setup` (scripts/toolchain/setup.sh) is the one step that reaches
# it (it also fetches the other MLIR versions into target/compat), and
# `make test` calls it first. Every other target only checks that
# the toolchain is present (scripts/toolchain/check.sh) and runs cargo
# offline (CARGO_NET_OFFLINE below).

# ---- variables shared by the mk/ files ---------------------------------------
# The toolchain's one knob: the LLVM/MLIR 19 install (Debian's location by
# default). Everything below, cargo's build scripts (llvm-sys, melior's
# mlir-sys and tblgen, bindgen, runtime/build.rs's lld), the tests, lit and
# the scripts take their LLVM from it:
#   make build LLVM_PREFIX=/opt/llvm-19     (or LLVM_PREFIX=... in the environment)
LLVM_PREFIX  ?= /usr/lib/llvm-19
LLVM_BIN     := $(LLVM_PREFIX)/bin
# What the crates' build scripts read. .cargo/config.toml sets the same
# defaults for plain `cargo`; a variable already in the environment wins
# over [env] there, so these exports reach cargo.
LLVM_SYS_191_PREFIX := $(LLVM_PREFIX)
MLIR_SYS_190_PREFIX := $(LLVM_PREFIX)
TABLEGEN_190_PREFIX := $(LLVM_PREFIX)
LIBCLANG_PATH       := $(LLVM_PREFIX)/lib
export LLVM_PREFIX LLVM_SYS_191_PREFIX MLIR_SYS_190_PREFIX TABLEGEN_190_PREFIX LIBCLANG_PATH
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
# The Python wheel mlir-async-rs (mk/wheel.mk: the runtime and the switch
# for PennyLane Catalyst; docs/catalyst.md), which make catalyst-ci installs.
WHEEL_DIR    := $(CURDIR)/target/wheels
# The lowered corpus (mk/corpus.mk): one .ll per program and the manifest.
CORPUS_DIR      := $(CURDIR)/target/corpus
CORPUS_MANIFEST := $(CORPUS_DIR)/manifest.tsv
CARGO  ?= cargo
LIT    ?= lit
PYTHON ?= python3
# lit on the corpus, with this LLVM (add --param runtime=...); the one lit
# command line of make lit, lit-cxx, lit-floor and check.
LIT_CORPUS = $(LIT) -sv mlir-tests --param llvm_prefix=$(LLVM_PREFIX)
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
.PHONY: all help setup toolchain toolchain-lit build check test test-rust lit lit-no-stacks lit-no-waiters lit-cxx check-make

all: build ## the same as make build

help: ## lists every target with what it does
	@echo "make TARGET [VARIABLE=value ...]; the mk/ file headers list each target's variables"
	@awk -F':[^#]*## ' '/^[a-zA-Z0-9_.-]+:[^=]*## / { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

setup: ## installs what is missing: LLVM/MLIR 19 packages, lit, psutil, the Rust crates, cargo-machete, lychee, the Catalyst venv, the wheel's build tools, the Python-engine venv; fetches MLIR 14/15/16/22 and the source packages of MLIR 19/22 (the one network step)
	@bash scripts/toolchain/setup.sh

# With `setup` or `test` among the goals, set-up runs before the check.
AFTER_SETUP := $(if $(filter setup test,$(MAKECMDGOALS)),setup)

toolchain: $(AFTER_SETUP) ## checks, offline, that the toolchain is present (says to run make setup if not)
	@bash scripts/toolchain/check.sh

toolchain-lit: $(AFTER_SETUP) ## the same, and lit and psutil too
	@bash scripts/toolchain/check.sh --lit

build: toolchain ## builds the runtime (.so and .a), jit-harness, trace-view (release) and the floor runtime (jit-harness --reference's)
	$(CARGO) build --release --workspace

# The inner loop: the runtime's Rust tests (unit, integration, doc) and the
# lit corpus against the runtime they built. No set-up, no other crate of
# the workspace (the harness, trace-view, the melior client), no compat,
# stress, benchmarks: make test runs those.
check: toolchain-lit ## the fast loop: the runtime's cargo tests, then the lit corpus against it (a few minutes)
	$(CARGO) test --release -p mlir_async_runtime
	$(LIT_CORPUS) --param runtime=$(RUNTIME_SO)

# Set-up first, then the Rust tests, the lit corpus (with task stacks on,
# once with them off: MLIR_ASYNC_RUNTIME_TASK_STACKS=0, and once with
# waiting threads not running queued tasks: MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=0), the corpus under MLIR
# 22's runner (make compat-ci: fetches MLIR 22 into target/compat once), the
# order of runtime calls in every version's lowering that the producer
# binding relies on (make check-producer-order), issue 39's drop-in shapes
# on the C++ runtime and on ours through the C ABI (make check-drop-in-cxx), the ahead-of-time test, the checks of this build itself, the reliability
# suite's CI part (loom models, the re-injected historic bugs, a reduced
# stress run: docs/reliability.md), the benchmarks' CI part (the floor
# runtime runs the corpus; the per-task instruction/allocation budget
# holds: bench/README.md), the benchmark pack under env -i at 1 and 2
# workers (make bench-pack-ci: docs/scaling.md), and the corpus under deterministic schedules
# (make explore-ci: docs/exploration.md; every program is also compared
# with its sequential reference there), random parallel and async
# programs against their sequential reference on MLIR 19 and 22 (make
# fuzz-lowering-ci: docs/lowering-bugs.md, with MLIR's async-parallel-for
# and with our patched one), the checks of that patched pass's plugin (make
# lowering-fixes-ci, mk/lowering-fixes.mk), and PennyLane Catalyst's
# programs on the C++ runtime and ours, through the mlir-async-rs wheel
# installed in a new venv (make catalyst-ci, which builds make wheel:
# docs/catalyst.md), and corpus programs through MLIR's Python
# ExecutionEngine of two bindings, many engines per process (make
# python-engine-ci: docs/python-engine.md).
test: setup build test-rust lit lit-no-stacks lit-no-waiters compat-ci check-producer-order check-drop-in-cxx aot-test check-make reliability-ci bench-ci bench-pack-ci explore-ci fuzz-lowering-ci catalyst-ci python-engine-ci ## what CI runs: make setup, then every target marked (make test)

test-rust: build ## cargo test of the workspace (make test)
	$(CARGO) test --release --workspace

lit: build toolchain-lit ## the lit corpus against our runtime (make test)
	$(LIT_CORPUS) --param runtime=$(RUNTIME_SO)

lit-no-stacks: build toolchain-lit ## the lit corpus against our runtime with task stacks off, MLIR_ASYNC_RUNTIME_TASK_STACKS=0 (make test)
	$(LIT_CORPUS) --param runtime=$(RUNTIME_SO) --param task_stacks=0

lit-no-waiters: build toolchain-lit ## the lit corpus against our runtime with waiting threads not running queued tasks, MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=0 (make test)
	$(LIT_CORPUS) --param runtime=$(RUNTIME_SO) --param waiters_run_tasks=0

lit-cxx: toolchain-lit ## the lit corpus against MLIR 19's C++ runtime
	$(LIT_CORPUS) --param runtime=$(CXX_RUNTIME)

check-make: ## checks this build: make help, variables of mk/, LLVM_PREFIX reaches every recipe, no network but the set-up, no unused dependency (make test)
	@bash scripts/check/make.sh

# Docs the code makes true: every repository path that a comment, a Cargo
# manifest or a Markdown file names exists (scripts/check/doc_paths.py),
# and every Markdown link and #anchor resolves (lychee, offline, pinned:
# make setup installs it into target/tools).
LYCHEE := $(CURDIR)/target/tools/bin/lychee
check-docs: ## every path named in a comment, Cargo manifest or Markdown file exists; every Markdown link resolves (lychee --offline) (make test)
	@test -x $(LYCHEE) || { echo "check-docs: $(LYCHEE) is missing: run make setup once" >&2; exit 1; }
	@rc=0; $(PYTHON) scripts/check/doc_paths.py || rc=1; \
	  $(LYCHEE) --offline --no-progress --include-fragments $$(git ls-files '*.md') || rc=1; exit $$rc
test: check-docs
.PHONY: check-docs

# Sizes a reader can take in: no source file over 600 lines (tests and
# generated files aside), no function of jit-harness/src over 60 lines
# (scripts/check/sizes.py).
check-sizes: ## no source file over 600 lines, no jit-harness function over 60 (make test)
	@$(PYTHON) scripts/check/sizes.py
test: check-sizes
.PHONY: check-sizes

check-layers: ## the runtime's layers: each module imports only from its layer and those lib.rs declares before it, no import cycle (make test)
	@$(PYTHON) scripts/check/layers.py runtime/src
test: check-layers
.PHONY: check-layers

-include mk/*.mk
