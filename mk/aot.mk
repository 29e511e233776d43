# The ahead-of-time path (docs/aot.md): programs compiled with opt/llc and
# linked against the installed library with pkg-config, no JIT, no runner.
# Variables from the top Makefile: CORPUS_MANIFEST, LLVM_PREFIX.
#   make aot-test                  installs into target/aot/prefix, then
#                                  scripts/corpus/aot_test.sh (header, pkg-config,
#                                  every corpus program shared and static,
#                                  process exit)
#   make aot-test AOT_PROGRAMS="values token-deps"   only these programs
AOT_DIR      := $(CURDIR)/target/aot
AOT_PREFIX   := $(AOT_DIR)/prefix
AOT_PROGRAMS ?=

.PHONY: aot-test

aot-test: build corpus ## compiles corpus programs ahead of time, links them shared and static via pkg-config, runs and checks them (make test)
	@$(MAKE) --no-print-directory install PREFIX=$(AOT_PREFIX) DESTDIR= >/dev/null
	bash scripts/corpus/aot_test.sh --prefix $(AOT_PREFIX) --manifest $(CORPUS_MANIFEST) \
	  --llvm-prefix $(LLVM_PREFIX) --out $(AOT_DIR)/work $(AOT_PROGRAMS)
