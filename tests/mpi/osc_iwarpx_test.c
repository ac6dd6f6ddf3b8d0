/*
 * One-sided (MPI RMA) checks for osc iwarpx, run by osc_iwarpx_test.sh at 2..4 ranks with
 * `--mca osc iwarpx`. Every check verifies data; rank 0 prints "osc_iwarpx_test: OK <n> ranks"
 * only when every rank passed every check (the script also proves osc iwarpx served the
 * windows from its verbose lines). Initialised with MPI_THREAD_MULTIPLE like mpi4py.
 *  1. fence: Put then Get of 1 B .. 4 MiB to/from the right neighbour (allocate flavor), and
 *     MPI_INT with a disp_unit of 4 and a displacement (create flavor);
 *  2. exclusive lock: every rank increments a counter at rank 0 with Get+flush+Put under
 *     MPI_LOCK_EXCLUSIVE (a broken lock loses increments) and puts its own block there;
 *  3. lock_all + flush/flush_all: all-to-all puts, read back with Get;
 *  4. Rput/Rget + MPI_Wait/MPI_Test;
 *  5. errors with MPI_ERRORS_RETURN: access beyond the window (MPI_ERR_RMA_RANGE, memory beyond
 *     untouched), Put outside any epoch (MPI_ERR_RMA_SYNC), Accumulate with MPI_MAXLOC on
 *     MPI_INT64_T (MPI_ERR_OP) or from MPI_INT64_T onto MPI_DOUBLE
 *     (an error; the general path is osc_iwarpx_acc_test), a vector target
 * type crossing the end (MPI_ERR_RMA_RANGE, no segment written), window unchanged by all;
 *  6. atomics under lock_all from every rank at rank 0: MPI_Accumulate(MPI_SUM) on int64 and
 *     int (no lost update), MPI_Fetch_and_op tickets (all distinct: a permutation), one
 *     MPI_Compare_and_swap winner, Get_accumulate(MPI_NO_OP), Raccumulate and
 *     Rget_accumulate(MPI_REPLACE);
 *  8. derived datatypes (vector, indexed with out-of-order blocks, struct with holes, resized
 *     count > 1) at origin, target or both, Put and Get with fence; gaps stay untouched.
 *  9. PSCW: a ring (each rank exposes to its left neighbour and accesses its right one) for 20
 *     epochs whose data must not leak between epochs; rank 0 exposed to all others, waited
 *     with MPI_Win_test; MPI_Win_complete without start is MPI_ERR_RMA_SYNC.
 *  7. MPI_THREAD_MULTIPLE: 4 threads per rank issue Put + Accumulate(SUM) + flush to rank 0 at
 *     once inside one lock_all epoch; every update must arrive.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osc_test_util.h"

static uint8_t pattern(int seed, size_t i, size_t n) {
  return (uint8_t)((size_t)seed * 131u + i * 7u + n);
}

static size_t first_mismatch(const uint8_t* p, int seed, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != pattern(seed, i, n)) return i;
  }
  return n;
}

#define MAX_BYTES ((size_t)4 << 20)

static void test_fence_sizes(void) {
  uint8_t* win_mem = NULL;
  MPI_Win win;
  MPI_Win_allocate((MPI_Aint)MAX_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem, &win);
  uint8_t* src = malloc(MAX_BYTES);
  uint8_t* dst = malloc(MAX_BYTES);
  const int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
  const size_t sizes[] = {1, 7, 64, 1000, 4096, 65536, 1u << 20, MAX_BYTES};
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
    const size_t n = sizes[k];
    for (size_t i = 0; i < n; ++i) src[i] = pattern(g_rank, i, n);
    memset(win_mem, 0, n + (n < MAX_BYTES ? 1 : 0));
    MPI_Win_fence(0, win);
    CHECK(MPI_Put(src, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win) == MPI_SUCCESS, "put %zu",
          n);
    MPI_Win_fence(0, win);
    size_t bad = first_mismatch(win_mem, left, n);
    CHECK(bad == n, "fence put %zu B from %d: byte %zu differs", n, left, bad);
    if (n < MAX_BYTES) CHECK(win_mem[n] == 0, "fence put %zu B wrote past its end", n);
    /* Get what our right neighbour received (from us) back. */
    memset(dst, 0, n);
    CHECK(MPI_Get(dst, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win) == MPI_SUCCESS, "get %zu",
          n);
    MPI_Win_fence(0, win);
    bad = first_mismatch(dst, g_rank, n);
    CHECK(bad == n, "fence get %zu B from %d: byte %zu differs", n, right, bad);
  }
  MPI_Win_free(&win);
  free(src);
  free(dst);

  /* create flavor, MPI_INT, disp_unit 4, displacement 3. */
  int mem[64];
  int out[16], back[16];
  for (int i = 0; i < 64; ++i) mem[i] = -1;
  MPI_Win_create(mem, sizeof(mem), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  for (int i = 0; i < 16; ++i) out[i] = g_rank * 1000 + i;
  MPI_Win_fence(0, win);
  MPI_Put(out, 16, MPI_INT, right, 3, 16, MPI_INT, win);
  MPI_Win_fence(0, win);
  for (int i = 0; i < 64; ++i) {
    const int want = (i >= 3 && i < 19) ? left * 1000 + (i - 3) : -1;
    CHECK(mem[i] == want, "create/MPI_INT: mem[%d] = %d, want %d", i, mem[i], want);
  }
  MPI_Get(back, 16, MPI_INT, right, 3, 16, MPI_INT, win);
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  for (int i = 0; i < 16; ++i) CHECK(back[i] == out[i], "create/MPI_INT get[%d]", i);
  MPI_Win_free(&win);
}

