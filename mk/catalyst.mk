# PennyLane Catalyst on our runtime (docs/catalyst.md): Catalyst's hybrid
# programs with async QNodes, on the wheel's C++ runtime and on ours, in a
# pinned venv (target/catalyst-venv, scripts/catalyst/requirements.txt)
# that make setup installs (scripts/toolchain/setup_venv.sh); these targets only
# check, offline, that it is there.
# Variables from the top Makefile: PYTHON, RUNTIME_SO, FLOOR_SO, WHEEL_DIR,
# LIT_CORPUS.
#   make catalyst              the programs, CATALYST_RUNS (11) interleaved
#                              rounds of C++, ours and the floor runtime:
#                              results identical, the per-call table
#                              (also target/catalyst/table.md); the
#                              switching methods; the exit behaviour
#   make catalyst CATALYST_ARGS="--only several --calls 20"
#   make catalyst-ci           as a user would: the wheel of make wheel
#                              pip-installed into a new venv beside Catalyst
#                              (target/catalyst-user-venv, on top of
#                              target/catalyst-venv), its CLI and errors,
#                              CATALYST_CI_RUNS (3) rounds of C++ and ours
#                              through the installed package, no floor,
#                              then pip uninstall; the switching methods and
#                              the exit behaviour (make test)
CATALYST_VENV    := $(CURDIR)/target/catalyst-venv
CATALYST_USER_VENV := $(CURDIR)/target/catalyst-user-venv
CATALYST_VENV_CHECK := bash scripts/toolchain/setup_venv.sh --check $(CATALYST_VENV) scripts/catalyst/requirements.txt
CATALYST_OUT     := $(CURDIR)/target/catalyst
CATALYST_RUNS    ?= 11
CATALYST_CI_RUNS ?= 3
CATALYST_ARGS    ?=
CATALYST_CHECKS  := $(PYTHON) scripts/catalyst/switch_methods.py --venv $(CATALYST_VENV) --runtime $(RUNTIME_SO) && \
                    $(PYTHON) scripts/catalyst/exit_behaviour.py --venv $(CATALYST_VENV) --runtime $(RUNTIME_SO)

.PHONY: catalyst catalyst-ci

catalyst: build floor ## Catalyst's async-QNode programs on the C++ runtime, ours and the floor: identical results, per-call table, switching, exit
	@$(CATALYST_VENV_CHECK)
	$(PYTHON) scripts/catalyst/run.py --venv $(CATALYST_VENV) --runtime $(RUNTIME_SO) --floor $(FLOOR_SO) \
	  --runs $(CATALYST_RUNS) --markdown $(CATALYST_OUT)/table.md $(CATALYST_ARGS)
	$(CATALYST_CHECKS)

catalyst-ci: build wheel toolchain-lit ## the wheel installed in a new venv as a user would: 3 rounds of C++ and ours through it, errors, uninstall; switching, exit (make test)
	@$(CATALYST_VENV_CHECK)
	$(PYTHON) scripts/catalyst/wheel_test.py --base $(CATALYST_VENV) --wheels $(WHEEL_DIR) \
	  --venv $(CATALYST_USER_VENV) --runs $(CATALYST_CI_RUNS) --run-args "$(CATALYST_ARGS)" \
	  --lit "$(LIT_CORPUS)"
	$(CATALYST_CHECKS)
