# The async MLIR corpus lowered to LLVM IR, for running without lit (see
# `corpus.py lower` in mlir-tests/lib/corpus.py and the header of
# mlir-tests/lit.cfg.py):
#   make corpus   -> target/corpus/*.ll, *.llvm.mlir and manifest.tsv
# Variables from the top Makefile: LLVM_PREFIX, PIPELINES, CORPUS_DIR, CORPUS_MANIFEST, PYTHON.

CORPUS_SOURCES := $(wildcard mlir-tests/*.mlir)
CORPUS_DEPS    := $(CORPUS_SOURCES) $(wildcard mlir-tests/lib/*.py) $(PIPELINES)

.PHONY: corpus corpus-clean
corpus: $(CORPUS_MANIFEST) ## lowers every corpus program to target/corpus/*.ll and manifest.tsv

$(CORPUS_MANIFEST): $(CORPUS_DEPS)
	$(PYTHON) mlir-tests/lib/corpus.py lower --out $(CORPUS_DIR) --llvm-prefix $(LLVM_PREFIX)

corpus-clean: ## removes the lowered corpus
	rm -rf $(CORPUS_DIR)
