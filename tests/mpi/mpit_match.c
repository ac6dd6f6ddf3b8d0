/* mpit_match.c: matching (sub-tests "anysrc" and "many2one", contract in mpit.h).
 *
 * anysrc: every rank sends one message to every other rank; the receivers take them with
 *   (1) MPI_ANY_SOURCE + MPI_ANY_TAG, (2) MPI_ANY_SOURCE + a fixed tag, (3) a fixed source +
 *   MPI_ANY_TAG for two messages that must arrive in send order (non-overtaking). Sizes depend
 *   on the sender and straddle the eager limit, so eager and rendezvous messages mix; the
 *   status (source, tag, count) must name the message and its bytes must be that sender's.
 * many2one: every rank sends kMany messages to rank 0 with tags alternating A, B, A, B, ...
 *   (every 8th one 200 KB, the rest small); rank 0 first takes all B messages source by source,
 *   then all A messages with MPI_ANY_SOURCE, and checks that each source's messages of one tag
 *   come in send order. */
#include <stdlib.h>

#include "mpit.h"

enum { kMaxMsg = 300000, kMany = 64, kTagA = 600, kTagB = 601 };

static size_t anysrc_len(int from, int round) {
  /* Odd senders send rendezvous-sized messages, even ones eager-sized. */
  return (from % 2 ? 100000u : 1000u) + (size_t)from * 7u + (size_t)round;
}

/* Everybody sends `len(from)` bytes with `tag_of(from)` to every other rank (nonblocking);
 * returns the requests to complete after the receives. */
