/* mpi_rcache: exercises a BTL's memory registrations through osc rdma and ob1 (run by
 * btl_iwarpx_rcache.sh with btl self,iwarpx, osc rdma and
 * btl_iwarpx_local_registration_threshold=0, so osc rdma registers every origin buffer).
 * Rank 0 is the origin, rank 1 the target (other ranks only take part in the fences).
 *  1. reuse: kReuse puts of 64 KiB alternately from two buffers into rank 1's window, each
 *     checked there (with a registration cache: one registration per buffer for all of them,
 *     unless btl_iwarpx_mr_cache_max forces evictions);
 *  2. ob1: kSends 1 MiB messages from one buffer (ob1's RDMA protocol registers it), checked;
 *  3. free/reallocate: kRealloc rounds of malloc(1 MiB) (mmap'ed: M_MMAP_THRESHOLD is
 *     lowered), fill, put, check at the target, free — the next malloc usually returns the
 *     same address, so a cache that missed the free would hand out a stale registration.
 * Prints "mpi_rcache: OK <n> ranks, <p> puts, <s> sends, <r> reallocations, <a> at the same
 * address" from rank 0 and exits 0, or names the first mismatch and aborts. */
#include <malloc.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kReuse = 200, kSends = 40, kRealloc = 24 };
#define kPutSize ((size_t)64 * 1024)
#define kBigSize ((size_t)1 << 20)

static int rank, size;

static void fail(const char* what, long a, long b) {
  fprintf(stderr, "mpi_rcache: rank %d: %s (%ld, %ld)\n", rank, what, a, b);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static unsigned char pattern(size_t i, int round) {
  return (unsigned char)((i * 131u) ^ ((unsigned)round * 7u + 1u) ^ (i >> 9));
}

static void fill(unsigned char* p, size_t n, int round) {
  for (size_t i = 0; i < n; ++i) p[i] = pattern(i, round);
}

static void check(const unsigned char* p, size_t n, int round, const char* what) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != pattern(i, round)) fail(what, round, (long)i);
}

/* One fenced put of n bytes from src (rank 0) into rank 1's window, checked at rank 1. */
static void put_round(MPI_Win win, const unsigned char* win_mem, unsigned char* src, size_t n,
                      int round, const char* what) {
  MPI_Win_fence(0, win);
  if (rank == 0) MPI_Put(src, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
  MPI_Win_fence(0, win);
  if (rank == 1) check(win_mem, n, round, what);
}

int main(int argc, char** argv) {
  /* Large blocks by mmap, so free() really unmaps them (fixed threshold, no adaptation). */
  (void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) fail("needs at least 2 ranks", size, 2);

  /* MPI_Win_create, not MPI_Win_allocate: osc rdma puts into an allocated window of a peer on
   * the same node through shared memory, bypassing the BTL. */
  unsigned char* win_mem = calloc(1, kBigSize);
  if (win_mem == NULL) fail("calloc", 0, (long)kBigSize);
  MPI_Win win;
  MPI_Win_create(win_mem, (MPI_Aint)kBigSize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);

  /* 1. Many puts, alternately from two buffers. */
  unsigned char* bufs[2] = {malloc(kPutSize), malloc(kPutSize)};
  if (bufs[0] == NULL || bufs[1] == NULL) fail("malloc", 0, (long)kPutSize);
  for (int i = 0; i < kReuse; ++i) {
    if (rank == 0) fill(bufs[i & 1], kPutSize, i);
    put_round(win, win_mem, bufs[i & 1], kPutSize, i, "reused-buffer put byte");
  }
  free(bufs[0]);
  free(bufs[1]);

  /* 2. ob1 large messages from one buffer. */
  unsigned char* big = malloc(kBigSize);
  if (big == NULL) fail("malloc", 1, (long)kBigSize);
  for (int i = 0; i < kSends; ++i) {
    if (rank == 0) {
      fill(big, kBigSize, 500 + i);
      MPI_Send(big, (int)kBigSize, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
    } else if (rank == 1) {
      memset(big, 0, kBigSize);
      MPI_Recv(big, (int)kBigSize, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      check(big, kBigSize, 500 + i, "ob1 message byte");
    }
  }
  free(big);

  /* 3. Free and reallocate between operations. */
  uintptr_t prev = 0;
  int same = 0;
  for (int k = 0; k < kRealloc; ++k) {
    unsigned char* p = malloc(kBigSize);
    if (p == NULL) fail("malloc", 2, (long)kBigSize);
    if ((uintptr_t)p == prev) ++same;
    if (rank == 0) fill(p, kBigSize, 1000 + k);
    put_round(win, win_mem, p, kBigSize, 1000 + k, "reallocated-buffer put byte");
    free(p);
    prev = (uintptr_t)p;
  }

  MPI_Win_free(&win);
  free(win_mem);
  if (rank == 0) {
    printf("mpi_rcache: OK %d ranks, %d puts, %d sends, %d reallocations, %d at the same address\n",
           size, kReuse, kSends, kRealloc, same);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
