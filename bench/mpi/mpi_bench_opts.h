/* mpi_bench_opts: command line, size lists and the per-size iteration schedule of mpi_bench
 * (bench/mpi). Plain C, no MPI, so it is unit tested on its own (mpi_bench_opts_test.c).
 *
 * Contract:
 *   - mb_parse_args fills *o from argv and returns 0, or returns -1 after printing why to
 *     stderr (the caller prints the usage and exits 2); "-h" returns 1.
 *   - Sizes and numbers as in mpi_bench_parse.h ("1:4m", "8,1k,1m").
 *   - The schedule (mpi_bench_parse.h) with base = --iters (the small-message count), the
 *     bytes one iteration moves and --budget bytes per measured size; --warmup as given.
 */
#ifndef IWARPX_BENCH_MPI_BENCH_OPTS_H
#define IWARPX_BENCH_MPI_BENCH_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "mpi_bench_parse.h"

enum mb_test {
  MB_TEST_LATENCY = 1u << 0, /* ping-pong, blocking send/recv, half round trip in us */
  MB_TEST_BW = 1u << 1,      /* W nonblocking sends rank 0 -> 1, then a 4-byte ack; MB/s */
  MB_TEST_BIBW = 1u << 2,    /* W nonblocking sends each way at once; MB/s both directions */
};

struct mb_opts {
  unsigned tests;             /* --tests: mask of enum mb_test (default latency,bw) */
  size_t sizes[MB_MAX_SIZES]; /* --sizes (default 1:4m) */
  size_t nsizes;
  uint64_t lat_iters; /* --iters for latency (default 10000) */
  uint64_t bw_iters;  /* --iters for bw/bibw (default 100) */
  uint64_t warmup;    /* --warmup (0 = a tenth of the measured count) */
  uint64_t budget;    /* --budget: payload bytes per measured size (default 1 GiB) */
  size_t window;      /* -w (default 64) */
  int csv;            /* --csv */
  const char* label;  /* --label: second CSV column (default "mpi") */
  size_t corrupt;     /* --corrupt SIZE (testing): damage the checked data at SIZE */
};

/* Defaults as documented above. */
void mb_opts_init(struct mb_opts* o);

/* 0 = ok, 1 = help asked, -1 = error (printed). */
int mb_parse_args(int argc, char** argv, struct mb_opts* o);

/* The usage text to `out` (a FILE*; void* keeps <stdio.h> out of this header). */
void mb_usage(void* out, const char* prog);

size_t mb_max_size(const struct mb_opts* o);

/* Bytes of payload one iteration of `test` moves at `size` (both directions counted). */
uint64_t mb_bytes_per_iter(const struct mb_opts* o, enum mb_test test, size_t size);

/* Measured and warm-up iterations of `test` at `size` (see the contract). */
uint64_t mb_iters(const struct mb_opts* o, enum mb_test test, size_t size);
uint64_t mb_warmup(const struct mb_opts* o, enum mb_test test, size_t size);

#endif