static void send_all(int round, int tag, MPI_Request* req, unsigned char** bufs) {
  int k = 0;
  for (int to = 0; to < mpit_size; ++to) {
    if (to == mpit_rank) continue;
    const size_t n = anysrc_len(mpit_rank, round);
    bufs[k] = mpit_alloc(n);
    mpit_fill(bufs[k], n, mpit_rank, tag);
    MPI_Isend(bufs[k], (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD, &req[k]);
    ++k;
  }
}

static void finish_sends(MPI_Request* req, unsigned char** bufs) {
  MPI_Waitall(mpit_size - 1, req, MPI_STATUSES_IGNORE);
  for (int k = 0; k < mpit_size - 1; ++k) free(bufs[k]);
}

static void anysrc_round(int round, int any_tag) {
  MPI_Request* req = mpit_alloc(sizeof(MPI_Request) * (size_t)mpit_size);
  unsigned char** bufs = mpit_alloc(sizeof(unsigned char*) * (size_t)mpit_size);
  int* seen = mpit_zalloc(sizeof(int) * (size_t)mpit_size);
  unsigned char* rx = mpit_alloc(kMaxMsg);
  /* Round r uses tag 200*r + sender with any_tag, else 200*r for all senders. */
  const int my_tag = any_tag ? 200 * round + mpit_rank : 200 * round;
  send_all(round, my_tag, req, bufs);
  for (int k = 0; k < mpit_size - 1; ++k) {
    MPI_Status st;
    MPI_Recv(rx, kMaxMsg, MPI_BYTE, MPI_ANY_SOURCE, any_tag ? MPI_ANY_TAG : 200 * round,
             MPI_COMM_WORLD, &st);
    const int from = st.MPI_SOURCE;
    if (from < 0 || from >= mpit_size || from == mpit_rank) mpit_fail("any-source source", from, k);
    if (seen[from]++) mpit_fail("any-source: second message from", from, k);
    const int tag = any_tag ? 200 * round + from : 200 * round;
    if (st.MPI_TAG != tag) mpit_fail("any-source tag", st.MPI_TAG, tag);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    if ((size_t)count != anysrc_len(from, round)) mpit_fail("any-source count", count, from);
    mpit_check(rx, (size_t)count, from, tag, "any-source payload");
  }
  finish_sends(req, bufs);
  /* Nobody may send the next round before everybody has received this one (an any-tag
   * receive here would otherwise take it). */
  MPI_Barrier(MPI_COMM_WORLD);
  free(rx);
  free(seen);
  free(bufs);
  free(req);
}

/* Fixed source, MPI_ANY_TAG: from the left neighbour, tags 401 then 402 in that order. */
static void anytag_order(void) {
  const int right = (mpit_rank + 1) % mpit_size;
  const int left = (mpit_rank + mpit_size - 1) % mpit_size;
  const size_t n1 = 100000, n2 = 10;
  unsigned char* t1 = mpit_alloc(n1);
  unsigned char* t2 = mpit_alloc(n2);
  unsigned char* rx = mpit_alloc(kMaxMsg);
  mpit_fill(t1, n1, mpit_rank, 401);
  mpit_fill(t2, n2, mpit_rank, 402);
  MPI_Request req[2];
  MPI_Isend(t1, (int)n1, MPI_BYTE, right, 401, MPI_COMM_WORLD, &req[0]);
  MPI_Isend(t2, (int)n2, MPI_BYTE, right, 402, MPI_COMM_WORLD, &req[1]);
  for (int k = 0; k < 2; ++k) {
    MPI_Status st;
    MPI_Recv(rx, kMaxMsg, MPI_BYTE, left, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    if (st.MPI_TAG != 401 + k) mpit_fail("any-tag: overtaken, tag", st.MPI_TAG, 401 + k);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    if ((size_t)count != (k ? n2 : n1)) mpit_fail("any-tag count", count, k);
    mpit_check(rx, (size_t)count, left, 401 + k, "any-tag payload");
  }
  MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  free(t1);
  free(t2);
  free(rx);
}

void mpit_anysrc(void) {
  anysrc_round(1, 1);
  anysrc_round(2, 0);
  anytag_order();
}

static size_t many_len(int j) {
  return j % 8 == 7 ? 200000u + (size_t)j : 64u + (size_t)j;
}
static int many_tag(int j) {
  return j % 2 ? kTagB : kTagA;
}

/* One message as rank 0 sees it: check status and bytes of message j from `from`. */
static void many_check(const MPI_Status* st, const unsigned char* rx, int from, int j) {
  int count = -1;
  MPI_Get_count(st, MPI_BYTE, &count);
  if (st->MPI_TAG != many_tag(j)) mpit_fail("many2one tag", st->MPI_TAG, many_tag(j));
  if ((size_t)count != many_len(j)) mpit_fail("many2one count (overtaken?)", count, j);
  mpit_check(rx, (size_t)count, from, many_tag(j) * 1000 + j, "many2one payload");
}

static void many_receive(void) {
  unsigned char* rx = mpit_alloc(kMaxMsg);
  int* next = mpit_zalloc(sizeof(int) * (size_t)mpit_size);
  /* All B messages (odd j), source by source, highest rank first. */
  for (int from = mpit_size - 1; from >= 1; --from) {
    for (int j = 1; j < kMany; j += 2) {
      MPI_Status st;
      MPI_Recv(rx, kMaxMsg, MPI_BYTE, from, kTagB, MPI_COMM_WORLD, &st);
      many_check(&st, rx, from, j);
    }
  }
  /* Then the A messages (even j) from anybody, each source's in its send order. */
  for (int from = 0; from < mpit_size; ++from) next[from] = 0;
  for (int k = 0; k < (mpit_size - 1) * kMany / 2; ++k) {
    MPI_Status st;
    MPI_Recv(rx, kMaxMsg, MPI_BYTE, MPI_ANY_SOURCE, kTagA, MPI_COMM_WORLD, &st);
    const int from = st.MPI_SOURCE;
    if (from <= 0 || from >= mpit_size) mpit_fail("many2one source", from, k);
    if (next[from] >= kMany) mpit_fail("many2one: too many from", from, next[from]);
    many_check(&st, rx, from, next[from]);
    next[from] += 2;
  }
  free(next);
  free(rx);
}

void mpit_many2one(void) {
  if (mpit_rank == 0) {
    many_receive();
  } else {
    MPI_Request req[kMany];
    unsigned char* bufs[kMany];
    for (int j = 0; j < kMany; ++j) {
      bufs[j] = mpit_alloc(many_len(j));
      mpit_fill(bufs[j], many_len(j), mpit_rank, many_tag(j) * 1000 + j);
      MPI_Isend(bufs[j], (int)many_len(j), MPI_BYTE, 0, many_tag(j), MPI_COMM_WORLD, &req[j]);
    }
    MPI_Waitall(kMany, req, MPI_STATUSES_IGNORE);
    for (int j = 0; j < kMany; ++j) free(bufs[j]);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
