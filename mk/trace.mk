# Observability demo: traces of corpus programs on our runtime and their
# timelines (README, docs/observability.md).
#   make trace-demo  -> target/trace/NAME.json (Chrome trace: Perfetto,
#                       chrome://tracing), target/trace/NAME.svg (labelled
#                       timeline) and NAME.png (the same, without text), and
#                       the runtime's counters on stderr
#   make trace-demo TRACE_PROGRAMS="token-deps"   other corpus programs
# Variables from the top Makefile: HARNESS, RUNTIME_SO, RUNNER_UTILS,
# TRACE_VIEW, CORPUS_MANIFEST, PYTHON.

TRACE_DIR      := $(CURDIR)/target/trace
TRACE_PROGRAMS ?= fanout-100k parallel-for-1d.1

.PHONY: trace-demo

trace-demo: build corpus ## traces of corpus programs (TRACE_PROGRAMS) as SVG and PNG timelines in target/trace
	@mkdir -p $(TRACE_DIR)
	@set -e; for p in $(TRACE_PROGRAMS); do \
	  echo "== $$p"; \
	  $(PYTHON) mlir-tests/lib/harness.py run $(CORPUS_MANIFEST) $$p --harness $(HARNESS) \
	    --runtime $(RUNTIME_SO) --libs $(RUNNER_UTILS) -- --trace $(TRACE_DIR)/$$p.json --stats; \
	  $(TRACE_VIEW) $(TRACE_DIR)/$$p.json -o $(TRACE_DIR)/$$p.svg -o $(TRACE_DIR)/$$p.png; \
	done
