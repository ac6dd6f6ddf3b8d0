/*
 * Info keys, fence asserts and misuse for osc iwarpx, run by osc_iwarpx_test.sh at 2..4 ranks
 * with `--mca osc iwarpx`. Rank 0 prints "osc_iwarpx_misc_test: OK <n> ranks" only when every
 * rank passed every check. Windows (4): create with info, create with default info, allocate
 * for fence asserts, allocate for misuse (MPI_ERRORS_RETURN everywhere).
 *  1. info: a window created with no_locks=true, accumulate_ordering=none,
 *     accumulate_ops=same_op reports them through MPI_Win_get_info, and
 *     MPI_Win_lock on it is MPI_ERR_RMA_SYNC while fence still works (Put + Accumulate);
 *     a default window reports no_locks=false, accumulate_ordering=rar,raw,war,waw,
 *     accumulate_ops=same_op_no_op; MPI_Win_set_info(no_locks=true) on it makes lock fail,
 *     set_info(no_locks=false) makes it work again;
 *  2. fence asserts: NOPRECEDE opening, NOSTORE|NOPUT, NOSUCCEED closing, around Put/Get
 *     epochs whose data is checked (a fence with asserts must still separate the epochs);
 *     after NOSUCCEED a Put is MPI_ERR_RMA_SYNC;
 *  3. misuse, each an MPI error and nothing written (the window and a guard beyond it are
 *     checked): unlock without lock, flush/flush_all without a passive epoch, lock of a locked
 *     target, lock_all inside lock (MPI_ERR_RMA_SYNC); Accumulate/Get_accumulate/Fetch_and_op/
 *     Compare_and_swap outside any epoch (MPI_ERR_RMA_SYNC); Get_accumulate, Fetch_and_op and
 *     Compare_and_swap beyond the window (MPI_ERR_RMA_RANGE); complete without start, wait
 *     without post (MPI_ERR_RMA_SYNC); a Put to a rank outside the group (MPI_ERR_RANK or
 *     MPI_ERR_RMA_RANGE).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osc_test_util.h"

/* The value of key in win's info, "" if absent. */
static void info_value(MPI_Win win, const char* key, char* out, int len) {
  MPI_Info info;
  int flag = 0;
  out[0] = '\0';
  MPI_Win_get_info(win, &info);
  MPI_Info_get(info, key, len - 1, out, &flag);
  if (!flag) out[0] = '\0';
  MPI_Info_free(&info);
}

static void expect_info(MPI_Win win, const char* key, const char* want) {
  char v[128];
  info_value(win, key, v, sizeof(v));
  CHECK(strcmp(v, want) == 0, "info %s = '%s', want '%s'", key, v, want);
}