#define ITERS 50
#define BLOCK 4096

static void test_lock_exclusive(void) {
  /* Window at rank 0: [0] counter, then one BLOCK per rank. */
  const MPI_Aint bytes = g_rank == 0 ? (MPI_Aint)(8 + (size_t)g_size * BLOCK) : 0;
  uint8_t* mem = NULL;
  MPI_Win win;
  MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  if (g_rank == 0) memset(mem, 0, (size_t)bytes);
  MPI_Barrier(MPI_COMM_WORLD);
  uint8_t block[BLOCK];
  for (int it = 0; it < ITERS; ++it) {
    int64_t v = 0;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Get(&v, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win);
    MPI_Win_flush(0, win);
    ++v;
    MPI_Put(&v, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win);
    for (size_t i = 0; i < BLOCK; ++i) block[i] = pattern(g_rank + it, i, BLOCK);
    MPI_Put(block, BLOCK, MPI_BYTE, 0, 8 + (MPI_Aint)g_rank * BLOCK, BLOCK, MPI_BYTE, win);
    MPI_Win_unlock(0, win);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    int64_t v;
    memcpy(&v, mem, sizeof(v));
    CHECK(v == (int64_t)g_size * ITERS, "exclusive lock counter %lld, want %lld (lost updates)",
          (long long)v, (long long)g_size * ITERS);
    for (int r = 0; r < g_size; ++r) {
      const size_t bad = first_mismatch(mem + 8 + (size_t)r * BLOCK, r + ITERS - 1, BLOCK);
      CHECK(bad == BLOCK, "exclusive lock: block of rank %d differs at %zu", r, bad);
    }
    MPI_Win_unlock(0, win);
  }
  MPI_Win_free(&win);
}

