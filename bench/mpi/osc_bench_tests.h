/* osc_bench_tests: the measured one-sided tests of osc_bench (osu_put_latency / osu_get_latency
 * / osu_put_bw / osu_get_bw / osu_acc_latency / fetch-and-op / compare-and-swap style) from
 * rank 0 (origin) into the window of rank 1 (target), MPI_COMM_WORLD of 2 ranks.
 *
 * Contract (ob_run, called by both ranks with the same arguments):
 *   - The window `win` exposes `win_buf` (at least ob_max_size bytes, disp_unit 1) on every
 *     rank; `local` is rank 0's origin/result buffer of the same size.
 *   - One iteration = the test's operations at displacement 0 (1, or W for bw; the bw ones
 *     all hit the same bytes, as osu does) followed by the synchronisation:
 *       lock:  MPI_Win_flush(1) inside one MPI_Win_lock(MPI_LOCK_SHARED, 1) epoch opened
 *              before the timer starts and closed after it stops; the target only waits in
 *              MPI_Barrier (progress);
 *       fence: MPI_Win_fence(0) on both ranks;
 *       pscw:  the target MPI_Win_post({0}) + MPI_Win_wait, the origin MPI_Win_start({1}) +
 *              operations + MPI_Win_complete.
 *   - Order: ob_warmup untimed iterations; one checked iteration: put data carries the
 *     pattern (mpi_bench_pattern.h) into a poisoned window and the target checks every byte;
 *     get data is the target's pattern read into a poisoned origin buffer, checked by the
 *     origin; acc/fop/cswap start from a known int64 and check the target value and the
 *     fetched one; with --corrupt equal to the size the data (or operand) is damaged first.
 *     Then ob_iters timed iterations between two barriers, timed by rank 0 (MPI_Wtime):
 *     latency = seconds / iters in us; bw = W * size * iters / seconds / 10^6 MB/s.
 *   - r->bad = failed checks of both ranks (MPI_Allreduce); a failure is printed on stderr as
 *     "osc_bench: data check failed: ...". MPI errors abort (MPI_ERRORS_ARE_FATAL).
 */
#ifndef IWARPX_BENCH_OSC_BENCH_TESTS_H
#define IWARPX_BENCH_OSC_BENCH_TESTS_H

#include <mpi.h>
#include <stdint.h>

#include "osc_bench_opts.h"

struct ob_result {
  uint64_t iters;
  double value; /* us or MB/s */
  int bad;
};

void ob_run(const struct ob_opts* o, unsigned test, unsigned sync, size_t size, MPI_Win win,
            uint8_t* win_buf, uint8_t* local, struct ob_result* r);

#endif
