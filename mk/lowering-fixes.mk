# MLIR's async-parallel-for with our patches for its two miscompiles, as an
# mlir-opt pass plugin (lowering-fixes/, docs/lowering-bugs.md): built from
# Debian's source package of the installed MLIR 19 (make setup fetched it:
# scripts/toolchain/fetch_mlir_source.sh), registered as async-parallel-for-fixed.
# Variables from the top Makefile: LLVM_PREFIX, LIT, PYTHON.
#   make lowering-fixes      target/lowering-fixes/libmlir_async_lowering_fixes.so,
#                            and MLIR 22's in target/lowering-fixes/22/ (from
#                            target/compat/22; nothing is rebuilt when
#                            nothing changed)
#   make lowering-fixes-ci   its checks (make test): the upstream-style lit
#                            tests pass with it and fail with MLIR's pass, it
#                            lowers other loops exactly as MLIR's pass does,
#                            a deliberately wrong patch changes its output,
#                            the corpus programs of the bugs pass with it,
#                            MLIR 22's mlir-opt refuses it in one line
# The fuzzer runs it too: make fuzz-lowering-ci (5,000 programs) and
# make fuzz-lowering FUZZ_ARGS=--fixed-lowering FUZZ_VERSIONS=19.

.PHONY: lowering-fixes lowering-fixes-ci
lowering-fixes: toolchain ## MLIR 19's and 22's async-parallel-for with our patches, as pass plugins (async-parallel-for-fixed)
	@bash scripts/toolchain/fetch_mlir_source.sh --offline 19 22
	@bash scripts/toolchain/fetch_mlir.sh --offline --dev 22
	LLVM_PREFIX=$(LLVM_PREFIX) bash lowering-fixes/build.sh
	LLVM_PREFIX=$(LLVM_PREFIX) bash lowering-fixes/build.sh --version 22

lowering-fixes-ci: lowering-fixes build toolchain-lit ## checks of the patched async-parallel-for plugin (make test)
	LLVM_PREFIX=$(LLVM_PREFIX) LIT=$(LIT) PYTHON=$(PYTHON) bash lowering-fixes/check.sh
test: lowering-fixes-ci