static void test_lock_all_flush(void) {
  int64_t* mem = NULL;
  MPI_Win win;
  MPI_Win_allocate((MPI_Aint)((size_t)g_size * sizeof(int64_t)), sizeof(int64_t), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &mem, &win);
  for (int i = 0; i < g_size; ++i) mem[i] = -1;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  int64_t* vals = malloc((size_t)g_size * sizeof(int64_t));
  for (int t = 0; t < g_size; ++t) {
    vals[t] = (int64_t)g_rank * 100 + t;
    MPI_Put(&vals[t], 1, MPI_INT64_T, t, g_rank, 1, MPI_INT64_T, win);
  }
  MPI_Win_flush_all(win);
  for (int t = 0; t < g_size; ++t) {
    int64_t got = 0;
    MPI_Get(&got, 1, MPI_INT64_T, t, g_rank, 1, MPI_INT64_T, win);
    MPI_Win_flush(t, win);
    CHECK(got == vals[t], "lock_all: read back %lld from %d, want %lld", (long long)got, t,
          (long long)vals[t]);
  }
  MPI_Win_flush_local_all(win);
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_sync(win);
  for (int r = 0; r < g_size; ++r) {
    CHECK(mem[r] == (int64_t)r * 100 + g_rank, "lock_all: slot %d = %lld", r, (long long)mem[r]);
  }
  free(vals);
  MPI_Win_free(&win);
}

static void test_rput_rget(void) {
  const size_t n = 65536 + 3;
  uint8_t* mem = NULL;
  MPI_Win win;
  MPI_Win_allocate((MPI_Aint)n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  memset(mem, 0, n);
  MPI_Barrier(MPI_COMM_WORLD);
  uint8_t* src = malloc(n);
  uint8_t* dst = calloc(1, n);
  for (size_t i = 0; i < n; ++i) src[i] = pattern(g_rank + 7, i, n);
  const int right = (g_rank + 1) % g_size;
  MPI_Win_lock_all(0, win);
  MPI_Request req;
  CHECK(MPI_Rput(src, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win, &req) == MPI_SUCCESS,
        "rput");
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(req == MPI_REQUEST_NULL, "rput request not freed by MPI_Wait");
  CHECK(MPI_Rget(dst, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win, &req) == MPI_SUCCESS,
        "rget");
  int done = 0;
  for (long spins = 0; !done && spins < 100000000L; ++spins)
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  CHECK(done, "rget never completed under MPI_Test");
  const size_t bad = first_mismatch(dst, g_rank + 7, n);
  CHECK(bad == n, "rput/rget: byte %zu differs", bad);
  MPI_Win_unlock_all(win);
  free(src);
  free(dst);
  MPI_Win_free(&win);
}

#define WBYTES 1024
#define GUARD 1024

static void test_errors(void) {
  /* create flavor over the first WBYTES of a buffer whose tail is a guard. */
  uint8_t* buf = malloc(WBYTES + GUARD);
  memset(buf, 0x11, WBYTES);
  memset(buf + WBYTES, 0xAB, GUARD);
  MPI_Win win;
  MPI_Win_create(buf, WBYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  const int right = (g_rank + 1) % g_size;
  uint8_t src[64], dst[64];
  memset(src, 0xEE, sizeof(src));
  int cls = 0;

  /* Outside any epoch. */
  int rc = MPI_Put(src, 1, MPI_BYTE, right, 0, 1, MPI_BYTE, win);
  MPI_Error_class(rc, &cls);
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_RMA_SYNC, "put without epoch: rc %d class %d", rc, cls);

  MPI_Win_fence(0, win);
  rc = MPI_Put(src, 16, MPI_BYTE, right, WBYTES - 8, 16, MPI_BYTE, win);
  MPI_Error_class(rc, &cls);
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_RMA_RANGE, "put across the end: rc %d class %d", rc,
        cls);
  rc = MPI_Put(src, 1, MPI_BYTE, right, WBYTES, 1, MPI_BYTE, win);
  MPI_Error_class(rc, &cls);
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_RMA_RANGE, "put at the end: rc %d class %d", rc, cls);
  rc = MPI_Put(src, 8, MPI_INT64_T, right, 1000, 8, MPI_INT64_T, win);
  MPI_Error_class(rc, &cls);
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_RMA_RANGE, "put far beyond: rc %d class %d", rc, cls);
  rc = MPI_Get(dst, 64, MPI_BYTE, right, WBYTES - 63, 64, MPI_BYTE, win);
  MPI_Error_class(rc, &cls);
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_RMA_RANGE, "get across the end: rc %d class %d", rc,
        cls);
  int64_t one = 1;
  rc = MPI_Accumulate(&one, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, MPI_MAXLOC, win);
  MPI_Error_class(rc, &cls);
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_OP, "accumulate MAXLOC on MPI_INT64_T: rc %d class %d",
        rc, cls);
  rc = MPI_Accumulate(&one, 1, MPI_INT64_T, right, 0, 1, MPI_DOUBLE, MPI_SUM, win);
  MPI_Error_class(rc, &cls);
  /* Open MPI's MPI layer answers MPI_ERR_ARG before osc sees it (osc iwarpx would say
   * MPI_ERR_UNSUPPORTED_OPERATION); either way nothing may be written. */
  CHECK(rc != MPI_SUCCESS, "accumulate MPI_INT64_T onto MPI_DOUBLE: rc %d class %d", rc, cls);
  rc = MPI_Accumulate(&one, 1, MPI_INT64_T, right, WBYTES - 4, 1, MPI_INT64_T, MPI_SUM, win);
  MPI_Error_class(rc, &cls);
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_RMA_RANGE, "accumulate across the end: rc %d class %d",
        rc, cls);
  MPI_Datatype vec;
  MPI_Type_vector(4, 2, 4, MPI_BYTE, &vec); /* spans 14 bytes */
  MPI_Type_commit(&vec);
  rc = MPI_Put(src, 8, MPI_BYTE, right, WBYTES - 12, 1, vec, win);
  MPI_Error_class(rc, &cls);
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_RMA_RANGE,
        "vector target type across the end: rc %d class %d", rc, cls);
  MPI_Type_free(&vec);
  /* The last bytes inside the window are fine. */
  rc = MPI_Put(src, 8, MPI_BYTE, right, WBYTES - 8, 8, MPI_BYTE, win);
  CHECK(rc == MPI_SUCCESS, "put of the last 8 bytes: rc %d", rc);
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);

  for (size_t i = 0; i < WBYTES; ++i) {
    const uint8_t want = i >= WBYTES - 8 ? 0xEE : 0x11;
    if (buf[i] != want) {
      CHECK(0, "window byte %zu = 0x%02x, want 0x%02x", i, buf[i], want);
      break;
    }
  }
  for (size_t i = 0; i < GUARD; ++i) {
    if (buf[WBYTES + i] != 0xAB) {
      CHECK(0, "guard byte %zu beyond the window was written (0x%02x)", i, buf[WBYTES + i]);
      break;
    }
  }
  MPI_Win_free(&win);
  free(buf);
}

