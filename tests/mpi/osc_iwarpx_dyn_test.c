/*
 * Dynamic-window checks for osc iwarpx (MPI_Win_create_dynamic, MPI_Win_attach/detach), run by
 * osc_iwarpx_test.sh at 2..4 ranks with `--mca osc iwarpx`. Rank 0 prints
 * "osc_iwarpx_dyn_test: OK <n> ranks" only when every rank passed every check. One window:
 *  1. every rank attaches NREG regions of different sizes, each inside a buffer with guard
 *     bytes on both sides, and publishes the addresses (MPI_Get_address, allgather);
 *  2. lock_all: Put a pattern into every region of the right neighbour, Accumulate(MPI_SUM,
 *     int64) into a counter in rank 0's first region from every rank, flush_all; after a
 *     barrier every region holds its left neighbour's pattern, the counter the sum, and the
 *     guards are untouched; Get of the right neighbour's regions returns what we put;
 *  3. with MPI_ERRORS_RETURN: an access crossing a region's end and one into a guard are
 *     MPI_ERR_RMA_RANGE and change nothing; attaching an overlapping region and detaching an
 *     address never attached are errors;
 *  4. every rank detaches region 1; a Put to the right neighbour's detached region in a new
 *     epoch is MPI_ERR_RMA_RANGE and the detached memory stays unchanged; attach it again and a
 *     Put to it works (fence epoch this time);
 *  5. a region attached after the origin cached the table, announced by MPI_Send inside the
 *     same lock_all epoch, is found (a miss re-reads the target's table);
 *  6. from all ranks into rank 0's regions 1 and 2: Accumulate(SUM, int64), Get_accumulate(MAX,
 *     double), Accumulate(SUM, short): native, CAS-loop and locked paths, results exact.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osc_test_util.h"

#define NREG 3
#define GUARD 64
static const size_t kRegionBytes[NREG] = {64, 4096, 100000};

static uint8_t pattern(int seed, int region, size_t i) {
  return (uint8_t)(seed * 37 + region * 11 + (int)(i * 7u) + 1);
}

/* Guard bytes around region r of ours are all 0xAB. */
static int guards_ok(uint8_t* const* buf, int r) {
  for (size_t i = 0; i < GUARD; ++i) {
    if (buf[r][i] != 0xAB || buf[r][GUARD + kRegionBytes[r] + i] != 0xAB) return 0;
  }
  return 1;
}

