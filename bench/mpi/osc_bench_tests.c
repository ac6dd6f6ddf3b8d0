/* The measured one-sided tests of osc_bench; see osc_bench_tests.h. */
#include "osc_bench_tests.h"

#include <stdio.h>
#include <string.h>

#include "mpi_bench_pattern.h"

enum { kOrigin = 0, kTarget = 1 };
static const int64_t kStart = 1000;   /* target's int64 before the checked atomic */
static const int64_t kOperand = 5;    /* accumulate / fetch-and-op operand */
static const int64_t kSwapped = 4242; /* compare-and-swap new value */
static const unsigned kSeedPut = 1;   /* pattern seeds: origin data, target data */
static const unsigned kSeedGet = 2;

struct ctx {
  const struct ob_opts* o;
  unsigned test, sync;
  size_t size;
  MPI_Win win;
  uint8_t* local;
  int rank;
  MPI_Group peer_group; /* the other rank, for PSCW */
  int64_t operand, compare, result;
};

static void ops(struct ctx* c) {
  const int n = (int)c->size;
  const size_t count = ob_test_is_bw(c->test) ? c->o->window : 1;
  for (size_t k = 0; k < count; ++k) {
    switch (c->test) {
      case OB_PUT_LATENCY:
      case OB_PUT_BW: MPI_Put(c->local, n, MPI_BYTE, kTarget, 0, n, MPI_BYTE, c->win); break;
      case OB_GET_LATENCY:
      case OB_GET_BW: MPI_Get(c->local, n, MPI_BYTE, kTarget, 0, n, MPI_BYTE, c->win); break;
      case OB_ACC_LATENCY:
        MPI_Accumulate(&c->operand, 1, MPI_INT64_T, kTarget, 0, 1, MPI_INT64_T, MPI_SUM, c->win);
        break;
      case OB_FOP_LATENCY:
        MPI_Fetch_and_op(&c->operand, &c->result, MPI_INT64_T, kTarget, 0, MPI_SUM, c->win);
        break;
      case OB_CSWAP_LATENCY:
        MPI_Compare_and_swap(&c->operand, &c->compare, &c->result, MPI_INT64_T, kTarget, 0, c->win);
        break;
      default: break;
    }
  }
}

/* Before the first iteration of a run of iterations (lock: the passive epoch). */
static void epoch_open(struct ctx* c) {
  if (c->sync == OB_SYNC_LOCK && c->rank == kOrigin)
    MPI_Win_lock(MPI_LOCK_SHARED, kTarget, 0, c->win);
  if (c->sync == OB_SYNC_FENCE) MPI_Win_fence(0, c->win);
}

static void epoch_close(struct ctx* c) {
  if (c->sync == OB_SYNC_LOCK && c->rank == kOrigin) MPI_Win_unlock(kTarget, c->win);
  if (c->sync == OB_SYNC_FENCE) MPI_Win_fence(MPI_MODE_NOSUCCEED, c->win);
}

static void iteration(struct ctx* c) {
  switch (c->sync) {
    case OB_SYNC_LOCK:
      if (c->rank == kOrigin) {
        ops(c);
        MPI_Win_flush(kTarget, c->win);
      }
      break;
    case OB_SYNC_FENCE:
      if (c->rank == kOrigin) ops(c);
      MPI_Win_fence(0, c->win);
      break;
    case OB_SYNC_PSCW:
      if (c->rank == kOrigin) {
        MPI_Win_start(c->peer_group, 0, c->win);
        ops(c);
        MPI_Win_complete(c->win);
      } else {
        MPI_Win_post(c->peer_group, 0, c->win);
        MPI_Win_wait(c->win);
      }
      break;
    default: break;
  }
}

static void run_iterations(struct ctx* c, uint64_t n) {
  epoch_open(c);
  for (uint64_t i = 0; i < n; ++i) iteration(c);
  epoch_close(c);
}

static int report(const struct ctx* c, const char* what, long long got, long long want) {
  fprintf(stderr,
          "osc_bench: data check failed: rank %d, %s, %s, size %zu: %s is %lld, expected %lld\n",
          c->rank, ob_test_name(c->test), ob_sync_name(c->sync), c->size, what, got, want);
  return 1;
}

static int check_bytes(const struct ctx* c, const uint8_t* buf, unsigned seed, const char* where) {
  const size_t j = mb_check(buf, c->size, seed);
  if (j == MB_CHECK_OK) return 0;
  char what[96];
  snprintf(what, sizeof(what), "%s byte %zu", where, j);
  return report(c, what, buf[j], mb_pattern_byte(c->size, seed, j));
}

