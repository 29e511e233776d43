# Reliability (docs/reliability.md): loom models, stress with
# schedule fuzzing, sanitizers and mutation tests.
# Variables from the top Makefile: CARGO, PYTHON, RUNTIME_SO, HARNESS, LLVM_PREFIX.
#   make loom-ci        loom models, LOOM_MAX_PREEMPTIONS=2 (part of make test)
#   make loom           the same models explored deeper (LOOM_MAX_PREEMPTIONS=4)
#   make stress-ci      every corpus program a few hundred times (part of make test)
#   make stress         10,000 in-process runs per program and fuzz mode + 200 processes
#   make stress-opt-outs-ci the reduced stress run once with each opt-out in the environment (part of make test)
#   make lifecycle-opt-outs-ci the lifecycle tests once with each opt-out in the environment (part of make test)
#   make mutations      each re-injected historic bug is caught (part of make test)
#   make mutations-full the same, plus AddressSanitizer on the use after free
#   make sanitize       the runtime's tests under ASan and TSan (nightly)
#   make churn          the lifecycle tests (fork, the thread cap, spare churn) scaled up CHURN_SCALE times
#   make reliability-ci the five parts of make test, in order

NIGHTLY              ?= +nightly
SAN_TARGET           ?= x86_64-unknown-linux-gnu
LOOM_CI_PREEMPTIONS  ?= 2
LOOM_DEEP_PREEMPTIONS ?= 4
STRESS_RUNS          ?= 10000
STRESS_PROCS         ?= 200
STRESS_CI_RUNS       ?= 300
STRESS_CI_PROCS      ?= 10
# Per program and fuzz mode, in-process runs are capped at about this many
# seconds (never fewer than the floor): the corpus has programs with a
# million tasks per run (nested-chain-1m, ~0.5 s a run), where 10,000 runs
# would take hours. Programs under the cap get all their runs.
STRESS_MAX_SECONDS    ?= 120
STRESS_MIN_RUNS       ?= 200
STRESS_CI_MAX_SECONDS ?= 8
STRESS_CI_MIN_RUNS    ?= 10
STRESS_ARGS          ?=
# The runtime's opt-outs (and its opt-in): a stress run and a run of the
# lifecycle tests with each in the environment; rules.py skips what lit's
# run with it skips (a program that needs task stacks, with them off).
OPT_OUTS             ?= MLIR_ASYNC_RUNTIME_TASK_STACKS=0 MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=0 MLIR_ASYNC_RUNTIME_WAITERS_RUN_TASKS=any
STRESS_OPT_OUTS_RUNS ?= 100
STRESS_OPT_OUTS_PROCS ?= 2
CHURN_SCALE          ?= 20

LOOM_CARGO = RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$(CURDIR)/target/loom \
	$(CARGO) test --release -p mlir_async_runtime --lib --test loom_objects
# The sanitizers run the runtime's behavioural tests (not link_order, which
# inspects the release cdylib with binutils).
SAN_TESTS = --lib --test groups --test objects --test races --test teardown --test misuse --test lifecycle

.PHONY: loom loom-ci stress stress-ci stress-opt-outs-ci lifecycle-opt-outs-ci mutations mutations-full sanitize sanitize-asan sanitize-tsan reliability-ci churn

churn: toolchain ## the lifecycle tests (fork, thread cap, spare churn) scaled up CHURN_SCALE times (default 20)
	MLIR_ASYNC_RUNTIME_TEST_SCALE=$(CHURN_SCALE) $(CARGO) test --release -p mlir_async_runtime --test lifecycle

loom-ci: toolchain ## loom models, LOOM_MAX_PREEMPTIONS=2 (make test)
	LOOM_MAX_PREEMPTIONS=$(LOOM_CI_PREEMPTIONS) $(LOOM_CARGO)

loom: toolchain ## the same loom models explored deeper (LOOM_MAX_PREEMPTIONS=4)
	LOOM_MAX_PREEMPTIONS=$(LOOM_DEEP_PREEMPTIONS) $(LOOM_CARGO)

stress: build ## 10,000 in-process runs per program, fuzzing off and on, plus 200 processes each
	$(PYTHON) scripts/corpus/stress.py --runs $(STRESS_RUNS) --procs $(STRESS_PROCS) \
	  --max-seconds $(STRESS_MAX_SECONDS) --min-runs $(STRESS_MIN_RUNS) \
	  --runtime $(RUNTIME_SO) --harness $(HARNESS) --llvm-prefix $(LLVM_PREFIX) \
	  --out $(CURDIR)/target/stress $(STRESS_ARGS)

