/*
 * osc_test_util: what the one-sided test programs (osc_iwarpx_test, _dyn_, _acc_, _misc_)
 * share: the rank/size/failure globals, CHECK (prints the failed check with rank, file and
 * line and counts it, never aborts), the MPI error class of a return code, and the verdict
 * at the end (sum of failures over all ranks; rank 0 prints "NAME: OK <n> ranks<extra>" or
 * "NAME: FAILED <k> check(s)", the lines the runner osc_iwarpx_test.sh looks for).
 */
#ifndef IWARPX_TESTS_MPI_OSC_TEST_UTIL_H
#define IWARPX_TESTS_MPI_OSC_TEST_UTIL_H

#include <stdio.h>

extern int g_rank, g_size, g_fail;

#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "rank %d: FAIL %s:%d: ", g_rank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                         \
      fprintf(stderr, "\n");                                                \
      ++g_fail;                                                             \
    }                                                                       \
  } while (0)

/* MPI_Error_class of rc. */
int osct_err_class(int rc);

/* Collective: the verdict line (extra, may be "", follows "OK <n> ranks"), then
 * MPI_Finalize. Returns the process exit code (0 when no rank failed a check). */
int osct_finish(const char* name, const char* extra);

#endif
