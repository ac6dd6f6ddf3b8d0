/* mpi_smoke: the project's MPI smoke test, run over whatever transport mpirun selects
 * (Open MPI's mtl ofi or btl ofi over the iwarpx RDM endpoint in tests/mpi/).
 * Point-to-point of many sizes (0 B .. 4 MiB) blocking, nonblocking and from
 * MPI_ANY_SOURCE, every byte checked; collectives (Bcast, Allreduce, Alltoall) checked;
 * one-sided: Put with fence, Get with fence, Accumulate under exclusive locks from every
 * rank, checked. Prints "mpi_smoke: OK <ranks> ranks" and exits 0, or names the first
 * mismatch and aborts. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void fail(const char* what, long a, long b) {
  fprintf(stderr, "mpi_smoke: rank %d: %s (%ld, %ld)\n", rank, what, a, b);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static unsigned char pattern(long i, int from, size_t n) {
  return (unsigned char)((i * 131u) ^ (unsigned)from ^ (n * 7u));
}

static void p2p(void) {
  static const size_t sizes[] = {0,     1,     7,     64,     1000,    4096,
                                 16352, 16353, 65536, 100000, 1 << 20, (1 << 22) + 3};
  const int right = (rank + 1) % size;
  const int left = (rank + size - 1) % size;
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
    const size_t n = sizes[k];
    unsigned char* tx = malloc(n + 1);
    unsigned char* rx = malloc(n + 1);
    for (size_t i = 0; i < n; ++i) tx[i] = pattern((long)i, rank, n);
    /* Blocking ring exchange. */
    MPI_Sendrecv(tx, (int)n, MPI_BYTE, right, 1, rx, (int)n, MPI_BYTE, left, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (size_t i = 0; i < n; ++i)
      if (rx[i] != pattern((long)i, left, n)) fail("sendrecv byte", (long)n, (long)i);
    /* Nonblocking, receive from any source. */
    MPI_Request req[2];
    MPI_Status st;
    memset(rx, 0, n + 1);
    MPI_Irecv(rx, (int)n, MPI_BYTE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(tx, (int)n, MPI_BYTE, right, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Wait(&req[0], &st);
    MPI_Wait(&req[1], MPI_STATUS_IGNORE);
    if (st.MPI_SOURCE != left) fail("any-source sender", st.MPI_SOURCE, left);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    if ((size_t)count != n) fail("any-source count", count, (long)n);
    for (size_t i = 0; i < n; ++i)
      if (rx[i] != pattern((long)i, left, n)) fail("isend byte", (long)n, (long)i);
    free(tx);
    free(rx);
  }
  /* Many small messages in flight, matched in order. */
  enum { kMany = 200 };
  int out[kMany], in[kMany];
  MPI_Request reqs[2 * kMany];
  for (int i = 0; i < kMany; ++i) {
    out[i] = rank * 100000 + i;
    MPI_Irecv(&in[i], 1, MPI_INT, left, 3, MPI_COMM_WORLD, &reqs[i]);
  }
  for (int i = 0; i < kMany; ++i)
    MPI_Isend(&out[i], 1, MPI_INT, right, 3, MPI_COMM_WORLD, &reqs[kMany + i]);
  MPI_Waitall(2 * kMany, reqs, MPI_STATUSES_IGNORE);
  for (int i = 0; i < kMany; ++i)
    if (in[i] != left * 100000 + i) fail("message order", in[i], left * 100000 + i);
}

static void collectives(void) {
  long v = rank + 1;
  long sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (sum != (long)size * (size + 1) / 2) fail("allreduce", sum, (long)size * (size + 1) / 2);
  int buf[1024];
  for (int i = 0; i < 1024; ++i) buf[i] = rank == 0 ? i * 3 : -1;
  MPI_Bcast(buf, 1024, MPI_INT, 0, MPI_COMM_WORLD);
  for (int i = 0; i < 1024; ++i)
    if (buf[i] != i * 3) fail("bcast", buf[i], i * 3);
  int* a = malloc(sizeof(int) * (size_t)size * 256);
  int* b = malloc(sizeof(int) * (size_t)size * 256);
  for (int p = 0; p < size; ++p)
    for (int i = 0; i < 256; ++i) a[p * 256 + i] = rank * 1000000 + p * 1000 + i;
  MPI_Alltoall(a, 256, MPI_INT, b, 256, MPI_INT, MPI_COMM_WORLD);
  for (int p = 0; p < size; ++p)
    for (int i = 0; i < 256; ++i)
      if (b[p * 256 + i] != p * 1000000 + rank * 1000 + i) fail("alltoall", p, i);
  free(a);
  free(b);
}

static void one_sided(void) {
  enum { kWords = 4096 };
  long* base = NULL;
  MPI_Win win;
  MPI_Alloc_mem(kWords * sizeof(long), MPI_INFO_NULL, &base);
  for (int i = 0; i < kWords; ++i) base[i] = -1;
  MPI_Win_create(base, kWords * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  const int right = (rank + 1) % size;
  const int left = (rank + size - 1) % size;
  long src[kWords];
  for (int i = 0; i < kWords; ++i) src[i] = rank * 10000 + i;
  /* Put with fence. */
  MPI_Win_fence(0, win);
  MPI_Put(src, kWords, MPI_LONG, right, 0, kWords, MPI_LONG, win);
  MPI_Win_fence(0, win);
  for (int i = 0; i < kWords; ++i)
    if (base[i] != left * 10000 + i) fail("put/fence", base[i], left * 10000 + i);
  /* Get with fence. */
  long got[kWords];
  MPI_Win_fence(0, win);
  MPI_Get(got, kWords, MPI_LONG, right, 0, kWords, MPI_LONG, win);
  MPI_Win_fence(0, win);
  for (int i = 0; i < kWords; ++i)
    if (got[i] != rank * 10000 + i) fail("get/fence", got[i], rank * 10000 + i);
  /* Accumulate into rank 0's word 0 under exclusive locks, 50 times from every rank. */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) base[0] = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < 50; ++k) {
    long one = 1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Accumulate(&one, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, win);
    MPI_Win_unlock(0, win);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  long total = 0;
  MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
  MPI_Get(&total, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
  MPI_Win_unlock(0, win);
  if (total != 50L * size) fail("accumulate under locks", total, 50L * size);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_free(&win);
  MPI_Free_mem(base);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  p2p();
  collectives();
  one_sided();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("mpi_smoke: OK %d ranks\n", size);
  MPI_Finalize();
  return 0;
}
