# Random scf.parallel and async.execute programs, each run against its
# sequential reference through jit-harness --reference, many per module
# and one harness process per module (scripts/corpus/fuzz_lowering.py,
# docs/lowering-bugs.md). MLIR 22's async-parallel-for runs through
# --front-mlir-bin (the JIT reads LLVM 19 IR only); MLIR 22 is read from
# target/compat, where make setup put it (scripts/toolchain/fetch_mlir.sh).
# Variables from the top Makefile: HARNESS, RUNTIME_SO, FLOOR_SO, RUNNER_UTILS, PYTHON,
# LLVM_PREFIX.
#   (LLVM_PREFIX is MLIR 19's install; other versions come from scripts/toolchain/fetch_mlir.sh)
#   make fuzz-lowering-ci   5,000 programs on MLIR 19 and 3,000 on MLIR 22;
#                           fails on a failure that neither the model of
#                           async-parallel-for's aligned-block bug nor its
#                           empty-dimension bug explains, on a lowering error,
#                           and on a program the model predicts that passes
#                           (the bug fixed: update the docs); then the same
#                           5,000 MLIR 19 programs with our patched pass
#                           (--fixed-lowering, make lowering-fixes), where
#                           any failure fails (make test)
#   make fuzz-lowering      FUZZ_PROGRAMS (100,000) programs on each of
#                           FUZZ_VERSIONS (19 22); findings in
#                           target/fuzz-lowering/<version>/findings-*.jsonl
#   make fuzz-lowering FUZZ_PROGRAMS=5000 FUZZ_VERSIONS=22 FUZZ_SEED=7
#   make fuzz-lowering FUZZ_VERSIONS=19 FUZZ_SEED=1901 FUZZ_ARGS=--fixed-lowering
#                           the long run with our patched pass (findings in
#                           target/fuzz-lowering/19/findings-mlir19-fixed-*)

FUZZ_PROGRAMS ?= 100000
FUZZ_VERSIONS ?= 19 22
FUZZ_SEED     ?= 1
FUZZ_BATCH    ?= 1000
FUZZ_ARGS     ?=
FUZZ = $(PYTHON) scripts/corpus/fuzz_lowering.py --harness $(HARNESS) --runtime $(RUNTIME_SO) \
	--floor $(FLOOR_SO) --libs $(RUNNER_UTILS) --batch $(FUZZ_BATCH)

.PHONY: fuzz-lowering fuzz-lowering-ci
fuzz-lowering: build lowering-fixes ## FUZZ_PROGRAMS random parallel/async programs per MLIR version against their sequential reference
	@for v in $(FUZZ_VERSIONS); do \
	  prefix=$(LLVM_PREFIX); [ $$v = 19 ] || prefix=$$(bash scripts/toolchain/fetch_mlir.sh --offline --prefix $$v) || exit 1; \
	  $(FUZZ) --programs $(FUZZ_PROGRAMS) --seed $(FUZZ_SEED) --llvm-prefix $$prefix \
	    --out target/fuzz-lowering/$$v $(FUZZ_ARGS) --expect-known || exit 1; \
	done

fuzz-lowering-ci: build lowering-fixes ## a bounded fuzz-lowering: 5,000 programs on MLIR 19 with its pass and with ours, 3,000 on 22; only the known bugs may fail, none with ours (make test)
	$(PYTHON) -m unittest discover -s scripts/corpus -p 'test_fuzz_lowering.py'
	$(FUZZ) --programs 5000 --seed 1 --llvm-prefix $(LLVM_PREFIX) --out target/fuzz-lowering/ci-19 --expect-known
	$(FUZZ) --programs 5000 --seed 1 --llvm-prefix $(LLVM_PREFIX) --out target/fuzz-lowering/ci-19-fixed --fixed-lowering
	@prefix=$$(bash scripts/toolchain/fetch_mlir.sh --offline --prefix 22) && \
	  $(FUZZ) --programs 3000 --seed 2 --llvm-prefix $$prefix --out target/fuzz-lowering/ci-22 --expect-known
