/* osc_bench_opts: command line, tests, synchronisation modes and the iteration schedule of
 * osc_bench (bench/mpi, one-sided window benchmarks). Plain C, no MPI, so it is unit tested on
 * its own (osc_bench_opts_test.c). Numbers, sizes and the schedule: mpi_bench_parse.h.
 *
 * Contract:
 *   - ob_parse_args fills *o from argv and returns 0, or returns -1 after printing why to
 *     stderr (the caller prints the usage and exits 2); "-h" returns 1.
 *   - --tests and --sync take comma-separated names (ob_test_name / ob_sync_name); unknown
 *     names or an empty list are errors; the tests and modes run in the enum's order.
 *   - The atomic tests (acc, fop, cswap) move one 8-byte integer whatever --sizes says.
 *   - ob_iters(test, size) = mb_schedule_iters(--iters (latency 10000, bw 100), the payload
 *     bytes one iteration moves (W x size for bw), --budget); ob_warmup likewise.
 */
#ifndef IWARPX_BENCH_OSC_BENCH_OPTS_H
#define IWARPX_BENCH_OSC_BENCH_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "mpi_bench_parse.h"

enum ob_test {
  OB_PUT_LATENCY = 1u << 0,   /* one MPI_Put + sync per iteration, us */
  OB_GET_LATENCY = 1u << 1,   /* one MPI_Get + sync, us */
  OB_PUT_BW = 1u << 2,        /* W MPI_Put + sync, MB/s */
  OB_GET_BW = 1u << 3,        /* W MPI_Get + sync, MB/s */
  OB_ACC_LATENCY = 1u << 4,   /* MPI_Accumulate(MPI_SUM, one int64) + sync, us */
  OB_FOP_LATENCY = 1u << 5,   /* MPI_Fetch_and_op(MPI_SUM, int64) + sync, us */
  OB_CSWAP_LATENCY = 1u << 6, /* MPI_Compare_and_swap(int64) + sync, us */
};
enum { OB_NTESTS = 7, OB_ALL_TESTS = (1u << OB_NTESTS) - 1 };

enum ob_sync {
  OB_SYNC_LOCK = 1u << 0,  /* passive: MPI_Win_lock(shared) once, MPI_Win_flush per iteration */
  OB_SYNC_FENCE = 1u << 1, /* MPI_Win_fence on both ranks per iteration */
  OB_SYNC_PSCW = 1u << 2,  /* target post/wait, origin start/complete per iteration */
};
enum { OB_NSYNCS = 3, OB_ALL_SYNCS = (1u << OB_NSYNCS) - 1 };

struct ob_opts {
  unsigned tests;             /* --tests: mask of enum ob_test (default all) */
  unsigned syncs;             /* --sync: mask of enum ob_sync (default all) */
  int win_create;             /* --win create: MPI_Win_create on posix_memalign memory;
                                 default allocate (MPI_Win_allocate) */
  size_t sizes[MB_MAX_SIZES]; /* --sizes (default 1:4m) */
  size_t nsizes;
  uint64_t lat_iters; /* --iters for latency and atomic tests (default 10000) */
  uint64_t bw_iters;  /* --iters for bw tests (default 100) */
  uint64_t warmup;    /* --warmup (0 = a tenth of the measured count) */
  uint64_t budget;    /* --budget: payload bytes per measured size (default 1 GiB) */
  size_t window;      /* -w: operations per bw iteration (default 64) */
  int csv;            /* --csv */
  const char* label;  /* --label: second CSV column (default "osc") */
  size_t corrupt;     /* --corrupt SIZE (testing): damage the checked data at SIZE */
};

void ob_opts_init(struct ob_opts* o);
int ob_parse_args(int argc, char** argv, struct ob_opts* o);
void ob_usage(void* out, const char* prog); /* out is a FILE* */

/* Name of one test / sync bit ("put_latency", "lock", ...); "?" for anything else. */
const char* ob_test_name(unsigned test);
const char* ob_sync_name(unsigned sync);
int ob_test_is_bw(unsigned test);
int ob_test_is_atomic(unsigned test);
const char* ob_test_unit(unsigned test); /* "us" or "MB_s" */

/* The sizes test runs at (for atomic tests: just 8). */
size_t ob_test_sizes(const struct ob_opts* o, unsigned test, size_t* out);
size_t ob_max_size(const struct ob_opts* o); /* at least 8 */
/* 1 if --corrupt is unset or a size some selected test runs at. */
int ob_corrupt_reachable(const struct ob_opts* o);

uint64_t ob_bytes_per_iter(const struct ob_opts* o, unsigned test, size_t size);
uint64_t ob_iters(const struct ob_opts* o, unsigned test, size_t size);
uint64_t ob_warmup(const struct ob_opts* o, unsigned test, size_t size);

#endif
