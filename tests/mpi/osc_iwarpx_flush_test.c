/*
 * Remote completion of MPI_Put for osc iwarpx, run by osc_iwarpx_test.sh at 2..4 ranks with
 * `--mca osc iwarpx`. Rank 0 prints "osc_iwarpx_flush_test: OK <n> ranks" only when every
 * rank passed every check.
 *
 * The check that can fail: the target (rank 1) stops calling MPI — so its provider, which
 * progresses only when called, places nothing and answers nothing — while the origin (rank 0)
 * does Put + flush (flush_all, unlock, PSCW complete) and then raises a flag in a shared-memory
 * file (a side channel outside MPI; all ranks run on one host). The target waits up to 300 ms
 * for the flag without calling MPI; if it sees the flag, the data must already be in its window
 * (flush means remote completion: it cannot return before the target placed the data). A flush
 * that returns at local completion (the write handed to the provider) raises the flag while
 * the data still sits unread in the target's socket, and the check fails. With a correct
 * flush the flag never comes while the target is silent; the target then calls MPI, the flush
 * returns, and after a barrier the data must be there in every case.
 * Cases: 8, 64 (= the provider's inject_size: fi_inject_write) and 65 bytes with flush, 4 KiB
 * with flush_all, 300,000 bytes (many datagrams) with unlock, a burst of 64 puts of 8 bytes
 * covered by one flush, 8 bytes with PSCW complete, 16 bytes with unlock, and MPI_Rput +
 * MPI_Wait (an Rput request means local completion only) of 8 bytes before a flush and of
 * 4 x 4 KiB before a flush_all. At 3+ ranks rank 2
 * also reads the 8-byte case with MPI_Get once rank 0 says its flush returned. Then every
 * rank puts into and gets from its right neighbour (so each rank does puts, gets, atomics).
 */
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "osc_test_util.h"

#define WIN_BYTES (512 * 1024)
#define SILENT_NS 300000000LL /* how long the target stays out of MPI */

enum sync_kind { S_FLUSH, S_FLUSH_ALL, S_UNLOCK, S_COMPLETE };
typedef struct {
  int bytes, puts; /* puts of `bytes` each, at consecutive offsets */
  enum sync_kind sync;
  const char* name;
  int rput; /* MPI_Rput + MPI_Wait each (local completion only) instead of MPI_Put */
} flush_case_t;

static const flush_case_t k_cases[] = {
    {8, 1, S_FLUSH, "8 B flush", 0},
    {64, 1, S_FLUSH, "64 B flush", 0},
    {65, 1, S_FLUSH, "65 B flush", 0},
    {4096, 1, S_FLUSH_ALL, "4 KiB flush_all", 0},
    {300000, 1, S_UNLOCK, "300000 B unlock", 0},
    {8, 64, S_FLUSH, "64 x 8 B flush", 0},
    {8, 1, S_COMPLETE, "8 B complete", 0},
    {16, 1, S_UNLOCK, "16 B unlock", 0},
    {8, 1, S_FLUSH, "8 B Rput + Wait, flush", 1},
    {4096, 4, S_FLUSH_ALL, "4 x 4 KiB Rput + Wait, flush_all", 1},
};
#define NCASES ((int)(sizeof(k_cases) / sizeof(k_cases[0])))

