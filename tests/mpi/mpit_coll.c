/* mpit_coll.c: collectives with checks (sub-test "coll", contract in mpit.h): Barrier (rank 0
 * enters 200 ms late; nobody may leave earlier), Bcast (1 KiB and 1 MiB, root = last rank),
 * Reduce (sum to rank 0), Allreduce (sum, max; 64 Ki longs), Gather, Scatter, Allgather,
 * Alltoall, Alltoallv (per-pair counts), Reduce_scatter (uneven counts) and
 * Reduce_scatter_block. Values depend on (rank, index), so any misplaced block fails. */
#include <stdlib.h>
#include <time.h>

#include "mpit.h"

static long v(int r, long i) {
  return (long)r * 1000003L + i;
}

static void barrier(void) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  if (mpit_rank == 0) {
    const struct timespec d = {0, 200L * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double waited = MPI_Wtime() - t0;
  if (waited < 0.15)
    mpit_fail("barrier left before rank 0 entered (ms)", (long)(waited * 1e3), 150);
}

static void bcast(size_t n) {
  const int root = mpit_size - 1;
  unsigned char* b = mpit_alloc(n);
  if (mpit_rank == root)
    mpit_fill(b, n, root, 900);
  else
    for (size_t i = 0; i < n; ++i) b[i] = 0;
  MPI_Bcast(b, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
  mpit_check(b, n, root, 900, "bcast");
  free(b);
}

static void reductions(void) {
  enum { kN = 65536 };
  long* in = mpit_alloc(sizeof(long) * kN);
  long* out = mpit_alloc(sizeof(long) * kN);
  for (long i = 0; i < kN; ++i) in[i] = v(mpit_rank, i);
  long sum_r = 0; /* sum over ranks of r * 1000003 */
  for (int r = 0; r < mpit_size; ++r) sum_r += v(r, 0);
  for (long i = 0; i < kN; ++i) out[i] = -1;
  MPI_Reduce(in, out, kN, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (mpit_rank == 0)
    for (long i = 0; i < kN; ++i)
      if (out[i] != sum_r + i * mpit_size) mpit_fail("reduce sum", i, out[i]);
  MPI_Allreduce(in, out, kN, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (long i = 0; i < kN; ++i)
    if (out[i] != sum_r + i * mpit_size) mpit_fail("allreduce sum", i, out[i]);
  MPI_Allreduce(in, out, kN, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  for (long i = 0; i < kN; ++i)
    if (out[i] != v(mpit_size - 1, i)) mpit_fail("allreduce max", i, out[i]);
  free(in);
  free(out);
}

static void gather_scatter(void) {
  enum { kN = 5000 };
  const int p = mpit_size;
  long* mine = mpit_alloc(sizeof(long) * kN);
  long* all = mpit_alloc(sizeof(long) * kN * (size_t)p);
  for (long i = 0; i < kN; ++i) mine[i] = v(mpit_rank, i);
  for (long i = 0; i < (long)kN * p; ++i) all[i] = -1;
  MPI_Gather(mine, kN, MPI_LONG, all, kN, MPI_LONG, 0, MPI_COMM_WORLD);
  if (mpit_rank == 0)
    for (int r = 0; r < p; ++r)
      for (long i = 0; i < kN; ++i)
        if (all[(long)r * kN + i] != v(r, i)) mpit_fail("gather", r, i);
  for (long i = 0; i < (long)kN * p; ++i) all[i] = -1;
  MPI_Allgather(mine, kN, MPI_LONG, all, kN, MPI_LONG, MPI_COMM_WORLD);
  for (int r = 0; r < p; ++r)
    for (long i = 0; i < kN; ++i)
      if (all[(long)r * kN + i] != v(r, i)) mpit_fail("allgather", r, i);
  /* Scatter from rank 0: block r is v(100 + r, i). */
  if (mpit_rank == 0)
    for (int r = 0; r < p; ++r)
      for (long i = 0; i < kN; ++i) all[(long)r * kN + i] = v(100 + r, i);
  for (long i = 0; i < kN; ++i) mine[i] = -1;
  MPI_Scatter(all, kN, MPI_LONG, mine, kN, MPI_LONG, 0, MPI_COMM_WORLD);
  for (long i = 0; i < kN; ++i)
    if (mine[i] != v(100 + mpit_rank, i)) mpit_fail("scatter", mpit_rank, i);
  free(mine);
  free(all);
}

/* Alltoall with 4096 longs per pair, then Alltoallv where rank s sends (s + 2 * d + 1) * 1000
 * longs to rank d. Element i of the block s -> d is v(s * 64 + d, i). */
static void alltoall(void) {
  const int p = mpit_size;
  enum { kN = 4096 };
  long* a = mpit_alloc(sizeof(long) * kN * (size_t)p);
  long* b = mpit_alloc(sizeof(long) * kN * (size_t)p);
  for (int d = 0; d < p; ++d)
    for (long i = 0; i < kN; ++i) a[(long)d * kN + i] = v(mpit_rank * 64 + d, i);
  MPI_Alltoall(a, kN, MPI_LONG, b, kN, MPI_LONG, MPI_COMM_WORLD);
  for (int s = 0; s < p; ++s)
    for (long i = 0; i < kN; ++i)
      if (b[(long)s * kN + i] != v(s * 64 + mpit_rank, i)) mpit_fail("alltoall", s, i);
  free(a);
  free(b);
  int* sc = mpit_alloc(sizeof(int) * (size_t)p);
  int* sd = mpit_alloc(sizeof(int) * (size_t)p);
  int* rc = mpit_alloc(sizeof(int) * (size_t)p);
  int* rd = mpit_alloc(sizeof(int) * (size_t)p);
  int st = 0, rt = 0;
  for (int d = 0; d < p; ++d) {
    sc[d] = (mpit_rank + 2 * d + 1) * 1000;
    sd[d] = st;
    st += sc[d];
    rc[d] = (d + 2 * mpit_rank + 1) * 1000;
    rd[d] = rt;
    rt += rc[d];
  }
  a = mpit_alloc(sizeof(long) * (size_t)st);
  b = mpit_alloc(sizeof(long) * (size_t)rt);
  for (int d = 0; d < p; ++d)
    for (long i = 0; i < sc[d]; ++i) a[sd[d] + i] = v(mpit_rank * 64 + d, i);
  for (long i = 0; i < rt; ++i) b[i] = -1;
  MPI_Alltoallv(a, sc, sd, MPI_LONG, b, rc, rd, MPI_LONG, MPI_COMM_WORLD);
  for (int s = 0; s < p; ++s)
    for (long i = 0; i < rc[s]; ++i)
      if (b[rd[s] + i] != v(s * 64 + mpit_rank, i)) mpit_fail("alltoallv", s, i);
  free(a);
  free(b);
  free(sc);
  free(sd);
  free(rc);
  free(rd);
}

/* Reduce_scatter with rank r getting (r + 1) * 1000 elements, then Reduce_scatter_block. */
static void reduce_scatter(void) {
  const int p = mpit_size;
  int* counts = mpit_alloc(sizeof(int) * (size_t)p);
  long total = 0, mine_at = 0;
  for (int r = 0; r < p; ++r) {
    counts[r] = (r + 1) * 1000;
    if (r < mpit_rank) mine_at += counts[r];
    total += counts[r];
  }
  long* in = mpit_alloc(sizeof(long) * (size_t)total);
  long* out = mpit_alloc(sizeof(long) * (size_t)counts[mpit_rank]);
  long sum_r = 0;
  for (int r = 0; r < p; ++r) sum_r += v(r, 0);
  for (long i = 0; i < total; ++i) in[i] = v(mpit_rank, i);
  MPI_Reduce_scatter(in, out, counts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (long i = 0; i < counts[mpit_rank]; ++i)
    if (out[i] != sum_r + (mine_at + i) * p) mpit_fail("reduce_scatter", i, out[i]);
  enum { kBlock = 3000 };
  long* in2 = mpit_alloc(sizeof(long) * kBlock * (size_t)p);
  long out2[kBlock];
  for (long i = 0; i < (long)kBlock * p; ++i) in2[i] = v(mpit_rank, i);
  MPI_Reduce_scatter_block(in2, out2, kBlock, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (long i = 0; i < kBlock; ++i)
    if (out2[i] != sum_r + ((long)mpit_rank * kBlock + i) * p)
      mpit_fail("reduce_scatter_block", i, out2[i]);
  free(in2);
  free(counts);
  free(in);
  free(out);
}

void mpit_coll(void) {
  barrier();
  bcast(1024);
  bcast((size_t)1 << 20);
  reductions();
  gather_scatter();
  alltoall();
  reduce_scatter();
}
