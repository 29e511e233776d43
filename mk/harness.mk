# jit-harness targets. Variables from the top Makefile: CARGO, RUNTIME_SO,
# HARNESS, LLVM_BIN, LLVM_PREFIX, CXX_RUNTIME.
#   make run                      every corpus program, 100 checked runs each,
#                                 against our runtime; one row per program
#   make run RUN_REPEAT=1000 RUN_RUNTIME=$(CXX_RUNTIME)
#   make install PREFIX=/opt/x    lib/libmlir_async_runtime.so, bin/jit-harness
#   make bench-harness BENCH_HARNESS_N=1000
RUN_REPEAT     ?= 100
RUN_TIMEOUT    ?= 30
RUN_RUNTIME    ?= $(RUNTIME_SO)
CORPUS_DIR     ?= $(CURDIR)/target/corpus
CORPUS_MANIFEST ?= $(CORPUS_DIR)/manifest.tsv
HARNESS_LIBS   := $(LLVM_PREFIX)/lib/libmlir_c_runner_utils.so,$(LLVM_PREFIX)/lib/libmlir_runner_utils.so
PREFIX         ?= /usr/local
BENCH_HARNESS_N ?= 1000

.PHONY: run install bench-harness

# Manifest columns (mlir-tests/lit.cfg.py): name ll check_file check_prefix
# entry entry_result env requires xfail source; '-' means empty. Programs
# that require another runtime kind are skipped; the xfail column names the
# runtime kinds on which a failure is expected.
run: build corpus
	@kind=rust; case "$(RUN_RUNTIME)" in $(LLVM_PREFIX)/*) kind=cxx;; esac; \
	total=0; bad=0; skipped=0; \
	echo "jit-harness: $(RUN_REPEAT) runs per program against $(RUN_RUNTIME) ($$kind-runtime)"; \
	while IFS='	' read -r name ll check prefix entry result envs requires xfail source; do \
	  case "$$name" in '#'*|name|'') continue;; esac; \
	  if [ "$$requires" != "-" ] && ! echo "$$requires" | grep -qw "$$kind-runtime"; then \
	    printf '%s: skipped (requires %s)\n' "$$name" "$$requires"; skipped=$$((skipped+1)); continue; fi; \
	  [ "$$envs" = "-" ] && envs=""; \
	  args="--check $$check --entry $$entry --name $$name"; \
	  [ "$$prefix" != "-" ] && args="$$args --check-prefix $$prefix"; \
	  total=$$((total+1)); \
	  if env $$envs $(HARNESS) "$$ll" --runtime "$(RUN_RUNTIME)" --shared-lib "$(HARNESS_LIBS)" \
	       --repeat $(RUN_REPEAT) --timeout $(RUN_TIMEOUT) $$args </dev/null; then :; \
	  elif [ "$$xfail" != "-" ] && echo "$$xfail" | grep -qw "$$kind-runtime"; then \
	    echo "$$name: expected failure on $$kind-runtime (xfail)"; \
	  else bad=$$((bad+1)); fi; \
	done < $(CORPUS_MANIFEST); \
	echo "jit-harness: $$((total-bad)) of $$total programs passed, $$bad failed, $$skipped skipped"; \
	[ $$bad -eq 0 ]

install: build
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(RUNTIME_SO) $(DESTDIR)$(PREFIX)/lib/libmlir_async_runtime.so
	install -m 0755 $(HARNESS) $(DESTDIR)$(PREFIX)/bin/jit-harness

bench-harness: build corpus
	bash scripts/bench-harness.sh -n $(BENCH_HARNESS_N) --harness $(HARNESS) \
	  --runtime $(RUNTIME_SO) --llvm-bin $(LLVM_BIN) --corpus $(CORPUS_DIR)
