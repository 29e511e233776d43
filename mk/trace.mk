# Observability demo: traces of corpus programs on our runtime and their
# timelines (see README, "What each worker did").
#   make trace-demo  -> target/trace/NAME.json (Chrome trace: Perfetto,
#                       chrome://tracing), target/trace/NAME.png, and the
#                       runtime's counters on stderr
#   make trace-demo TRACE_PROGRAMS="token-deps"   other corpus programs
# Variables from the top Makefile: LLVM_PREFIX, HARNESS, RUNTIME_SO, CARGO.

TRACE_DIR      := $(CURDIR)/target/trace
TRACE_VIEW     := $(CURDIR)/target/release/trace-view
TRACE_PROGRAMS ?= fanout-100k parallel-for-1d.1
TRACE_LIBS     := $(LLVM_PREFIX)/lib/libmlir_c_runner_utils.so,$(LLVM_PREFIX)/lib/libmlir_runner_utils.so

.PHONY: trace-demo trace-build
trace-build: setup
	$(CARGO) build --release -p mlir_async_runtime -p jit-harness -p trace-view

trace-demo: trace-build corpus
	@mkdir -p $(TRACE_DIR)
	@set -e; for p in $(TRACE_PROGRAMS); do \
	  echo "== $$p"; \
	  $(HARNESS) $(CURDIR)/target/corpus/$$p.ll --runtime $(RUNTIME_SO) \
	    --shared-lib $(TRACE_LIBS) --trace $(TRACE_DIR)/$$p.json --stats; \
	  $(TRACE_VIEW) $(TRACE_DIR)/$$p.json -o $(TRACE_DIR)/$$p.png; \
	done
