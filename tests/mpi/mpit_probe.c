/* mpit_probe.c: MPI_Probe, MPI_Iprobe, MPI_Mprobe, MPI_Improbe (sub-test "probe", contract in
 * mpit.h). Every rank sends to its right neighbour; the receiver learns source, tag and size
 * only from the probe, allocates exactly that, and checks the bytes:
 *   - tags 700 (100 B, eager) and 701 (300 KB, rendezvous): MPI_Probe(left, 701) first, i.e.
 *     out of send order, then MPI_Iprobe(ANY_SOURCE, ANY_TAG) polled (bounded) for the other;
 *   - tag 702 twice (5000 B then 70000 B): MPI_Mprobe + MPI_Mrecv, then MPI_Improbe polled +
 *     MPI_Imrecv + MPI_Wait; the two must come in send order;
 *   - at the end, after a barrier, MPI_Iprobe for a tag nobody sent must say "nothing". */
#include <stdlib.h>

#include "mpit.h"

enum { kTagSmall = 700, kTagBig = 701, kTagM = 702, kTagNone = 799 };

static int probed_count(const MPI_Status* st, int source, int tag) {
  int count = -1;
  MPI_Get_count(st, MPI_BYTE, &count);
  if (st->MPI_SOURCE != source) mpit_fail("probe source", st->MPI_SOURCE, source);
  if (st->MPI_TAG != tag) mpit_fail("probe tag", st->MPI_TAG, tag);
  return count;
}

/* Polls MPI_Iprobe (or MPI_Improbe when msg != NULL) until it finds a message; fails after 60 s. */
static void poll_probe(int source, int tag, MPI_Status* st, MPI_Message* msg) {
  const double deadline = MPI_Wtime() + 60.0;
  int flag = 0;
  while (!flag) {
    if (msg != NULL)
      MPI_Improbe(source, tag, MPI_COMM_WORLD, &flag, msg, st);
    else
      MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, st);
    if (!flag && MPI_Wtime() > deadline) mpit_fail("iprobe found nothing in 60 s", source, tag);
  }
}

static void recv_checked(int source, int tag, int count, size_t expect, int key) {
  if ((size_t)count != expect) mpit_fail("probed count", count, (long)expect);
  unsigned char* rx = mpit_alloc((size_t)count);
  MPI_Status st;
  MPI_Recv(rx, count, MPI_BYTE, source, tag, MPI_COMM_WORLD, &st);
  mpit_check(rx, (size_t)count, source, key, "probed payload");
  free(rx);
}

void mpit_probe(void) {
  const int right = (mpit_rank + 1) % mpit_size;
  const int left = (mpit_rank + mpit_size - 1) % mpit_size;
  static const size_t len[4] = {100, 300000, 5000, 70000};
  static const int tag[4] = {kTagSmall, kTagBig, kTagM, kTagM};
  unsigned char* tx[4];
  MPI_Request req[4];
  for (int k = 0; k < 4; ++k) {
    tx[k] = mpit_alloc(len[k]);
    mpit_fill(tx[k], len[k], mpit_rank, tag[k] * 10 + k);
    MPI_Isend(tx[k], (int)len[k], MPI_BYTE, right, tag[k], MPI_COMM_WORLD, &req[k]);
  }
  MPI_Status st;
  /* The big one first, by a blocking probe. */
  MPI_Probe(left, kTagBig, MPI_COMM_WORLD, &st);
  recv_checked(left, kTagBig, probed_count(&st, left, kTagBig), len[1], kTagBig * 10 + 1);
  /* The small one found by polling with wildcards (the tag-702 ones come after it in order
   * from the same sender, so any-tag must find 700 first). */
  poll_probe(MPI_ANY_SOURCE, MPI_ANY_TAG, &st, NULL);
  recv_checked(left, kTagSmall, probed_count(&st, left, kTagSmall), len[0], kTagSmall * 10);
  /* Matched probes: the first 702 by MPI_Mprobe, the second by MPI_Improbe. */
  for (int k = 2; k < 4; ++k) {
    MPI_Message msg = MPI_MESSAGE_NULL;
    if (k == 2)
      MPI_Mprobe(MPI_ANY_SOURCE, kTagM, MPI_COMM_WORLD, &msg, &st);
    else
      poll_probe(MPI_ANY_SOURCE, kTagM, &st, &msg);
    const int count = probed_count(&st, left, kTagM);
    if ((size_t)count != len[k]) mpit_fail("mprobe count (out of order?)", count, (long)len[k]);
    unsigned char* rx = mpit_alloc((size_t)count);
    if (k == 2) {
      MPI_Mrecv(rx, count, MPI_BYTE, &msg, &st);
    } else {
      MPI_Request r;
      MPI_Imrecv(rx, count, MPI_BYTE, &msg, &r);
      MPI_Wait(&r, &st);
    }
    if (msg != MPI_MESSAGE_NULL) mpit_fail("message handle not consumed", k, 0);
    mpit_check(rx, (size_t)count, left, kTagM * 10 + k, "mprobe payload");
    free(rx);
  }
  MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
  for (int k = 0; k < 4; ++k) free(tx[k]);
  MPI_Barrier(MPI_COMM_WORLD);
  int flag = 1;
  MPI_Iprobe(MPI_ANY_SOURCE, kTagNone, MPI_COMM_WORLD, &flag, &st);
  if (flag) mpit_fail("iprobe found a message nobody sent", st.MPI_SOURCE, st.MPI_TAG);
  MPI_Barrier(MPI_COMM_WORLD);
}
