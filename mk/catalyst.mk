# PennyLane Catalyst on our runtime (docs/catalyst.md): Catalyst's hybrid
# programs with async QNodes, on the wheel's C++ runtime and on ours, in a
# pinned venv (target/catalyst-venv, scripts/catalyst/requirements.txt)
# that make setup installs (scripts/catalyst/setup-venv.sh); these targets
# only check, offline, that it is there.
# Variables from the top Makefile: PYTHON, RUNTIME_SO, FLOOR_SO.
#   make catalyst              the programs, CATALYST_RUNS (11) interleaved
#                              rounds of C++, ours and the floor runtime:
#                              results identical, the per-call table
#                              (also target/catalyst/table.md); the
#                              switching methods; the exit behaviour
#   make catalyst CATALYST_ARGS="--only several --calls 20"
#   make catalyst-ci           the same with CATALYST_CI_RUNS (3) rounds of
#                              C++ and ours, no floor (make test: about
#                              2.5 minutes on 2 cores; make catalyst about 10)
CATALYST_VENV    := $(CURDIR)/target/catalyst-venv
CATALYST_OUT     := $(CURDIR)/target/catalyst
CATALYST_RUNS    ?= 11
CATALYST_CI_RUNS ?= 3
CATALYST_ARGS    ?=
CATALYST_CHECKS  := $(PYTHON) scripts/catalyst/switch_methods.py --venv $(CATALYST_VENV) --runtime $(RUNTIME_SO) && \
                    $(PYTHON) scripts/catalyst/exit_behaviour.py --venv $(CATALYST_VENV) --runtime $(RUNTIME_SO)

.PHONY: catalyst catalyst-ci

catalyst: build floor ## Catalyst's async-QNode programs on the C++ runtime, ours and the floor: identical results, per-call table, switching, exit
	@CATALYST_VENV=$(CATALYST_VENV) bash scripts/catalyst/setup-venv.sh --check
	$(PYTHON) scripts/catalyst/run.py --venv $(CATALYST_VENV) --runtime $(RUNTIME_SO) --floor $(FLOOR_SO) \
	  --runs $(CATALYST_RUNS) --markdown $(CATALYST_OUT)/table.md $(CATALYST_ARGS)
	$(CATALYST_CHECKS)

catalyst-ci: build ## the same, 3 rounds of C++ and ours, no floor (make test)
	@CATALYST_VENV=$(CATALYST_VENV) bash scripts/catalyst/setup-venv.sh --check
	$(PYTHON) scripts/catalyst/run.py --venv $(CATALYST_VENV) --runtime $(RUNTIME_SO) \
	  --runs $(CATALYST_CI_RUNS) $(CATALYST_ARGS)
	$(CATALYST_CHECKS)