static uint8_t pattern(int c, size_t i) {
  return (uint8_t)(c * 31 + i * 7 + 1) | 1;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The side channel: one flag per case in a file every rank maps. */
static volatile uint64_t* map_flags(void) {
  char path[256] = {0};
  if (g_rank == 0) {
    snprintf(path, sizeof(path), "%s/osc_flush_XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    const int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 4096) != 0) path[0] = 0;
    if (fd >= 0) close(fd);
  }
  MPI_Bcast(path, sizeof(path), MPI_CHAR, 0, MPI_COMM_WORLD);
  void* p = MAP_FAILED;
  if (path[0] != 0) {
    const int fd = open(path, O_RDWR);
    if (fd >= 0) {
      p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      close(fd);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0 && path[0] != 0) unlink(path);
  CHECK(p != MAP_FAILED, "no shared flag file (%s)", path[0] ? path : "mkstemp failed");
  return p == MAP_FAILED ? NULL : (volatile uint64_t*)p;
}

/* Target side of one case: silent (no MPI call) until the flag or the time limit; returns
 * whether the flag came. */
static int silent_wait(volatile uint64_t* flag) {
  const int64_t end = now_ns() + SILENT_NS;
  const struct timespec nap = {0, 100000};
  while (now_ns() < end) {
    if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0) return 1;
    nanosleep(&nap, NULL);
  }
  return __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0;
}

static int data_ok(const uint8_t* mem, int c) {
  const size_t n = (size_t)k_cases[c].bytes * (size_t)k_cases[c].puts;
  for (size_t i = 0; i < n; ++i) {
    if (mem[i] != pattern(c, i)) return 0;
  }
  return mem[n] == 0; /* nothing beyond */
}

static void run_case(int c, MPI_Win win, uint8_t* mem, volatile uint64_t* flags, uint8_t* src,
                     int* early) {
  const flush_case_t* k = &k_cases[c];
  const size_t n = (size_t)k->bytes * (size_t)k->puts;
  const int origin = 0, target = 1;
  MPI_Group world, peer;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  memset(mem, 0, n + 64);
  for (size_t i = 0; i < n; ++i) src[i] = pattern(c, i);
  const int me_target = g_rank == target, me_origin = g_rank == origin;
  const int other = me_origin ? target : origin;
  MPI_Group_incl(world, 1, &other, &peer);
  if (k->sync == S_COMPLETE && me_target) MPI_Win_post(peer, 0, win);
  if (k->sync == S_COMPLETE && me_origin) MPI_Win_start(peer, 0, win);
  if (k->sync != S_COMPLETE && me_origin) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
  MPI_Barrier(MPI_COMM_WORLD); /* the origin holds its epoch; the target goes silent */
  if (me_target) {
    const int seen = silent_wait(&flags[c]);
    if (seen) {
      ++*early;
      CHECK(data_ok(mem, c),
            "%s: the origin's synchronisation returned before the data was in "
            "the target's window (not remote completion)",
            k->name);
    }
    if (k->sync == S_COMPLETE) MPI_Win_wait(win);
  } else if (me_origin) {
    int rc = MPI_SUCCESS;
    for (int i = 0; rc == MPI_SUCCESS && i < k->puts; ++i) {
      const size_t off = (size_t)i * (size_t)k->bytes;
      if (k->rput) {
        MPI_Request rq = MPI_REQUEST_NULL;
        rc = MPI_Rput(src + off, k->bytes, MPI_BYTE, target, (MPI_Aint)off, k->bytes, MPI_BYTE, win,
                      &rq);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
      } else {
        rc = MPI_Put(src + off, k->bytes, MPI_BYTE, target, (MPI_Aint)off, k->bytes, MPI_BYTE, win);
      }
    }
    CHECK(rc == MPI_SUCCESS, "%s: put rc %d", k->name, rc);
    switch (k->sync) {
      case S_FLUSH: rc = MPI_Win_flush(target, win); break;
      case S_FLUSH_ALL: rc = MPI_Win_flush_all(win); break;
      case S_UNLOCK: rc = MPI_Win_unlock(target, win); break;
      case S_COMPLETE: rc = MPI_Win_complete(win); break;
    }
    CHECK(rc == MPI_SUCCESS, "%s: synchronisation rc %d", k->name, rc);
    __atomic_store_n(&flags[c], 1, __ATOMIC_RELEASE);
    if (g_size > 2 && c == 0) MPI_Send(&c, 1, MPI_INT, 2, 7, MPI_COMM_WORLD);
    if (k->sync == S_FLUSH || k->sync == S_FLUSH_ALL) MPI_Win_unlock(target, win);
  } else if (g_rank == 2 && c == 0) {
    /* A third rank told that the flush returned must read the new data. */
    int dummy = 0;
    uint8_t got[8] = {0};
    MPI_Recv(&dummy, 1, MPI_INT, origin, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
    CHECK(MPI_Get(got, 8, MPI_BYTE, target, 0, 8, MPI_BYTE, win) == MPI_SUCCESS, "third get");
    MPI_Win_unlock(target, win);
    int same = 1;
    for (int i = 0; i < 8; ++i) same &= got[i] == pattern(c, (size_t)i);
    CHECK(same, "%s: a third rank's MPI_Get after the flush did not see the data", k->name);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me_target) CHECK(data_ok(mem, c), "%s: data missing after the barrier", k->name);
  MPI_Group_free(&peer);
  MPI_Group_free(&world);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Every rank: a put into and a get from its right neighbour, checked. */
static void ring(MPI_Win win, uint8_t* mem) {
  const int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
  const uint64_t mine = 0xabc000u + (uint64_t)g_rank;
  uint64_t back = 0;
  memset(mem, 0, 64);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
  CHECK(MPI_Put(&mine, 8, MPI_BYTE, right, 8, 8, MPI_BYTE, win) == MPI_SUCCESS, "ring put");
  MPI_Win_flush(right, win);
  CHECK(MPI_Get(&back, 8, MPI_BYTE, right, 8, 8, MPI_BYTE, win) == MPI_SUCCESS, "ring get");
  MPI_Win_unlock(right, win);
  CHECK(back == mine, "ring: got back 0x%llx", (unsigned long long)back);
  MPI_Barrier(MPI_COMM_WORLD);
  uint64_t have = 0;
  memcpy(&have, mem + 8, 8);
  CHECK(have == 0xabc000u + (uint64_t)left, "ring: window holds 0x%llx", (unsigned long long)have);
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  uint8_t* mem = NULL;
  MPI_Win win;
  MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  volatile uint64_t* flags = map_flags();
  uint8_t* src = malloc(WIN_BYTES);
  int early = 0;
  for (int c = 0; flags != NULL && src != NULL && c < NCASES; ++c) {
    run_case(c, win, mem, flags, src, &early);
  }
  ring(win, mem);
  free(src);
  if (flags != NULL) munmap((void*)flags, 4096);
  MPI_Win_free(&win);
  int all_early = 0;
  MPI_Reduce(&early, &all_early, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  char extra[96];
  snprintf(extra, sizeof(extra), " (flag seen while the target was silent: %d of %d cases)",
           all_early, NCASES);
  return osct_finish("osc_iwarpx_flush_test", extra);
}