#define AITERS 100

static void test_atomics(void) {
  /* At rank 0: [0] SUM counter, [1] ticket counter, [2] low half: int counter, [3] CAS word,
   * [4 + r] REPLACE slot of rank r. */
  const int nslots = 4 + g_size;
  int64_t* mem = NULL;
  MPI_Win win;
  MPI_Win_allocate((MPI_Aint)((size_t)nslots * 8), 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  memset(mem, 0, (size_t)nslots * 8);
  mem[3] = -1;
  MPI_Barrier(MPI_COMM_WORLD);
  int64_t* tickets = malloc(AITERS * sizeof(int64_t));
  const int64_t one = 1;
  const int two = 2;
  MPI_Win_lock_all(0, win);
  for (int it = 0; it < AITERS; ++it) {
    CHECK(MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_SUM, win) == MPI_SUCCESS,
          "accumulate int64");
    CHECK(MPI_Fetch_and_op(&one, &tickets[it], MPI_INT64_T, 0, 1, MPI_SUM, win) == MPI_SUCCESS,
          "fetch_and_op");
    /* disp_unit 8: the int at byte 16 is displacement 2 */
    CHECK(MPI_Accumulate(&two, 1, MPI_INT, 0, 2, 1, MPI_INT, MPI_SUM, win) == MPI_SUCCESS,
          "accumulate int");
  }
  const int64_t me = g_rank, minus_one = -1;
  int64_t cas_old = -2;
  CHECK(MPI_Compare_and_swap(&me, &minus_one, &cas_old, MPI_INT64_T, 0, 3, win) == MPI_SUCCESS,
        "compare_and_swap");
  MPI_Win_flush_all(win);
  for (int it = 1; it < AITERS; ++it) {
    CHECK(tickets[it] > tickets[it - 1], "tickets of one origin not increasing at %d", it);
  }
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);

  MPI_Win_lock_all(0, win);
  int64_t seen = -1;
  MPI_Get_accumulate(NULL, 0, MPI_INT64_T, &seen, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_NO_OP,
                     win);
  MPI_Request req;
  const int64_t mine = 10 * (int64_t)g_rank + 5;
  int64_t old = -1;
  MPI_Rget_accumulate(&mine, 1, MPI_INT64_T, &old, 1, MPI_INT64_T, 0, 4 + g_rank, 1, MPI_INT64_T,
                      MPI_REPLACE, win, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(old == 0, "rget_accumulate(REPLACE) fetched %lld, want 0", (long long)old);
  MPI_Raccumulate(&mine, 1, MPI_INT64_T, 0, 4 + g_rank, 1, MPI_INT64_T, MPI_SUM, win, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_Win_flush(0, win);
  MPI_Win_unlock_all(win);
  CHECK(seen == (int64_t)g_size * AITERS, "get_accumulate(NO_OP) read %lld, want %lld",
        (long long)seen, (long long)g_size * AITERS);

  int64_t* all_tickets = g_rank == 0 ? malloc((size_t)g_size * AITERS * sizeof(int64_t)) : NULL;
  int64_t* all_cas = g_rank == 0 ? malloc((size_t)g_size * sizeof(int64_t)) : NULL;
  MPI_Gather(tickets, AITERS, MPI_INT64_T, all_tickets, AITERS, MPI_INT64_T, 0, MPI_COMM_WORLD);
  MPI_Gather(&cas_old, 1, MPI_INT64_T, all_cas, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    const int64_t total = (int64_t)g_size * AITERS;
    CHECK(mem[0] == total, "accumulate(SUM) int64 counter %lld, want %lld (lost updates)",
          (long long)mem[0], (long long)total);
    CHECK(mem[1] == total, "fetch_and_op counter %lld, want %lld", (long long)mem[1],
          (long long)total);
    int ival;
    memcpy(&ival, &mem[2], sizeof(ival));
    CHECK(ival == 2 * (int)total, "accumulate(SUM) int counter %d, want %d", ival, 2 * (int)total);
    char* hit = calloc((size_t)total, 1);
    for (int64_t i = 0; i < total; ++i) {
      const int64_t v = all_tickets[i];
      if (v < 0 || v >= total || hit[v]) {
        CHECK(0, "fetch_and_op ticket %lld duplicated or out of range", (long long)v);
        break;
      }
      hit[v] = 1;
    }
    free(hit);
    int winners = 0;
    for (int r = 0; r < g_size; ++r) winners += all_cas[r] == -1;
    CHECK(winners == 1, "compare_and_swap: %d winners, want 1", winners);
    CHECK(mem[3] >= 0 && mem[3] < g_size && all_cas[mem[3]] == -1,
          "compare_and_swap: word %lld is not the winner", (long long)mem[3]);
    for (int r = 0; r < g_size; ++r) {
      CHECK(all_cas[r] == -1 || all_cas[r] == mem[3], "compare_and_swap: rank %d saw %lld", r,
            (long long)all_cas[r]);
      CHECK(mem[4 + r] == 2 * (10 * (int64_t)r + 5), "REPLACE+SUM slot of rank %d = %lld", r,
            (long long)mem[4 + r]);
    }
    MPI_Win_unlock(0, win);
  }
  free(all_tickets);
  free(all_cas);
  free(tickets);
  MPI_Win_free(&win);
}

#define NTHREADS 4
#define TITERS 50

typedef struct thread_arg_t {
  MPI_Win win;
  int index;
  int ok;
} thread_arg_t;

static void* rma_thread(void* p) {
  thread_arg_t* a = p;
  const int64_t one = 1;
  a->ok = 1;
  for (int it = 0; it < TITERS; ++it) {
    /* Slot 0: shared counter; slot 1 + rank*NTHREADS + index: last iteration seen. */
    const int64_t v = it;
    if (MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_SUM, a->win) !=
            MPI_SUCCESS ||
        MPI_Put(&v, 1, MPI_INT64_T, 0, 1 + g_rank * NTHREADS + a->index, 1, MPI_INT64_T, a->win) !=
            MPI_SUCCESS ||
        MPI_Win_flush(0, a->win) != MPI_SUCCESS) {
      a->ok = 0;
    }
  }
  return NULL;
}

