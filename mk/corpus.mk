# The async MLIR corpus lowered to LLVM IR, for running without lit (see
# scripts/lower-corpus.sh and the header of mlir-tests/lit.cfg.py):
#   make corpus   -> target/corpus/*.ll and target/corpus/manifest.tsv
# Variables from the top Makefile: LLVM_BIN, CORPUS_DIR, CORPUS_MANIFEST.

CORPUS_SOURCES := $(wildcard mlir-tests/*.mlir)
CORPUS_DEPS    := $(CORPUS_SOURCES) mlir-tests/lib/corpus.py scripts/lower-corpus.sh

.PHONY: corpus corpus-clean
corpus: $(CORPUS_MANIFEST) ## lowers every corpus program to target/corpus/*.ll and manifest.tsv

$(CORPUS_MANIFEST): $(CORPUS_DEPS)
	LLVM_PREFIX=$(patsubst %/,%,$(dir $(LLVM_BIN))) CORPUS_OUT=$(CORPUS_DIR) \
	  bash scripts/lower-corpus.sh

corpus-clean: ## removes the lowered corpus
	rm -rf $(CORPUS_DIR)