static void test_dynamic(void) {
  MPI_Win win;
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  const int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
  uint8_t* buf[NREG];
  MPI_Aint mine[NREG];
  for (int r = 0; r < NREG; ++r) {
    buf[r] = malloc(kRegionBytes[r] + 2 * GUARD);
    memset(buf[r], 0xAB, kRegionBytes[r] + 2 * GUARD);
    memset(buf[r] + GUARD, 0, kRegionBytes[r]);
    CHECK(MPI_Win_attach(win, buf[r] + GUARD, (MPI_Aint)kRegionBytes[r]) == MPI_SUCCESS,
          "attach region %d", r);
    MPI_Get_address(buf[r] + GUARD, &mine[r]);
  }
  MPI_Aint* all = malloc(sizeof(MPI_Aint) * NREG * (size_t)g_size);
  MPI_Allgather(mine, NREG, MPI_AINT, all, NREG, MPI_AINT, MPI_COMM_WORLD);
  const MPI_Aint* rt = &all[right * NREG];
  const MPI_Aint counter = all[0] + 8; /* int64 inside rank 0's first region */

  /* 2. lock_all: put, accumulate, get. */
  uint8_t* src = malloc(kRegionBytes[NREG - 1]);
  uint8_t* dst = malloc(kRegionBytes[NREG - 1]);
  MPI_Win_lock_all(0, win);
  for (int r = 0; r < NREG; ++r) {
    for (size_t i = 0; i < kRegionBytes[r]; ++i) src[i] = pattern(g_rank, r, i);
    /* Region 0 keeps bytes 8..15 for the counter: put around it. */
    if (r == 0) {
      CHECK(MPI_Put(src, 8, MPI_BYTE, right, rt[0], 8, MPI_BYTE, win) == MPI_SUCCESS, "put r0a");
      CHECK(MPI_Put(src + 16, 48, MPI_BYTE, right, rt[0] + 16, 48, MPI_BYTE, win) == MPI_SUCCESS,
            "put r0b");
    } else {
      CHECK(MPI_Put(src, (int)kRegionBytes[r], MPI_BYTE, right, rt[r], (int)kRegionBytes[r],
                    MPI_BYTE, win) == MPI_SUCCESS,
            "put region %d", r);
    }
    MPI_Win_flush(right, win); /* src is reused */
  }
  const int64_t one = g_rank + 1;
  CHECK(
      MPI_Accumulate(&one, 1, MPI_INT64_T, 0, counter, 1, MPI_INT64_T, MPI_SUM, win) == MPI_SUCCESS,
      "accumulate");
  MPI_Win_flush_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int r = 0; r < NREG; ++r) {
    size_t bad = kRegionBytes[r];
    for (size_t i = 0; i < kRegionBytes[r]; ++i) {
      if (r == 0 && i >= 8 && i < 16) continue;
      if (buf[r][GUARD + i] != pattern(left, r, i)) {
        bad = i;
        break;
      }
    }
    CHECK(bad == kRegionBytes[r], "region %d from rank %d: byte %zu differs", r, left, bad);
    CHECK(guards_ok(buf, r), "region %d: guard changed", r);
  }
  if (g_rank == 0) {
    int64_t v = 0;
    memcpy(&v, buf[0] + GUARD + 8, 8);
    CHECK(v == (int64_t)g_size * (g_size + 1) / 2, "counter %lld, expected %lld", (long long)v,
          (long long)g_size * (g_size + 1) / 2);
  }
  for (int r = 0; r < NREG; ++r) {
    memset(dst, 0, kRegionBytes[r]);
    CHECK(MPI_Get(dst, (int)kRegionBytes[r], MPI_BYTE, right, rt[r], (int)kRegionBytes[r], MPI_BYTE,
                  win) == MPI_SUCCESS,
          "get region %d", r);
    MPI_Win_flush(right, win);
    size_t bad = kRegionBytes[r];
    for (size_t i = 0; i < kRegionBytes[r]; ++i) {
      if (r == 0 && i >= 8 && i < 16) continue;
      if (dst[i] != pattern(g_rank, r, i)) {
        bad = i;
        break;
      }
    }
    CHECK(bad == kRegionBytes[r], "get region %d of rank %d: byte %zu differs", r, right, bad);
  }

  /* 3. range errors (nothing written) and attach misuse. */
  memset(src, 0xEE, 64);
  int rc =
      MPI_Put(src, 16, MPI_BYTE, right, rt[1] + (MPI_Aint)kRegionBytes[1] - 8, 16, MPI_BYTE, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_RANGE, "put across a region's end: rc %d", rc);
  rc = MPI_Put(src, 1, MPI_BYTE, right, rt[1] - 1, 1, MPI_BYTE, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_RANGE, "put into the guard before a region: rc %d", rc);
  rc = MPI_Get(dst, 4, MPI_BYTE, right, rt[2] + (MPI_Aint)kRegionBytes[2], 4, MPI_BYTE, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_RANGE, "get after a region's end: rc %d", rc);
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int r = 0; r < NREG; ++r) CHECK(guards_ok(buf, r), "region %d: guard changed", r);
  CHECK(buf[1][GUARD + kRegionBytes[1] - 8] == pattern(left, 1, kRegionBytes[1] - 8),
        "rejected put changed region 1");
  rc = MPI_Win_attach(win, buf[1] + GUARD + 8, 16);
  CHECK(rc != MPI_SUCCESS, "overlapping attach accepted");
  rc = MPI_Win_detach(win, buf[1] + GUARD + 1);
  CHECK(rc != MPI_SUCCESS, "detach of an address never attached accepted");

  /* 4. detach region 1 everywhere; a put to it is a range error; attach again. */
  CHECK(MPI_Win_detach(win, buf[1] + GUARD) == MPI_SUCCESS, "detach region 1");
  MPI_Barrier(MPI_COMM_WORLD);
  memset(src, 0x5A, 64);
  MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  rc = MPI_Put(src, 64, MPI_BYTE, right, rt[1], 64, MPI_BYTE, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_RANGE, "put into a detached region: rc %d", rc);
  MPI_Win_unlock(right, win);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(buf[1][GUARD] == pattern(left, 1, 0), "detached region written");
  CHECK(MPI_Win_attach(win, buf[1] + GUARD, (MPI_Aint)kRegionBytes[1]) == MPI_SUCCESS,
        "attach region 1 again");
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_fence(0, win);
  CHECK(MPI_Put(src, 64, MPI_BYTE, right, rt[1], 64, MPI_BYTE, win) == MPI_SUCCESS,
        "put into the re-attached region");
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  CHECK(buf[1][GUARD] == 0x5A && buf[1][GUARD + 63] == 0x5A && buf[1][GUARD + 64] != 0x5A,
        "re-attached region: put not placed");

  /* 5. attach inside an epoch, announced by a message: the origin's stale copy is refreshed. */
  uint8_t* late = calloc(1, 256);
  MPI_Win_lock_all(0, win);
  /* Make sure the origin's copy of the right neighbour's table is current and cached. */
  CHECK(MPI_Get(dst, 1, MPI_BYTE, right, rt[0], 1, MPI_BYTE, win) == MPI_SUCCESS, "warm get");
  MPI_Win_flush(right, win);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(MPI_Win_attach(win, late, 256) == MPI_SUCCESS, "late attach");
  MPI_Aint late_addr = 0, right_late = 0;
  MPI_Get_address(late, &late_addr);
  MPI_Sendrecv(&late_addr, 1, MPI_AINT, left, 7, &right_late, 1, MPI_AINT, right, 7, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  const uint32_t word = 0xC0FFEE00u + (uint32_t)g_rank;
  CHECK(MPI_Put(&word, 4, MPI_BYTE, right, right_late + 100, 4, MPI_BYTE, win) == MPI_SUCCESS,
        "put into a late-attached region");
  MPI_Win_flush(right, win);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_unlock_all(win);
  uint32_t got = 0;
  memcpy(&got, late + 100, 4);
  CHECK(got == 0xC0FFEE00u + (uint32_t)left, "late region holds 0x%x", got);

  /* 6. the accumulate family into every region of rank 0 from all ranks: native (int64 SUM),
   * CAS loop (double MAX via Get_accumulate) and accumulate lock (short SUM). */
  if (g_rank == 0) {
    memset(buf[1] + GUARD, 0, 16);
    memset(buf[2] + GUARD, 0, 32);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  for (int i = 0; i < 10; ++i) {
    const int64_t add = 1;
    const double mx = (double)(i * g_size + g_rank);
    const short one_s = 1;
    double old = -1.0;
    CHECK(MPI_Accumulate(&add, 1, MPI_INT64_T, 0, all[1], 1, MPI_INT64_T, MPI_SUM, win) ==
              MPI_SUCCESS,
          "acc region 1");
    CHECK(MPI_Get_accumulate(&mx, 1, MPI_DOUBLE, &old, 1, MPI_DOUBLE, 0, all[2] + 8, 1, MPI_DOUBLE,
                             MPI_MAX, win) == MPI_SUCCESS,
          "get_acc region 2");
    CHECK(MPI_Accumulate(&one_s, 1, MPI_SHORT, 0, all[2] + 16, 1, MPI_SHORT, MPI_SUM, win) ==
              MPI_SUCCESS,
          "acc short region 2");
    MPI_Win_flush(0, win);
    CHECK(old >= 0.0, "get_acc fetched %g", old);
  }
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    int64_t c = 0;
    double m = 0;
    short sh = 0;
    memcpy(&c, buf[1] + GUARD, 8);
    memcpy(&m, buf[2] + GUARD + 8, 8);
    memcpy(&sh, buf[2] + GUARD + 16, 2);
    CHECK(c == 10 * g_size && m == 10.0 * g_size - 1 && sh == 10 * g_size,
          "region accumulates: %lld %g %d", (long long)c, m, sh);
  }

  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_free(&win);
  for (int r = 0; r < NREG; ++r) free(buf[r]);
  free(late);
  free(all);
  free(src);
  free(dst);
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  test_dynamic();
  return osct_finish("osc_iwarpx_dyn_test", "");
}
