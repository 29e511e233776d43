# The benchmark pack (docs/scaling.md, bench/pack/README.md): the benchmark
# programs compiled ahead of time with our runtime, the floor, MLIR's C++
# runtime from Catalyst's wheel (LLVM linked in), libomp and the runner
# utils, in one folder that runs wherever glibc >= 2.34 and python3 are;
# scripts/bench/pack_build.py builds it, its run.sh (scripts/bench/pack_run.py)
# measures the speed-up against the number of workers.
# Variables from the top Makefile: PYTHON, RUNTIME_SO, FLOOR_SO, LLVM_PREFIX.
#   make bench-pack                      target/bench-pack/ (at most 48 MiB)
#   target/bench-pack/run.sh --workers 1,2,4,8,16 --runs 5
#   make bench-pack-ci                   the pack under env -i: every library
#                                        from the pack (ldd), then 1 and 2
#                                        workers, 1 run (make test)
BENCH_PACK_DIR := $(CURDIR)/target/bench-pack
BENCH_PACK_CI  := $(CURDIR)/target/bench-pack-ci

.PHONY: bench-pack bench-pack-ci
bench-pack: build ## the benchmark pack target/bench-pack/: programs compiled ahead of time, our runtime, the floor, Catalyst's C++ runtime, libomp; run.sh runs it anywhere
	$(PYTHON) scripts/bench/pack_build.py --out $(BENCH_PACK_DIR) --runtime $(RUNTIME_SO) \
	  --floor $(FLOOR_SO) --llvm-prefix $(LLVM_PREFIX)

# env -i: no LLVM, no LD_LIBRARY_PATH, no variable of ours; the pack alone.
bench-pack-ci: bench-pack ## the pack's tests and locked.py's, then the pack under env -i: ldd finds every library inside it, every program right at 1 and 2 workers, 1 run (make test)
	$(PYTHON) -m unittest discover -s scripts/bench -p 'test_pack_*.py'
	$(PYTHON) -m unittest discover -s scripts/bench -p 'test_locked.py'
	env -i $(BENCH_PACK_DIR)/run.sh --ldd >$(BENCH_PACK_DIR)-ldd.txt || { cat $(BENCH_PACK_DIR)-ldd.txt; exit 1; }
	@tail -1 $(BENCH_PACK_DIR)-ldd.txt
	env -i $(BENCH_PACK_DIR)/run.sh --workers 1,2 --runs 1 --out $(BENCH_PACK_CI)
