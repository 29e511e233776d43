/* The C main of every MLIR program in the benchmark pack (make bench-pack,
 * scripts/bench/pack_build.py; docs/scaling.md).
 *
 * The program's MLIR entry (`main` or `entry`, returning void) is renamed
 * pack_entry in its object file (scripts/corpus/aot_compile.sh). This main
 * runs it with stdout captured, copies what it printed to stdout, and
 * checks the first line against PACK_EXPECT (given with -D at compile
 * time: the checksum of BENCH-EXPECT, or the sanity line of MLIR's
 * microbenchmarks): a wrong answer exits 3, so a broken run is never
 * timed as a fast one. Needs only the async ABI and the runner utils.
 *
 * It also defines _mlir_ciface_printMemrefF32, which MLIR's
 * microbench-*-async-parallel-for.mlir call for their sanity check: it
 * lives in libmlir_runner_utils, which the pack does not carry (Debian's
 * needs libLLVM; Catalyst's wheel has none). It prints the elements in
 * row-major order, "[2, 2, ...]", one line. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef PACK_EXPECT
#error "compile with -DPACK_EXPECT='\"<first line of the output>\"'"
#endif

void pack_entry(void);

typedef struct {
  int64_t rank;
  void *descriptor;
} UnrankedMemRef;

/* descriptor: float *allocated, float *aligned, int64_t offset,
 * int64_t sizes[rank], int64_t strides[rank] */
void _mlir_ciface_printMemrefF32(UnrankedMemRef *m) {
  char *d = m->descriptor;
  float *aligned = *(float **)(d + sizeof(float *));
  int64_t *meta = (int64_t *)(d + 2 * sizeof(float *));
  int64_t offset = meta[0], rank = m->rank, count = 1;
  int64_t *sizes = meta + 1, *strides = meta + 1 + rank;
  for (int64_t r = 0; r < rank; r++) count *= sizes[r];
  printf("[");
  for (int64_t k = 0; k < count; k++) {
    int64_t rest = k, at = offset;
    for (int64_t r = rank - 1; r >= 0; r--) {
      at += (rest % sizes[r]) * strides[r];
      rest /= sizes[r];
    }
    printf("%s%g", k ? ", " : "", (double)aligned[at]);
  }
  printf("]\n");
}

int main(void) {
  fflush(stdout);
  int saved = dup(1), fd = memfd_create("pack-output", 0);
  if (saved < 0 || fd < 0 || dup2(fd, 1) < 0) {
    perror("pack-check: cannot capture stdout");
    return 2;
  }
  pack_entry();
  fflush(stdout);
  dup2(saved, 1);
  off_t n = lseek(fd, 0, SEEK_END);
  char *out = malloc((size_t)n + 1);
  if (n < 0 || !out || pread(fd, out, (size_t)n, 0) != n) {
    perror("pack-check: cannot read the captured output");
    return 2;
  }
  out[n] = 0;
  fwrite(out, 1, (size_t)n, stdout);
  fflush(stdout);
  size_t len = strcspn(out, "\n");
  if (len != strlen(PACK_EXPECT) || memcmp(out, PACK_EXPECT, len) != 0) {
    fprintf(stderr, "pack-check: wrong result: first line \"%.*s\", expected \"%s\"\n",
            (int)len, out, PACK_EXPECT);
    return 3;
  }
  return 0;
}
