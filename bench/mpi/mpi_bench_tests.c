/* The measured tests of mpi_bench; see mpi_bench_tests.h. */
#include "mpi_bench_tests.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi_bench_pattern.h"

enum { kTagData = 1, kTagAck = 2, kTagCheck = 3 };

const char* mb_test_name(enum mb_test test) {
  switch (test) {
    case MB_TEST_LATENCY: return "latency";
    case MB_TEST_BW: return "bw";
    case MB_TEST_BIBW: return "bibw";
  }
  return "?";
}

const char* mb_test_unit(enum mb_test test) {
  return test == MB_TEST_LATENCY ? "us" : "MB_s";
}

static int my_rank(void) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

/* The pattern seed of message `slot` sent by `rank`. */
static unsigned seed_of(int rank, size_t slot) {
  return (unsigned)rank * 1031u + (unsigned)slot;
}

/* Messages per direction in one iteration. */
static size_t window_of(const struct mb_opts* o, enum mb_test test) {
  return test == MB_TEST_LATENCY ? 1 : o->window;
}

/* One iteration; `tag` is kTagData for the timed and warm-up ones, kTagCheck for the checked
 * one. Returns nothing: an MPI error aborts (MPI_ERRORS_ARE_FATAL). */
static void iteration(const struct mb_opts* o, enum mb_test test, size_t size, uint8_t* send,
                      uint8_t* recv, int tag, MPI_Request* reqs) {
  const int rank = my_rank();
  const int peer = 1 - rank;
  const int n = (int)size;
  const size_t w = window_of(o, test);
  int ack = 0;
  switch (test) {
    case MB_TEST_LATENCY:
      if (rank == 0) {
        MPI_Send(send, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        MPI_Recv(recv, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(recv, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(send, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
      }
      break;
    case MB_TEST_BW:
      if (rank == 0) {
        for (size_t k = 0; k < w; ++k)
          MPI_Isend(send + k * size, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs[k]);
        MPI_Waitall((int)w, reqs, MPI_STATUSES_IGNORE);
        MPI_Recv(&ack, 1, MPI_INT, peer, kTagAck, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        for (size_t k = 0; k < w; ++k)
          MPI_Irecv(recv + k * size, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs[k]);
        MPI_Waitall((int)w, reqs, MPI_STATUSES_IGNORE);
        MPI_Send(&ack, 1, MPI_INT, peer, kTagAck, MPI_COMM_WORLD);
      }
      break;
    case MB_TEST_BIBW:
      for (size_t k = 0; k < w; ++k)
        MPI_Irecv(recv + k * size, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs[k]);
      for (size_t k = 0; k < w; ++k)
        MPI_Isend(send + k * size, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs[w + k]);
      MPI_Waitall((int)(2 * w), reqs, MPI_STATUSES_IGNORE);
      break;
  }
}

/* Whether this rank sends / receives data messages in `test`. */
static int sends(enum mb_test test, int rank) {
  return test != MB_TEST_BW || rank == 0;
}
static int receives(enum mb_test test, int rank) {
  return test != MB_TEST_BW || rank == 1;
}

/* The checked round; returns the number of bad messages over both ranks. */
static int checked_round(const struct mb_opts* o, enum mb_test test, size_t size, uint8_t* send,
                         uint8_t* recv, MPI_Request* reqs) {
  const int rank = my_rank();
  const int peer = 1 - rank;
  const size_t w = window_of(o, test);
  if (sends(test, rank)) {
    for (size_t k = 0; k < w; ++k) mb_fill(send + k * size, size, seed_of(rank, k));
    if (rank == 0 && o->corrupt == size) send[(w / 2) * size + size - 1] ^= 0x01u;
  }
  if (receives(test, rank)) {
    for (size_t k = 0; k < w; ++k) mb_poison(recv + k * size, size, seed_of(peer, k));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  iteration(o, test, size, send, recv, kTagCheck, reqs);
  int bad = 0;
  if (receives(test, rank)) {
    for (size_t k = 0; k < w; ++k) {
      const uint8_t* buf = recv + k * size;
      const size_t j = mb_check(buf, size, seed_of(peer, k));
      if (j == MB_CHECK_OK) continue;
      if (bad++ == 0) {
        fprintf(stderr,
                "mpi_bench: data check failed: rank %d, %s, size %zu: message %zu of %zu from "
                "rank %d, byte %zu is 0x%02x, expected 0x%02x\n",
                rank, mb_test_name(test), size, k + 1, w, peer, j, buf[j],
                mb_pattern_byte(size, seed_of(peer, k), j));
      }
    }
  }
  int total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

void mb_run_size(const struct mb_opts* o, enum mb_test test, size_t size, uint8_t* send,
                 uint8_t* recv, struct mb_result* r) {
  const size_t w = window_of(o, test);
  MPI_Request* reqs = malloc(2 * w * sizeof(MPI_Request));
  if (reqs == NULL) {
    fprintf(stderr, "mpi_bench: out of memory for %zu requests\n", 2 * w);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const uint64_t warm = mb_warmup(o, test, size);
  const uint64_t iters = mb_iters(o, test, size);
  MPI_Barrier(MPI_COMM_WORLD);
  for (uint64_t i = 0; i < warm; ++i) iteration(o, test, size, send, recv, kTagData, reqs);
  r->bad = checked_round(o, test, size, send, recv, reqs);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (uint64_t i = 0; i < iters; ++i) iteration(o, test, size, send, recv, kTagData, reqs);
  const double seconds = MPI_Wtime() - t0;
  free(reqs);
  r->iters = iters;
  const double bytes = (double)mb_bytes_per_iter(o, test, size) * (double)iters;
  if (test == MB_TEST_LATENCY) {
    r->value = seconds * 1e6 / (2.0 * (double)iters);
  } else {
    r->value = seconds > 0 ? bytes / seconds / 1e6 : 0.0;
  }
}
