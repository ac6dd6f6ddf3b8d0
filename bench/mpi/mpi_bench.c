/* mpi_bench: the project's osu_latency / osu_bw / osu_bibw style MPI benchmark, 2 ranks, used
 * by scripts/bench_btl.sh to compare Open MPI BTLs (btl iwarpx against btl tcp).
 *
 *   mpirun -np 2 mpi_bench [--tests latency,bw,bibw] [--sizes 1:4m] [--csv] ...
 *
 * Contract:
 *   - Exactly 2 ranks (else exit 2); bad options: usage on rank 0, exit 2.
 *   - For each test, for each size in the order given: warm-up, one checked round, timed
 *     iterations (mpi_bench_tests.h); rank 0 prints one line per size, human form
 *     "size iters value" under a "#" header per test, or with --csv
 *     "program,label,test,size,iters,value,unit" after one header line. Latency is the half
 *     round trip in us, bandwidth MB/s = 10^6 B/s.
 *   - Any data check that failed (on either rank, at any size) makes both ranks exit 1 after
 *     all sizes ran; rank 0 then prints "mpi_bench: N data check(s) failed".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_bench_opts.h"
#include "mpi_bench_tests.h"

static uint8_t* alloc_region(size_t bytes) {
  void* p = NULL;
  if (posix_memalign(&p, 4096, bytes) != 0) return NULL;
  memset(p, 0, bytes); /* touch every page before timing */
  return p;
}

static void print_header(const struct mb_opts* o, enum mb_test test) {
  if (o->csv) return;
  if (test == MB_TEST_LATENCY) {
    printf("# mpi_bench latency: ping-pong, blocking send/recv, half round trip\n");
    printf("# %-10s %10s %14s\n", "size (B)", "iters", "latency (us)");
  } else {
    printf("# mpi_bench %s: window of %zu nonblocking sends%s, MB/s = 10^6 B/s\n",
           mb_test_name(test), o->window,
           test == MB_TEST_BW ? " then an ack" : " each way, both directions counted");
    printf("# %-10s %10s %14s\n", "size (B)", "iters", "MB/s");
  }
}

static void print_result(const struct mb_opts* o, enum mb_test test, size_t size,
                         const struct mb_result* r) {
  if (o->csv) {
    printf("mpi_bench,%s,%s,%zu,%llu,%.3f,%s\n", o->label, mb_test_name(test), size,
           (unsigned long long)r->iters, r->value, mb_test_unit(test));
  } else {
    printf("  %-10zu %10llu %14.2f\n", size, (unsigned long long)r->iters, r->value);
  }
  fflush(stdout);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  struct mb_opts o;
  mb_opts_init(&o);
  const int parsed = mb_parse_args(argc, argv, &o);
  if (parsed != 0 || nranks != 2) {
    if (rank == 0 && parsed != 0) mb_usage(stderr, "mpi_bench");
    if (rank == 0 && parsed == 0) fprintf(stderr, "mpi_bench: needs 2 ranks, has %d\n", nranks);
    MPI_Finalize();
    return parsed == 1 ? 0 : 2;
  }
  int corrupt_listed = o.corrupt == 0;
  for (size_t i = 0; i < o.nsizes; ++i) corrupt_listed |= o.sizes[i] == o.corrupt;
  if (!corrupt_listed) {
    if (rank == 0) fprintf(stderr, "mpi_bench: --corrupt %zu is not in --sizes\n", o.corrupt);
    MPI_Finalize();
    return 2;
  }
  /* Latency uses one slot per direction; bw and bibw a window of them. */
  const size_t slots = (o.tests & (MB_TEST_BW | MB_TEST_BIBW)) != 0 ? o.window : 1;
  const size_t region = slots * mb_max_size(&o);
  uint8_t* send = alloc_region(region);
  uint8_t* recv = alloc_region(region);
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "mpi_bench: rank %d: cannot allocate 2 x %zu bytes\n", rank, region);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0 && o.csv) printf("program,label,test,size,iters,value,unit\n");
  int bad = 0;
  static const enum mb_test kOrder[] = {MB_TEST_LATENCY, MB_TEST_BW, MB_TEST_BIBW};
  for (size_t t = 0; t < sizeof(kOrder) / sizeof(kOrder[0]); ++t) {
    if ((o.tests & kOrder[t]) == 0) continue;
    if (rank == 0) print_header(&o, kOrder[t]);
    for (size_t i = 0; i < o.nsizes; ++i) {
      struct mb_result r;
      mb_run_size(&o, kOrder[t], o.sizes[i], send, recv, &r);
      bad += r.bad;
      if (rank == 0) print_result(&o, kOrder[t], o.sizes[i], &r);
    }
  }
  if (rank == 0 && bad != 0) fprintf(stderr, "mpi_bench: %d data check(s) failed\n", bad);
  free(send);
  free(recv);
  MPI_Finalize();
  return bad != 0 ? 1 : 0;
}
