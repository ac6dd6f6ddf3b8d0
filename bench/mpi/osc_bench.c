/* osc_bench: the project's one-sided (MPI RMA window) benchmark, osu_put_latency /
 * osu_get_latency / osu_put_bw / osu_get_bw / osu_acc_latency / fetch-and-op / cswap style,
 * 2 ranks, used by scripts/bench_osc.sh to compare Open MPI OSC components (osc iwarpx
 * against osc pt2pt).
 *
 *   mpirun -np 2 osc_bench [--tests LIST] [--sync lock,fence,pscw] [--win allocate|create]
 *                          [--sizes 1:4m] [--csv] ...
 *
 * Contract:
 *   - Exactly 2 ranks (else exit 2); bad options: usage on rank 0, exit 2.
 *   - One window of ob_max_size bytes per rank (disp_unit 1), from MPI_Win_allocate or
 *     MPI_Win_create (--win), for the whole run; then for each sync mode, each test, each size
 *     (osc_bench_tests.h) rank 0 prints one line: human form "size iters value" under a "#"
 *     header, or with --csv "osc_bench,label,test,sync,win,size,iters,value,unit" after one
 *     header line. Latency in us per operation + sync, bandwidth in MB/s (10^6 B/s).
 *   - Any failed data check makes both ranks exit 1 after all tests ran; rank 0 then prints
 *     "osc_bench: N data check(s) failed".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osc_bench_opts.h"
#include "osc_bench_tests.h"

static void print_header(const struct ob_opts* o, unsigned test, unsigned sync) {
  if (o->csv) return;
  printf("# osc_bench %s, sync %s, window from MPI_Win_%s%s\n", ob_test_name(test),
         ob_sync_name(sync), o->win_create ? "create" : "allocate",
         ob_test_is_bw(test) ? ", MB/s = 10^6 B/s" : "");
  printf("# %-10s %10s %14s\n", "size (B)", "iters", ob_test_is_bw(test) ? "MB/s" : "latency (us)");
}

static void print_result(const struct ob_opts* o, unsigned test, unsigned sync, size_t size,
                         const struct ob_result* r) {
  if (o->csv) {
    printf("osc_bench,%s,%s,%s,%s,%zu,%llu,%.4f,%s\n", o->label, ob_test_name(test),
           ob_sync_name(sync), o->win_create ? "create" : "allocate", size,
           (unsigned long long)r->iters, r->value, ob_test_unit(test));
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
  struct ob_opts o;
  ob_opts_init(&o);
  const int parsed = ob_parse_args(argc, argv, &o);
  if (parsed != 0 || nranks != 2) {
    if (rank == 0 && parsed != 0) ob_usage(stderr, "osc_bench");
    if (rank == 0 && parsed == 0) fprintf(stderr, "osc_bench: needs 2 ranks, has %d\n", nranks);
    MPI_Finalize();
    return parsed == 1 ? 0 : 2;
  }
  if (!ob_corrupt_reachable(&o)) {
    if (rank == 0)
      fprintf(stderr, "osc_bench: --corrupt %zu is no size a test runs at\n", o.corrupt);
    MPI_Finalize();
    return 2;
  }
  const size_t bytes = ob_max_size(&o);
  uint8_t* local = NULL;
  uint8_t* win_buf = NULL;
  void* created = NULL;
  MPI_Win win = MPI_WIN_NULL;
  if (posix_memalign((void**)&local, 4096, bytes) != 0) local = NULL;
  if (o.win_create && posix_memalign(&created, 4096, bytes) != 0) created = NULL;
  if (local == NULL || (o.win_create && created == NULL)) {
    fprintf(stderr, "osc_bench: rank %d: cannot allocate 2 x %zu bytes\n", rank, bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (o.win_create) {
    win_buf = created;
    MPI_Win_create(win_buf, (MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  } else {
    MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf, &win);
  }
  memset(local, 0, bytes); /* touch every page before timing */
  memset(win_buf, 0, bytes);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && o.csv) printf("program,label,test,sync,win,size,iters,value,unit\n");
  int bad = 0;
  for (unsigned s = 0; s < OB_NSYNCS; ++s) {
    const unsigned sync = 1u << s;
    if ((o.syncs & sync) == 0) continue;
    for (unsigned t = 0; t < OB_NTESTS; ++t) {
      const unsigned test = 1u << t;
      if ((o.tests & test) == 0) continue;
      if (rank == 0) print_header(&o, test, sync);
      size_t sizes[MB_MAX_SIZES];
      const size_t n = ob_test_sizes(&o, test, sizes);
      for (size_t i = 0; i < n; ++i) {
        struct ob_result r;
        ob_run(&o, test, sync, sizes[i], win, win_buf, local, &r);
        bad += r.bad;
        if (rank == 0) print_result(&o, test, sync, sizes[i], &r);
      }
    }
  }
  if (rank == 0 && bad != 0) fprintf(stderr, "osc_bench: %d data check(s) failed\n", bad);
  MPI_Win_free(&win);
  free(created);
  free(local);
  MPI_Finalize();
  return bad != 0 ? 1 : 0;
}
