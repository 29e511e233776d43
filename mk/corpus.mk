# The async MLIR corpus lowered to LLVM IR, for running without lit (see
# scripts/lower-corpus.sh and the header of mlir-tests/lit.cfg.py):
#   make corpus   -> target/corpus/*.ll, *.llvm.mlir and manifest.tsv
# Variables from the top Makefile: LLVM_PREFIX, PIPELINES, CORPUS_DIR, CORPUS_MANIFEST.

CORPUS_SOURCES := $(wildcard mlir-tests/*.mlir)
CORPUS_DEPS    := $(CORPUS_SOURCES) $(wildcard mlir-tests/lib/*.py) $(PIPELINES) \
                  scripts/lower-corpus.sh

.PHONY: corpus corpus-clean
corpus: $(CORPUS_MANIFEST) ## lowers every corpus program to target/corpus/*.ll and manifest.tsv

$(CORPUS_MANIFEST): $(CORPUS_DEPS)
	LLVM_PREFIX=$(LLVM_PREFIX) CORPUS_OUT=$(CORPUS_DIR) \
	  bash scripts/lower-corpus.sh

corpus-clean: ## removes the lowered corpus
	rm -rf $(CORPUS_DIR)
