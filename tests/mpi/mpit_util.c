/* mpit_util.c: failure reporting, pattern fill/check and allocation for the mpit sub-tests
 * (contracts in mpit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpit.h"

int mpit_rank;
int mpit_size;
const char* mpit_current = "init";

_Noreturn void mpit_fail(const char* what, long a, long b) {
  fprintf(stderr, "mpit: rank %d: %s: FAIL %s (%ld, %ld)\n", mpit_rank, mpit_current, what, a, b);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  abort(); /* MPI_Abort does not return; keep _Noreturn honest if it ever did */
}

void mpit_fill(unsigned char* buf, size_t n, int from, int tag) {
  for (size_t i = 0; i < n; ++i) buf[i] = mpit_byte(i, from, tag, n);
}

void mpit_check(const unsigned char* buf, size_t n, int from, int tag, const char* what) {
  for (size_t i = 0; i < n; ++i)
    if (buf[i] != mpit_byte(i, from, tag, n)) mpit_fail(what, (long)n, (long)i);
}

void* mpit_alloc(size_t n) {
  void* p = malloc(n == 0 ? 1 : n);
  if (p == NULL) mpit_fail("out of memory", (long)n, 0);
  return p;
}

void* mpit_zalloc(size_t n) {
  void* p = mpit_alloc(n);
  memset(p, 0, n == 0 ? 1 : n);
  return p;
}
