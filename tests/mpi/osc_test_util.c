/* osc_test_util: see osc_test_util.h. */
#include "osc_test_util.h"

#include <mpi.h>

int g_rank, g_size, g_fail;

int osct_err_class(int rc) {
  int cls = MPI_SUCCESS;
  MPI_Error_class(rc, &cls);
  return cls;
}

int osct_finish(const char* name, const char* extra) {
  int total = 0;
  MPI_Allreduce(&g_fail, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) {
    if (total == 0) {
      printf("%s: OK %d ranks%s\n", name, g_size, extra);
    } else {
      printf("%s: FAILED %d check(s)\n", name, total);
    }
    fflush(stdout);
  }
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
