/* mpi_bench_tests: the measured tests of mpi_bench (osu_latency / osu_bw / osu_bibw style)
 * between ranks 0 and 1 of MPI_COMM_WORLD.
 *
 * Contract (mb_run_size, called by both ranks with the same arguments):
 *   1. mb_warmup(test, size) untimed iterations;
 *   2. one checked round: every message of one iteration (1 for latency each way, W for bw,
 *      W each way for bibw) carries the pattern of its sender and slot into a poisoned
 *      buffer of its own, and the receiver checks every byte; with --corrupt SIZE equal to
 *      `size` rank 0 damages one byte of one message first. A rank that finds wrong data
 *      says so on stderr ("mpi_bench: data check failed: ..."); the count of bad messages
 *      is summed over both ranks (MPI_Allreduce) into r->bad on both;
 *   3. mb_iters(test, size) timed iterations after a barrier, timed on rank 0 with
 *      MPI_Wtime: latency = seconds / (2 * iters) in us; bw = size * W * iters / seconds
 *      / 10^6 (MB/s); bibw counts both directions.
 *   The value and iteration count are rank 0's. Buffers: `send` and `recv` hold at least
 *   size bytes per slot (1 slot for latency, W for bw and bibw; slot k at offset k * size).
 */
#ifndef IWARPX_BENCH_MPI_BENCH_TESTS_H
#define IWARPX_BENCH_MPI_BENCH_TESTS_H

#include <stdint.h>

#include "mpi_bench_opts.h"

struct mb_result {
  uint64_t iters;
  double value; /* us (latency) or MB/s (bw, bibw) */
  int bad;      /* messages that failed the data check, both ranks together */
};

const char* mb_test_name(enum mb_test test);
const char* mb_test_unit(enum mb_test test); /* "us" or "MB_s" */

void mb_run_size(const struct mb_opts* o, enum mb_test test, size_t size, uint8_t* send,
                 uint8_t* recv, struct mb_result* r);

#endif