static void test_info(void) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "no_locks", "true");
  MPI_Info_set(info, "accumulate_ordering", "none");
  MPI_Info_set(info, "accumulate_ops", "same_op");
  int64_t* buf = calloc(8, sizeof(int64_t));
  MPI_Win win;
  MPI_Win_create(buf, 8 * sizeof(int64_t), sizeof(int64_t), info, MPI_COMM_WORLD, &win);
  MPI_Info_free(&info);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  expect_info(win, "no_locks", "true");
  expect_info(win, "accumulate_ordering", "none");
  expect_info(win, "accumulate_ops", "same_op");
  const int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
  int rc = MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_SYNC, "lock on a no_locks window: class %d",
        osct_err_class(rc));
  rc = MPI_Win_lock_all(0, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_SYNC, "lock_all on a no_locks window: class %d",
        osct_err_class(rc));
  const int64_t v = 100 + g_rank;
  const double d = 0.5;
  MPI_Win_fence(0, win);
  CHECK(MPI_Put(&v, 1, MPI_INT64_T, right, 1, 1, MPI_INT64_T, win) == MPI_SUCCESS, "put");
  CHECK(MPI_Accumulate(&v, 1, MPI_INT64_T, right, 2, 1, MPI_INT64_T, MPI_SUM, win) == MPI_SUCCESS,
        "acc int64");
  CHECK(MPI_Accumulate(&d, 1, MPI_DOUBLE, right, 3, 1, MPI_DOUBLE, MPI_SUM, win) == MPI_SUCCESS,
        "acc double");
  CHECK(MPI_Accumulate(&d, 1, MPI_DOUBLE, right, 3, 1, MPI_DOUBLE, MPI_SUM, win) == MPI_SUCCESS,
        "acc double 2");
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  double got = 0;
  memcpy(&got, &buf[3], sizeof(got));
  CHECK(buf[1] == 100 + left && buf[2] == 100 + left && got == 1.0, "no_locks window: %lld %lld %g",
        (long long)buf[1], (long long)buf[2], got);
  MPI_Win_free(&win);

  MPI_Win_create(buf, 8 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  expect_info(win, "no_locks", "false");
  expect_info(win, "accumulate_ordering", "rar,raw,war,waw");
  expect_info(win, "accumulate_ops", "same_op_no_op");
  MPI_Info_create(&info);
  MPI_Info_set(info, "no_locks", "true");
  MPI_Win_set_info(win, info);
  MPI_Info_free(&info);
  expect_info(win, "no_locks", "true");
  rc = MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_SYNC, "lock after set_info(no_locks): class %d",
        osct_err_class(rc));
  MPI_Info_create(&info);
  MPI_Info_set(info, "no_locks", "false");
  MPI_Win_set_info(win, info);
  MPI_Info_free(&info);
  rc = MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  CHECK(rc == MPI_SUCCESS, "lock after set_info(no_locks=false): rc %d", rc);
  if (rc == MPI_SUCCESS) {
    int64_t g = -1;
    CHECK(MPI_Get(&g, 1, MPI_INT64_T, right, 1, 1, MPI_INT64_T, win) == MPI_SUCCESS, "get");
    MPI_Win_unlock(right, win);
    CHECK(g == 100 + g_rank, "get after relock: %lld", (long long)g);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_free(&win);
  free(buf);
}