stress-ci: build ## the reduced stress run (make test)
	$(PYTHON) scripts/corpus/stress.py --runs $(STRESS_CI_RUNS) --procs $(STRESS_CI_PROCS) \
	  --max-seconds $(STRESS_CI_MAX_SECONDS) --min-runs $(STRESS_CI_MIN_RUNS) \
	  --runtime $(RUNTIME_SO) --harness $(HARNESS) --llvm-prefix $(LLVM_PREFIX) \
	  --out $(CURDIR)/target/stress-ci $(STRESS_ARGS)

stress-opt-outs-ci: build ## the reduced stress run once with each of OPT_OUTS in the environment: task stacks off, waiters running nothing, waiters running any task (make test)
	@set -e; for opt in $(OPT_OUTS); do \
	  echo "stress-opt-outs-ci: $$opt"; \
	  env $$opt $(PYTHON) scripts/corpus/stress.py --runs $(STRESS_OPT_OUTS_RUNS) --procs $(STRESS_OPT_OUTS_PROCS) \
	    --max-seconds $(STRESS_CI_MAX_SECONDS) --min-runs $(STRESS_CI_MIN_RUNS) \
	    --runtime $(RUNTIME_SO) --harness $(HARNESS) --llvm-prefix $(LLVM_PREFIX) \
	    --out $(CURDIR)/target/stress-ci-$$(echo $$opt | tr '=' '-') $(STRESS_ARGS); \
	done

lifecycle-opt-outs-ci: toolchain ## the lifecycle tests (fork, exit, destroy, the thread cap) once with each of OPT_OUTS in the environment (make test)
	@set -e; for opt in $(OPT_OUTS); do \
	  echo "lifecycle-opt-outs-ci: $$opt"; \
	  env $$opt $(CARGO) test --release -p mlir_async_runtime --test lifecycle; \
	done

mutations: toolchain ## each re-injected historic bug is caught (make test)
	CARGO=$(CARGO) LOOM_MAX_PREEMPTIONS=$(LOOM_CI_PREEMPTIONS) bash scripts/check/mutations.sh

mutations-full: toolchain ## the same, plus AddressSanitizer on the use after free (nightly)
	CARGO=$(CARGO) LOOM_MAX_PREEMPTIONS=$(LOOM_CI_PREEMPTIONS) bash scripts/check/mutations.sh --asan

sanitize: sanitize-asan sanitize-tsan ## the runtime's tests under ASan and TSan (nightly)

# allocator_may_return_null: a failed allocation returns null, as malloc's
# does, so the runtime's own report of it is what the misuse test sees.
# (tests/lifecycle.rs turns ASan's fake stacks off for the scenarios that
# fork, and says why.)
sanitize-asan: toolchain ## the runtime's tests under AddressSanitizer (nightly)
	RUSTFLAGS="-Zsanitizer=address --cfg mlir_async_asan" CARGO_TARGET_DIR=$(CURDIR)/target/asan \
	  ASAN_OPTIONS=allocator_may_return_null=1 \
	  $(CARGO) $(NIGHTLY) test --release -p mlir_async_runtime --target $(SAN_TARGET) \
	  --no-fail-fast $(SAN_TESTS)

# Stable std is not built with TSan; -Cunsafe-allow-abi-mismatch links it
# anyway, and runtime/tsan.supp lists the reports that come from its
# uninstrumented synchronisation (docs/reliability.md explains each).
sanitize-tsan: toolchain ## the runtime's tests under ThreadSanitizer (nightly)
	RUSTFLAGS="-Zsanitizer=thread -Cunsafe-allow-abi-mismatch=sanitizer --cfg mlir_async_tsan" \
	  TSAN_OPTIONS="suppressions=$(CURDIR)/runtime/tsan.supp:allocator_may_return_null=1" \
	  CARGO_TARGET_DIR=$(CURDIR)/target/tsan \
	  $(CARGO) $(NIGHTLY) test --release -p mlir_async_runtime --target $(SAN_TARGET) \
	  --no-fail-fast $(SAN_TESTS)

reliability-ci: loom-ci mutations stress-ci stress-opt-outs-ci lifecycle-opt-outs-ci ## loom-ci, mutations, stress-ci, and stress and the lifecycle tests with each opt-out, in order (make test)