/* Load/store access to the target's own window memory outside any epoch: under an exclusive
 * lock on itself, as MPI asks for passive target (osc pt2pt otherwise applies accumulates of
 * a closed epoch after the target's store). */
static void own_window_begin(struct ctx* c) {
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, c->rank, 0, c->win);
}
static void own_window_end(struct ctx* c) {
  MPI_Win_unlock(c->rank, c->win);
}

/* The checked iteration; returns the failed checks of both ranks. */
static int checked(struct ctx* c, uint8_t* win_buf) {
  const int corrupt = c->o->corrupt == c->size;
  const int is_put = c->test == OB_PUT_LATENCY || c->test == OB_PUT_BW;
  const int is_get = c->test == OB_GET_LATENCY || c->test == OB_GET_BW;
  int64_t target_value = kStart;
  MPI_Barrier(MPI_COMM_WORLD); /* lock: the target idles through the origin's warm-up */
  if (c->rank == kTarget) {
    own_window_begin(c);
    if (is_put) mb_poison(win_buf, c->size, kSeedPut);
    if (is_get) {
      mb_fill(win_buf, c->size, kSeedGet);
      if (corrupt) win_buf[c->size / 2] ^= 0x01u;
    }
    if (ob_test_is_atomic(c->test)) memcpy(win_buf, &target_value, sizeof(target_value));
    own_window_end(c);
  } else {
    if (is_put) {
      mb_fill(c->local, c->size, kSeedPut);
      if (corrupt) c->local[c->size / 2] ^= 0x01u;
    }
    if (is_get) mb_poison(c->local, c->size, kSeedGet);
    c->operand = c->test == OB_CSWAP_LATENCY ? kSwapped : kOperand;
    c->compare = kStart;
    if (corrupt) c->operand += 1;
    c->result = -1;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  run_iterations(c, 1);
  MPI_Barrier(MPI_COMM_WORLD);
  int bad = 0;
  if (c->rank == kTarget) {
    own_window_begin(c);
    if (is_put) bad += check_bytes(c, win_buf, kSeedPut, "target window");
    if (ob_test_is_atomic(c->test)) {
      memcpy(&target_value, win_buf, sizeof(target_value));
      const int64_t want = c->test == OB_CSWAP_LATENCY ? kSwapped : kStart + kOperand;
      if (target_value != want) bad += report(c, "target int64", target_value, want);
    }
    own_window_end(c);
  } else {
    if (is_get) bad += check_bytes(c, c->local, kSeedGet, "origin buffer");
    if ((c->test == OB_FOP_LATENCY || c->test == OB_CSWAP_LATENCY) && c->result != kStart)
      bad += report(c, "fetched int64", c->result, kStart);
  }
  int total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

void ob_run(const struct ob_opts* o, unsigned test, unsigned sync, size_t size, MPI_Win win,
            uint8_t* win_buf, uint8_t* local, struct ob_result* r) {
  struct ctx c = {.o = o, .test = test, .sync = sync, .size = size, .win = win, .local = local};
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Group world;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  const int peer = 1 - c.rank;
  MPI_Group_incl(world, 1, &peer, &c.peer_group);
  MPI_Group_free(&world);
  c.operand = kOperand;
  c.compare = kStart;

  const uint64_t iters = ob_iters(o, test, size);
  MPI_Barrier(MPI_COMM_WORLD);
  run_iterations(&c, ob_warmup(o, test, size));
  r->bad = checked(&c, win_buf);

  /* Timed: the epoch is opened before the timer and closed after it (lock: one lock call;
   * fence: the opening fence is not an iteration). */
  MPI_Barrier(MPI_COMM_WORLD);
  epoch_open(&c);
  const double t0 = MPI_Wtime();
  for (uint64_t i = 0; i < iters; ++i) iteration(&c);
  const double seconds = MPI_Wtime() - t0;
  epoch_close(&c);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Group_free(&c.peer_group);
  r->iters = iters;
  if (ob_test_is_bw(test)) {
    const double bytes = (double)ob_bytes_per_iter(o, test, size) * (double)iters;
    r->value = seconds > 0 ? bytes / seconds / 1e6 : 0.0;
  } else {
    r->value = seconds * 1e6 / (double)iters;
  }
}