static void test_fence_asserts(void) {
  enum { N = 256 };
  uint8_t* mem = NULL;
  MPI_Win win;
  MPI_Win_allocate(N, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  const int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
  uint8_t src[N], dst[N];
  for (int round = 0; round < 5; ++round) {
    memset(mem, 0xFF, N); /* local store before the fence: no NOSTORE here */
    for (int i = 0; i < N; ++i) src[i] = (uint8_t)(round * 31 + g_rank * 7 + i);
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    CHECK(MPI_Put(src, N, MPI_BYTE, right, 0, N, MPI_BYTE, win) == MPI_SUCCESS, "put");
    MPI_Win_fence(MPI_MODE_NOSTORE, win); /* we did not store locally since the last fence */
    int bad = -1;
    for (int i = 0; i < N && bad < 0; ++i) {
      if (mem[i] != (uint8_t)(round * 31 + left * 7 + i)) bad = i;
    }
    CHECK(bad < 0, "round %d: byte %d not from rank %d after fence(NOSTORE)", round, bad, left);
    memset(dst, 0, N);
    CHECK(MPI_Get(dst, N, MPI_BYTE, right, 0, N, MPI_BYTE, win) == MPI_SUCCESS, "get");
    MPI_Win_fence(MPI_MODE_NOPUT | MPI_MODE_NOSUCCEED, win); /* nobody put into us since */
    CHECK(memcmp(dst, src, N) == 0, "round %d: get after fence(NOPUT|NOSUCCEED) differs", round);
    const int rc = MPI_Put(src, 1, MPI_BYTE, right, 0, 1, MPI_BYTE, win);
    CHECK(osct_err_class(rc) == MPI_ERR_RMA_SYNC, "put after NOSUCCEED: class %d",
          osct_err_class(rc));
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Win_free(&win);
}

static void test_misuse(void) {
  enum { N = 64, GUARD = 64 };
  /* create flavor over the first N bytes of a buffer with a guard behind. */
  uint8_t* buf = malloc(N + GUARD);
  memset(buf, 0x11, N);
  memset(buf + N, 0xAB, GUARD);
  MPI_Win win;
  MPI_Win_create(buf, N, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  const int right = (g_rank + 1) % g_size;
  int64_t v = 7, res = 0, cmp = 0x1111111111111111LL;
  int rc;
#define EXPECT(call, cls)                                                                         \
  do {                                                                                            \
    rc = (call);                                                                                  \
    CHECK(rc != MPI_SUCCESS && osct_err_class(rc) == (cls), "%s: rc %d class %d, want %d", #call, \
          rc, osct_err_class(rc), (cls));                                                         \
  } while (0)
  EXPECT(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Win_unlock_all(win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Win_flush(right, win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Win_flush_all(win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Win_flush_local(right, win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Accumulate(&v, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, MPI_SUM, win),
         MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Get_accumulate(&v, 1, MPI_INT64_T, &res, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T,
                            MPI_SUM, win),
         MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Fetch_and_op(&v, &res, MPI_INT64_T, right, 0, MPI_SUM, win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Compare_and_swap(&v, &cmp, &res, MPI_INT64_T, right, 0, win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Win_complete(win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Win_wait(win), MPI_ERR_RMA_SYNC);

  MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Win_fence(0, win), MPI_ERR_RMA_SYNC);
  EXPECT(MPI_Get_accumulate(&v, 1, MPI_INT64_T, &res, 1, MPI_INT64_T, right, N - 4, 1, MPI_INT64_T,
                            MPI_SUM, win),
         MPI_ERR_RMA_RANGE);
  EXPECT(MPI_Fetch_and_op(&v, &res, MPI_INT64_T, right, N, MPI_SUM, win), MPI_ERR_RMA_RANGE);
  EXPECT(MPI_Compare_and_swap(&v, &cmp, &res, MPI_INT64_T, right, N - 7, win), MPI_ERR_RMA_RANGE);
  const double d = 1.0;
  EXPECT(MPI_Accumulate(&d, 1, MPI_DOUBLE, right, N - 4, 1, MPI_DOUBLE, MPI_MAX, win),
         MPI_ERR_RMA_RANGE);
  const short s = 1;
  EXPECT(MPI_Accumulate(&s, 1, MPI_SHORT, right, N - 1, 1, MPI_SHORT, MPI_SUM, win),
         MPI_ERR_RMA_RANGE);
  rc = MPI_Put(&v, 8, MPI_BYTE, g_size, 0, 8, MPI_BYTE, win);
  CHECK(rc != MPI_SUCCESS &&
            (osct_err_class(rc) == MPI_ERR_RANK || osct_err_class(rc) == MPI_ERR_RMA_RANGE),
        "put to rank %d: rc %d class %d", g_size, rc, osct_err_class(rc));
  MPI_Win_unlock(right, win);
  MPI_Barrier(MPI_COMM_WORLD);
  int intact = 1;
  for (int i = 0; i < N; ++i) intact &= buf[i] == 0x11;
  for (int i = 0; i < GUARD; ++i) intact &= buf[N + i] == 0xAB;
  CHECK(intact, "a rejected call changed the window or the guard behind it");
  MPI_Barrier(MPI_COMM_WORLD); /* everyone checked before the next Put lands */
  /* The window still works. */
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
  CHECK(MPI_Put(&v, 8, MPI_BYTE, right, N - 8, 8, MPI_BYTE, win) == MPI_SUCCESS, "last put");
  MPI_Win_unlock(right, win);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(memcmp(buf + N - 8, &v, 8) == 0 && buf[N] == 0xAB, "last put not placed exactly");
  MPI_Win_free(&win);
  free(buf);
#undef EXPECT
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  test_info();
  test_fence_asserts();
  test_misuse();
  return osct_finish("osc_iwarpx_misc_test", "");
}
