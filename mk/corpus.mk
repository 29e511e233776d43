# The async MLIR corpus lowered to LLVM IR, for running without lit (see
# scripts/lower-corpus.sh and the header of mlir-tests/lit.cfg.py):
#   make corpus   -> target/corpus/*.ll, *.llvm.mlir and manifest.tsv
# LLVM_BIN and PIPELINES come from the top Makefile.

CORPUS_DIR     := $(CURDIR)/target/corpus
CORPUS_SOURCES := $(wildcard mlir-tests/*.mlir)
CORPUS_DEPS    := $(CORPUS_SOURCES) $(wildcard mlir-tests/lib/*.py) $(PIPELINES) \
                  scripts/lower-corpus.sh

.PHONY: corpus corpus-clean
corpus: $(CORPUS_DIR)/manifest.tsv

$(CORPUS_DIR)/manifest.tsv: $(CORPUS_DEPS)
	LLVM_PREFIX=$(patsubst %/,%,$(dir $(LLVM_BIN))) CORPUS_OUT=$(CORPUS_DIR) \
	  bash scripts/lower-corpus.sh

corpus-clean:
	rm -rf $(CORPUS_DIR)