static void test_threads(int provided) {
  if (provided < MPI_THREAD_MULTIPLE) {
    CHECK(0, "MPI_THREAD_MULTIPLE not provided (%d): cannot run the thread test", provided);
    return;
  }
  const int nslots = 1 + g_size * NTHREADS;
  int64_t* mem = NULL;
  MPI_Win win;
  MPI_Win_allocate(g_rank == 0 ? (MPI_Aint)((size_t)nslots * 8) : 0, 8, MPI_INFO_NULL,
                   MPI_COMM_WORLD, &mem, &win);
  if (g_rank == 0) memset(mem, 0, (size_t)nslots * 8);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, win);
  pthread_t th[NTHREADS];
  thread_arg_t args[NTHREADS];
  for (int i = 0; i < NTHREADS; ++i) {
    args[i].win = win;
    args[i].index = i;
    args[i].ok = 0;
    CHECK(pthread_create(&th[i], NULL, rma_thread, &args[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < NTHREADS; ++i) {
    pthread_join(th[i], NULL);
    CHECK(args[i].ok, "thread %d: an RMA call failed", i);
  }
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    CHECK(mem[0] == (int64_t)g_size * NTHREADS * TITERS, "threads: counter %lld, want %lld",
          (long long)mem[0], (long long)g_size * NTHREADS * TITERS);
    for (int i = 1; i < nslots; ++i) {
      CHECK(mem[i] == TITERS - 1, "threads: slot %d = %lld", i, (long long)mem[i]);
    }
    MPI_Win_unlock(0, win);
  }
  MPI_Win_free(&win);
}

static void test_datatypes(void) {
  enum { NI = 256 };
  int* mem = NULL;
  MPI_Win win;
  MPI_Win_allocate(NI * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  for (int i = 0; i < NI; ++i) mem[i] = -1;
  const int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
  int src[64], want[NI];
  for (int i = 0; i < 64; ++i) src[i] = g_rank * 1000 + i;
  for (int i = 0; i < NI; ++i) want[i] = -1;
  MPI_Datatype vec, idx, st, rs;
  MPI_Type_vector(4, 2, 4, MPI_INT, &vec); /* ints 0,1,4,5,8,9,12,13 */
  MPI_Type_commit(&vec);
  const int bl[2] = {1, 3}, dl[2] = {5, 0}; /* ints 5, then 0,1,2: out of order */
  MPI_Type_indexed(2, bl, dl, MPI_INT, &idx);
  MPI_Type_commit(&idx);
  /* struct {int a; (hole) int b[2]} with extent 6 ints: ints 0, 3, 4 */
  const int sbl[2] = {1, 2};
  const MPI_Aint sdl[2] = {0, 3 * sizeof(int)};
  MPI_Datatype sty[2] = {MPI_INT, MPI_INT}, tmp;
  MPI_Type_create_struct(2, sbl, sdl, sty, &tmp);
  MPI_Type_create_resized(tmp, 0, 6 * sizeof(int), &st);
  MPI_Type_free(&tmp);
  MPI_Type_commit(&st);
  MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &rs); /* every other int */
  MPI_Type_commit(&rs);

  MPI_Win_fence(0, win);
  /* 1. vector origin -> contiguous target at 0..7 */
  MPI_Put(src, 1, vec, right, 0, 8, MPI_INT, win);
  /* 2. contiguous origin -> vector target at 16 + {0,1,4,5,8,9,12,13} */
  MPI_Put(src, 8, MPI_INT, right, 16, 1, vec, win);
  /* 3. struct origin (3 elements) -> resized target (9 ints, every other) at 40 */
  MPI_Put(src, 3, st, right, 40, 9, rs, win);
  /* 4. indexed -> indexed at 80 */
  MPI_Put(src + 20, 1, idx, right, 80, 1, idx, win);
  MPI_Win_fence(0, win);
  const int l = left * 1000;
  const int v8[8] = {0, 1, 4, 5, 8, 9, 12, 13};
  for (int i = 0; i < 8; ++i) want[i] = l + v8[i];
  for (int i = 0; i < 8; ++i) want[16 + v8[i]] = l + i;
  const int s9[9] = {0, 3, 4, 6, 9, 10, 12, 15, 16};
  for (int i = 0; i < 9; ++i) want[40 + 2 * i] = l + s9[i];
  want[80 + 5] = l + 20 + 5;
  for (int i = 0; i < 3; ++i) want[80 + i] = l + 20 + i;
  for (int i = 0; i < NI; ++i) {
    if (mem[i] != want[i]) {
      CHECK(0, "derived put: int %d = %d, want %d", i, mem[i], want[i]);
      break;
    }
  }
  /* Gets: read back what we wrote to our right neighbour through the same types. */
  int back[64];
  for (int i = 0; i < 64; ++i) back[i] = -7;
  MPI_Get(back, 1, vec, right, 16, 1, vec, win);         /* vector both sides */
  MPI_Get(back + 32, 9, MPI_INT, right, 40, 9, rs, win); /* resized target -> contiguous */
  MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  const int me = g_rank * 1000;
  for (int i = 0; i < 8; ++i) {
    CHECK(back[v8[i]] == me + i, "derived get (vector): back[%d] = %d, want %d", v8[i], back[v8[i]],
          me + i);
  }
  CHECK(back[2] == -7 && back[3] == -7, "derived get (vector) wrote into the gaps");
  for (int i = 0; i < 9; ++i) {
    CHECK(back[32 + i] == me + s9[i], "derived get (resized): %d = %d, want %d", i, back[32 + i],
          me + s9[i]);
  }
  MPI_Type_free(&vec);
  MPI_Type_free(&idx);
  MPI_Type_free(&st);
  MPI_Type_free(&rs);
  MPI_Win_free(&win);
}

static MPI_Group group_of(const int* ranks, int n) {
  MPI_Group world, g;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_incl(world, n, ranks, &g);
  MPI_Group_free(&world);
  return g;
}

static void test_pscw(void) {
  enum { EPOCHS = 20, NV = 512 };
  int64_t* mem = NULL;
  MPI_Win win;
  MPI_Win_allocate((MPI_Aint)((size_t)(NV + g_size) * 8), 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                   &win);
  for (int i = 0; i < NV + g_size; ++i) mem[i] = -1;
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  int cls = 0;
  int rc = MPI_Win_complete(win);
  MPI_Error_class(rc, &cls);
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_RMA_SYNC, "complete without start: rc %d", rc);
  MPI_Barrier(MPI_COMM_WORLD);
  const int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
  MPI_Group gl = group_of(&left, 1), gr = group_of(&right, 1);
  int64_t* src = malloc(NV * sizeof(int64_t));
  for (int e = 0; e < EPOCHS; ++e) {
    for (int i = 0; i < NV; ++i) src[i] = (int64_t)e * 1000000 + g_rank * 1000 + i;
    CHECK(MPI_Win_post(gl, 0, win) == MPI_SUCCESS, "post");
    CHECK(MPI_Win_start(gr, 0, win) == MPI_SUCCESS, "start");
    CHECK(MPI_Put(src, NV, MPI_INT64_T, right, 0, NV, MPI_INT64_T, win) == MPI_SUCCESS, "put");
    CHECK(MPI_Win_complete(win) == MPI_SUCCESS, "complete");
    CHECK(MPI_Win_wait(win) == MPI_SUCCESS, "wait");
    /* Progress for 1 ms: an origin that did not wait for our next post would overwrite now. */
    for (const double t0 = MPI_Wtime(); MPI_Wtime() - t0 < 1e-3;) {
      int flag;
      MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < NV; ++i) {
      const int64_t want = (int64_t)e * 1000000 + left * 1000 + i;
      if (mem[i] != want) {
        CHECK(0, "pscw ring epoch %d: slot %d = %lld, want %lld", e, i, (long long)mem[i],
              (long long)want);
        break;
      }
    }
  }
  /* Star: rank 0 exposes to everybody else, who each write their slot; MPI_Win_test. */
  int* others = malloc((size_t)g_size * sizeof(int));
  for (int r = 1; r < g_size; ++r) others[r - 1] = r;
  const int zero = 0;
  if (g_rank == 0) {
    MPI_Group g = group_of(others, g_size - 1);
    MPI_Win_post(g, 0, win);
    int flag = 0;
    for (long spins = 0; !flag && spins < 100000000L; ++spins) MPI_Win_test(win, &flag);
    CHECK(flag, "MPI_Win_test never reported the end of the exposure epoch");
    for (int r = 1; r < g_size; ++r) {
      CHECK(mem[NV + r] == 7 * r, "pscw star: slot of rank %d = %lld", r, (long long)mem[NV + r]);
    }
    MPI_Group_free(&g);
  } else {
    MPI_Group g = group_of(&zero, 1);
    const int64_t v = 7 * g_rank;
    MPI_Win_start(g, 0, win);
    MPI_Put(&v, 1, MPI_INT64_T, 0, NV + g_rank, 1, MPI_INT64_T, win);
    MPI_Win_complete(win);
    MPI_Group_free(&g);
  }
  free(others);
  free(src);
  MPI_Group_free(&gl);
  MPI_Group_free(&gr);
  MPI_Win_free(&win);
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const char* only = argc > 1 ? argv[1] : "all";
  if (!strcmp(only, "all") || !strcmp(only, "fence")) test_fence_sizes();
  if (!strcmp(only, "all") || !strcmp(only, "lock")) test_lock_exclusive();
  if (!strcmp(only, "all") || !strcmp(only, "lock_all")) test_lock_all_flush();
  if (!strcmp(only, "all") || !strcmp(only, "rput")) test_rput_rget();
  if (!strcmp(only, "all") || !strcmp(only, "errors")) test_errors();
  if (!strcmp(only, "all") || !strcmp(only, "atomics")) test_atomics();
  if (!strcmp(only, "all") || !strcmp(only, "threads")) test_threads(provided);
  if (!strcmp(only, "all") || !strcmp(only, "datatypes")) test_datatypes();
  if (!strcmp(only, "all") || !strcmp(only, "pscw")) test_pscw();
  const char* known[] = {"all",    "fence",   "lock",    "lock_all",  "rput",
                         "errors", "atomics", "threads", "datatypes", "pscw"};
  int found = 0;
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); ++i) found |= !strcmp(only, known[i]);
  CHECK(found, "unknown check '%s'", only);
  char extra[128];
  snprintf(extra, sizeof(extra), " (%s, thread level %d)", only, provided);
  return osct_finish("osc_iwarpx_test", extra);
}
