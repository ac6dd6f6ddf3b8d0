/* mpit_p2p.c: point-to-point payloads of 0 B .. 64 MiB, blocking and nonblocking, every byte
 * checked (sub-test "p2p", contract in mpit.h).
 *
 * Sizes: 0, every power of two from 1 B to 64 MiB, and odd sizes just around the BTL's limits
 * (eager 16 KiB, max send 64 KiB, min RDMA pipeline 256 KiB, RDMA fragment 4 MiB, put/get limit
 * 8 MiB: L-33, L-17, L-1, L+1, which straddle the limit with and without ob1's header).
 * Blocking: a ring, even ranks MPI_Send (MPI_Ssend for every other size) then MPI_Recv, odd
 * ranks the other way round (deadlock-free: some rank always receives first). Nonblocking:
 * every rank exchanges with both neighbours at once (Irecv x2, Isend x2, Waitall), different
 * tags per direction so a crossed message fails the check. Receive buffers are one byte longer
 * than the message and that byte must stay untouched. */
#include <stdlib.h>
#include <string.h>

#include "mpit.h"

enum { kTagRight = 10, kTagLeft = 11, kTagBlocking = 12, kGuard = 0xA5 };

static size_t build_sizes(size_t* out) {
  size_t n = 0;
  out[n++] = 0;
  for (size_t s = 1; s <= ((size_t)64 << 20); s <<= 1) out[n++] = s;
  static const size_t limits[] = {16384, 65536, 262144, (size_t)4 << 20, (size_t)8 << 20};
  static const long deltas[] = {-33, -17, -1, 1};
  for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); ++l)
    for (size_t d = 0; d < sizeof(deltas) / sizeof(deltas[0]); ++d)
      out[n++] = (size_t)((long)limits[l] + deltas[d]);
  out[n++] = 3;
  out[n++] = 1000003;
  return n;
}

static void check_guard(const unsigned char* rx, size_t n, const char* what) {
  if (rx[n] != kGuard) mpit_fail(what, (long)n, rx[n]);
}

static void check_status(const MPI_Status* st, int source, int tag, size_t n) {
  int count = -1;
  MPI_Get_count(st, MPI_BYTE, &count);
  if (st->MPI_SOURCE != source) mpit_fail("status source", st->MPI_SOURCE, source);
  if (st->MPI_TAG != tag) mpit_fail("status tag", st->MPI_TAG, tag);
  if ((size_t)count != n) mpit_fail("status count", count, (long)n);
}

static void blocking(size_t n, int k, unsigned char* tx, unsigned char* rx) {
  const int right = (mpit_rank + 1) % mpit_size;
  const int left = (mpit_rank + mpit_size - 1) % mpit_size;
  MPI_Status st;
  mpit_fill(tx, n, mpit_rank, kTagBlocking);
  memset(rx, kGuard, n + 1);
  const int synchronous = k & 1;
  if (mpit_rank % 2 == 0) {
    if (synchronous)
      MPI_Ssend(tx, (int)n, MPI_BYTE, right, kTagBlocking, MPI_COMM_WORLD);
    else
      MPI_Send(tx, (int)n, MPI_BYTE, right, kTagBlocking, MPI_COMM_WORLD);
    MPI_Recv(rx, (int)n, MPI_BYTE, left, kTagBlocking, MPI_COMM_WORLD, &st);
  } else {
    MPI_Recv(rx, (int)n, MPI_BYTE, left, kTagBlocking, MPI_COMM_WORLD, &st);
    if (synchronous)
      MPI_Ssend(tx, (int)n, MPI_BYTE, right, kTagBlocking, MPI_COMM_WORLD);
    else
      MPI_Send(tx, (int)n, MPI_BYTE, right, kTagBlocking, MPI_COMM_WORLD);
  }
  check_status(&st, left, kTagBlocking, n);
  mpit_check(rx, n, left, kTagBlocking, "blocking payload");
  check_guard(rx, n, "blocking guard byte overwritten");
}

static void nonblocking(size_t n, unsigned char* tx_r, unsigned char* tx_l, unsigned char* rx_l,
                        unsigned char* rx_r) {
  const int right = (mpit_rank + 1) % mpit_size;
  const int left = (mpit_rank + mpit_size - 1) % mpit_size;
  MPI_Request req[4];
  MPI_Status st[4];
  mpit_fill(tx_r, n, mpit_rank, kTagRight);
  mpit_fill(tx_l, n, mpit_rank, kTagLeft);
  memset(rx_l, kGuard, n + 1);
  memset(rx_r, kGuard, n + 1);
  /* From the left neighbour comes its "to the right" message, and vice versa. */
  MPI_Irecv(rx_l, (int)n, MPI_BYTE, left, kTagRight, MPI_COMM_WORLD, &req[0]);
  MPI_Irecv(rx_r, (int)n, MPI_BYTE, right, kTagLeft, MPI_COMM_WORLD, &req[1]);
  MPI_Isend(tx_r, (int)n, MPI_BYTE, right, kTagRight, MPI_COMM_WORLD, &req[2]);
  MPI_Isend(tx_l, (int)n, MPI_BYTE, left, kTagLeft, MPI_COMM_WORLD, &req[3]);
  MPI_Waitall(4, req, st);
  check_status(&st[0], left, kTagRight, n);
  check_status(&st[1], right, kTagLeft, n);
  mpit_check(rx_l, n, left, kTagRight, "nonblocking payload from the left");
  mpit_check(rx_r, n, right, kTagLeft, "nonblocking payload from the right");
  check_guard(rx_l, n, "nonblocking guard byte overwritten (left)");
  check_guard(rx_r, n, "nonblocking guard byte overwritten (right)");
}

void mpit_p2p(void) {
  size_t sizes[64];
  const size_t count = build_sizes(sizes);
  const size_t max = (size_t)64 << 20;
  unsigned char* a = mpit_alloc(max + 1);
  unsigned char* b = mpit_alloc(max + 1);
  unsigned char* c = mpit_alloc(max + 1);
  unsigned char* d = mpit_alloc(max + 1);
  for (size_t k = 0; k < count; ++k) {
    blocking(sizes[k], (int)k, a, b);
    nonblocking(sizes[k], a, b, c, d);
  }
  free(a);
  free(b);
  free(c);
  free(d);
}
