/*
 * General accumulate checks for osc iwarpx (every op and predefined type the remote atomics
 * cannot do in one request), run by osc_iwarpx_test.sh at 2..4 ranks with `--mca osc iwarpx`.
 * Rank 0 prints "osc_iwarpx_acc_test: OK <n> ranks" only when every rank passed every check.
 * One allocate window with MPI_ERRORS_RETURN, passive target epochs:
 *  1. concurrency at rank 0 under lock_all, results checked exactly:
 *     Accumulate(MPI_SUM, MPI_DOUBLE) (CAS loop), Accumulate(MPI_SUM, MPI_SHORT) and
 *     Accumulate(MPI_SUM, MPI_LONG_DOUBLE) (accumulate lock), MAXLOC/MINLOC on MPI_2INT (CAS
 *     loop) and MPI_DOUBLE_INT (lock), Fetch_and_op(MPI_SUM, MPI_DOUBLE) tickets forming a
 *     permutation, Get_accumulate(MPI_MAX, MPI_FLOAT) whose fetched values only grow,
 *     Compare_and_swap on MPI_SHORT and MPI_CHAR with exactly one winner, Accumulate and
 *     Fetch_and_op with MPI_BXOR on MPI_INT64_T (native or CAS loop, by provider), and
 *     Raccumulate/Rget_accumulate(MPI_PROD, MPI_DOUBLE) with MPI_Wait;
 *  2. every op on every type class, one origin per target (right neighbour) under an exclusive
 *     lock: Get_accumulate must fetch the old contents and leave old op origin (oracle:
 *     MPI_Reduce_local; MPI_REPLACE / MPI_NO_OP by hand); a contiguous derived origin type
 *     against a predefined target type; the slots around the accessed ones stay untouched;
 *  3. non-contiguous derived types: Get_accumulate(SUM) through a vector target and a vector
 *     result of doubles; from all ranks at once, an indexed type of shorts (out-of-order
 *     blocks, accumulate lock) and a vector of floats (CAS loop) at rank 0; gaps untouched;
 *  4. errors: MPI_MAXLOC on MPI_DOUBLE and MPI_BAND on MPI_FLOAT are MPI_ERR_OP, an
 *     accumulate crossing the window's end is MPI_ERR_RMA_RANGE, nothing written.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osc_test_util.h"

#define WIN_BYTES 4096
#define ITERS 40

/* Byte offsets of the concurrency slots in rank 0's window (each naturally aligned). */
enum {
  OFF_DSUM = 0,     /* double[4] */
  OFF_LDSUM = 64,   /* long double */
  OFF_SSUM = 96,    /* short */
  OFF_CAS16 = 98,   /* short */
  OFF_CAS8 = 100,   /* char */
  OFF_2INT = 104,   /* {int, int} x 2: MAXLOC, MINLOC */
  OFF_DINT = 128,   /* MPI_DOUBLE_INT x 2 (16-byte extent): MAXLOC, MINLOC */
  OFF_TICKET = 192, /* double */
  OFF_FMAX = 200,   /* float */
  OFF_PROD = 208,   /* double */
  OFF_BXOR = 216,   /* int64: BXOR (native if the provider has FI_BXOR, else CAS loop) */
  OFF_END = 256
};

typedef struct {
  double v;
  int loc;
} double_int_t;

static void test_concurrent(MPI_Win win, uint8_t* mem) {
  memset(mem, 0, OFF_END);
  const double one = 1.0;
  memcpy(mem + OFF_PROD, &one, sizeof(one));
  const int int_min[2] = {-1000000, 1 << 30}, int_max[2] = {1000000, -1};
  memcpy(mem + OFF_2INT + 8, int_max, 8); /* MINLOC slot starts high */
  double_int_t dmin = {1e300, -1};
  memcpy(mem + OFF_DINT + 16, &dmin, sizeof(dmin));
  (void)int_min;
  MPI_Barrier(MPI_COMM_WORLD);

  MPI_Win_lock_all(0, win);
  double tickets[ITERS];
  float prev_max = -1.0f;
  int monotonic = 1;
  for (int i = 0; i < ITERS; ++i) {
    const double d[4] = {0.5 * (g_rank + 1), 0.25, -1.0, 1024.0};
    CHECK(MPI_Accumulate(d, 4, MPI_DOUBLE, 0, OFF_DSUM, 4, MPI_DOUBLE, MPI_SUM, win) == MPI_SUCCESS,
          "acc double");
    const long double ld = 0.125L * (g_rank + 1);
    CHECK(MPI_Accumulate(&ld, 1, MPI_LONG_DOUBLE, 0, OFF_LDSUM, 1, MPI_LONG_DOUBLE, MPI_SUM, win) ==
              MPI_SUCCESS,
          "acc long double");
    const short s = 1;
    CHECK(MPI_Accumulate(&s, 1, MPI_SHORT, 0, OFF_SSUM, 1, MPI_SHORT, MPI_SUM, win) == MPI_SUCCESS,
          "acc short");
    /* value i * size + rank: the global max is (ITERS-1)*size + size-1, at loc = rank. */
    const int mx[2] = {i * g_size + g_rank, g_rank};
    const int mn[2] = {-(i * g_size + g_rank), g_rank};
    CHECK(MPI_Accumulate(mx, 1, MPI_2INT, 0, OFF_2INT, 1, MPI_2INT, MPI_MAXLOC, win) == MPI_SUCCESS,
          "maxloc 2int");
    CHECK(MPI_Accumulate(mn, 1, MPI_2INT, 0, OFF_2INT + 8, 1, MPI_2INT, MPI_MINLOC, win) ==
              MPI_SUCCESS,
          "minloc 2int");
    const double_int_t dx = {(double)(i * g_size + g_rank) + 0.5, g_rank};
    const double_int_t dn = {-(double)(i * g_size + g_rank), g_rank};
    CHECK(MPI_Accumulate(&dx, 1, MPI_DOUBLE_INT, 0, OFF_DINT, 1, MPI_DOUBLE_INT, MPI_MAXLOC, win) ==
              MPI_SUCCESS,
          "maxloc double_int");
    CHECK(MPI_Accumulate(&dn, 1, MPI_DOUBLE_INT, 0, OFF_DINT + 16, 1, MPI_DOUBLE_INT, MPI_MINLOC,
                         win) == MPI_SUCCESS,
          "minloc double_int");
    CHECK(
        MPI_Fetch_and_op(&one, &tickets[i], MPI_DOUBLE, 0, OFF_TICKET, MPI_SUM, win) == MPI_SUCCESS,
        "fetch_and_op double");
    const float f = (float)(i * g_size + g_rank);
    float fetched = -2.0f;
    CHECK(MPI_Get_accumulate(&f, 1, MPI_FLOAT, &fetched, 1, MPI_FLOAT, 0, OFF_FMAX, 1, MPI_FLOAT,
                             MPI_MAX, win) == MPI_SUCCESS,
          "get_accumulate max float");
    MPI_Win_flush(0, win);
    const int64_t x = (int64_t)((uint64_t)(g_rank + 1) << (i % 48));
    int64_t xold = 0;
    CHECK((i % 2 ? MPI_Fetch_and_op(&x, &xold, MPI_INT64_T, 0, OFF_BXOR, MPI_BXOR, win)
                 : MPI_Accumulate(&x, 1, MPI_INT64_T, 0, OFF_BXOR, 1, MPI_INT64_T, MPI_BXOR,
                                  win)) == MPI_SUCCESS,
          "bxor");
    if (fetched < prev_max) monotonic = 0;
    prev_max = fetched;
    if (i < 3) {
      const double two = 2.0;
      double old = 0;
      MPI_Request rq[2];
      CHECK(MPI_Raccumulate(&two, 1, MPI_DOUBLE, 0, OFF_PROD, 1, MPI_DOUBLE, MPI_PROD, win,
                            &rq[0]) == MPI_SUCCESS,
            "raccumulate prod");
      CHECK(MPI_Rget_accumulate(&two, 1, MPI_DOUBLE, &old, 1, MPI_DOUBLE, 0, OFF_PROD, 1,
                                MPI_DOUBLE, MPI_PROD, win, &rq[1]) == MPI_SUCCESS,
            "rget_accumulate prod");
      MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
      CHECK(old >= 2.0, "rget_accumulate fetched %g before our own raccumulate", old);
    }
  }
  CHECK(monotonic, "Get_accumulate(MAX) fetched a smaller value after a larger one");
  /* Compare_and_swap: one winner per slot. */
  const short s_new = (short)(g_rank + 1), s_cmp = 0;
  short s_old = -1;
  CHECK(MPI_Compare_and_swap(&s_new, &s_cmp, &s_old, MPI_SHORT, 0, OFF_CAS16, win) == MPI_SUCCESS,
        "cas short");
  const char c_new = (char)(g_rank + 1), c_cmp = 0;
  char c_old = -1;
  CHECK(MPI_Compare_and_swap(&c_new, &c_cmp, &c_old, MPI_CHAR, 0, OFF_CAS8, win) == MPI_SUCCESS,
        "cas char");
  MPI_Win_unlock_all(win);

  int wins[2] = {s_old == 0, c_old == 0}, total_wins[2] = {0, 0};
  MPI_Allreduce(wins, total_wins, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(total_wins[0] == 1 && total_wins[1] == 1, "cas winners: short %d, char %d", total_wins[0],
        total_wins[1]);
  double* all = malloc(sizeof(double) * ITERS * (size_t)g_size);
  MPI_Gather(tickets, ITERS, MPI_DOUBLE, all, ITERS, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    const int n = ITERS * g_size;
    char* seen = calloc((size_t)n, 1);
    int perm = 1;
    for (int i = 0; i < n; ++i) {
      const int k = (int)all[i];
      if ((double)k != all[i] || k < 0 || k >= n || seen[k]) perm = 0;
      if (perm) seen[k] = 1;
    }
    free(seen);
    CHECK(perm, "Fetch_and_op(SUM, MPI_DOUBLE) tickets are not a permutation of 0..%d", n - 1);
    double tk = 0;
    memcpy(&tk, mem + OFF_TICKET, sizeof(tk));
    CHECK(tk == (double)n, "ticket counter %g, expected %d", tk, n);
    double d[4];
    memcpy(d, mem + OFF_DSUM, sizeof(d));
    const double rsum = 0.5 * g_size * (g_size + 1) / 2.0;
    CHECK(d[0] == ITERS * rsum && d[1] == ITERS * 0.25 * g_size && d[2] == -ITERS * g_size &&
              d[3] == 1024.0 * ITERS * g_size,
          "double sums %g %g %g %g", d[0], d[1], d[2], d[3]);
    long double ld = 0;
    memcpy(&ld, mem + OFF_LDSUM, sizeof(ld));
    CHECK(ld == ITERS * 0.125L * g_size * (g_size + 1) / 2, "long double sum %Lg", ld);
    short s = 0;
    memcpy(&s, mem + OFF_SSUM, sizeof(s));
    CHECK(s == ITERS * g_size, "short sum %d, expected %d", s, ITERS * g_size);
    int mx[4];
    memcpy(mx, mem + OFF_2INT, sizeof(mx));
    const int top = (ITERS - 1) * g_size + g_size - 1;
    CHECK(mx[0] == top && mx[1] == g_size - 1, "2int maxloc (%d, %d)", mx[0], mx[1]);
    CHECK(mx[2] == -top && mx[3] == g_size - 1, "2int minloc (%d, %d)", mx[2], mx[3]);
    double_int_t di[2];
    memcpy(&di[0], mem + OFF_DINT, sizeof(di[0]));
    memcpy(&di[1], mem + OFF_DINT + 16, sizeof(di[1]));
    CHECK(di[0].v == top + 0.5 && di[0].loc == g_size - 1, "double_int maxloc (%g, %d)", di[0].v,
          di[0].loc);
    CHECK(di[1].v == -top && di[1].loc == g_size - 1, "double_int minloc (%g, %d)", di[1].v,
          di[1].loc);
    float fm = 0;
    memcpy(&fm, mem + OFF_FMAX, sizeof(fm));
    CHECK(fm == (float)top, "float max %g", (double)fm);
    uint64_t xr = 0, xw = 0;
    for (int r = 0; r < g_size; ++r) {
      for (int i = 0; i < ITERS; ++i) xw ^= (uint64_t)(r + 1) << (i % 48);
    }
    memcpy(&xr, mem + OFF_BXOR, 8);
    CHECK(xr == xw, "bxor 0x%llx, expected 0x%llx", (unsigned long long)xr, (unsigned long long)xw);
    double prod = 0;
    memcpy(&prod, mem + OFF_PROD, sizeof(prod));
    CHECK(prod == (double)(1ull << (6 * g_size)), "prod %g, expected 2^%d", prod, 6 * g_size);
  }
  free(all);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Type under test: datatype, element size, whether arithmetic/logical/bitwise ops apply. */
typedef struct {
  MPI_Datatype dt;
  const char* name;
  size_t size;
  int arith, logical, bitwise;
} type_case_t;

static void fill(const type_case_t* tc, uint8_t* p, int n, int seed) {
  for (int i = 0; i < n; ++i) {
    uint8_t* e = p + (size_t)i * tc->size;
    const int v = (seed * 7 + i * 3) % 5 + 1; /* 1..5: no overflow in PROD of two values */
    if (tc->dt == MPI_FLOAT) {
      const float f = (float)v * 0.5f;
      memcpy(e, &f, 4);
    } else if (tc->dt == MPI_DOUBLE) {
      const double d = v * 0.25;
      memcpy(e, &d, 8);
    } else if (tc->dt == MPI_LONG_DOUBLE) {
      const long double d = v * 0.75L;
      memcpy(e, &d, sizeof(d));
    } else if (tc->dt == MPI_2INT) {
      const int two[2] = {v, seed * 10 + i};
      memcpy(e, two, 8);
    } else if (tc->size == 1) {
      e[0] = (uint8_t)(v + (i % 2 ? 0 : 16));
    } else if (tc->size == 2) {
      const int16_t x = (int16_t)(v * 3 - 7);
      memcpy(e, &x, 2);
    } else if (tc->size == 4) {
      const int32_t x = v * 1000 - 2500 + (i % 2 ? 0 : 0x10000);
      memcpy(e, &x, 4);
    } else {
      const int64_t x = (int64_t)v * 100000 - 250000 + (i % 2 ? 0 : (int64_t)1 << 40);
      memcpy(e, &x, 8);
    }
  }
}

static void test_ops(MPI_Win win, uint8_t* mem) {
  const type_case_t types[] = {
      {MPI_INT, "MPI_INT", sizeof(int), 1, 1, 1},
      {MPI_INT64_T, "MPI_INT64_T", 8, 1, 1, 1},
      {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1, 1, 1, 1},
      {MPI_SHORT, "MPI_SHORT", 2, 1, 1, 1},
      {MPI_FLOAT, "MPI_FLOAT", 4, 1, 0, 0},
      {MPI_DOUBLE, "MPI_DOUBLE", 8, 1, 0, 0},
      {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", sizeof(long double), 1, 0, 0},
      {MPI_2INT, "MPI_2INT", 8, 0, 0, 0},
  };
  const struct {
    MPI_Op op;
    const char* name;
    int kind; /* 0 any, 1 arith, 2 logical, 3 bitwise, 4 pair */
  } ops[] = {{MPI_SUM, "SUM", 1},         {MPI_PROD, "PROD", 1},     {MPI_MIN, "MIN", 1},
             {MPI_MAX, "MAX", 1},         {MPI_LAND, "LAND", 2},     {MPI_LOR, "LOR", 2},
             {MPI_LXOR, "LXOR", 2},       {MPI_BAND, "BAND", 3},     {MPI_BOR, "BOR", 3},
             {MPI_BXOR, "BXOR", 3},       {MPI_MAXLOC, "MAXLOC", 4}, {MPI_MINLOC, "MINLOC", 4},
             {MPI_REPLACE, "REPLACE", 0}, {MPI_NO_OP, "NO_OP", 0}};
  enum { N = 5, GUARD = 16 };
  const int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
  const size_t base_off = 512; /* our slots in the target's window */
  for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ++ti) {
    const type_case_t* tc = &types[ti];
    for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); ++oi) {
      const int kind = ops[oi].kind;
      const int applies = kind == 0 || (kind == 1 && tc->arith) || (kind == 2 && tc->logical) ||
                          (kind == 3 && tc->bitwise) || (kind == 4 && tc->dt == MPI_2INT);
      if (!applies) continue;
      const size_t bytes = N * tc->size;
      uint8_t init[N * 16], origin[N * 16], fetched[N * 16], expect[N * 16],
          got[N * 16 + 2 * GUARD];
      /* The target zeroes its slots and sets the guards to 0xCD; the origin puts init. */
      memset(mem + base_off - GUARD, 0xCD, bytes + 2 * GUARD);
      memset(mem + base_off, 0, bytes);
      MPI_Barrier(MPI_COMM_WORLD);
      fill(tc, init, N, right);
      fill(tc, origin, N, g_rank + 100);
      memcpy(expect, init, bytes);
      if (ops[oi].op == MPI_REPLACE) {
        memcpy(expect, origin, bytes);
      } else if (ops[oi].op != MPI_NO_OP) {
        MPI_Reduce_local(origin, expect, N, tc->dt, ops[oi].op);
      }
      memset(fetched, 0x77, bytes);
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
      CHECK(MPI_Put(init, (int)bytes, MPI_BYTE, right, (MPI_Aint)base_off, (int)bytes, MPI_BYTE,
                    win) == MPI_SUCCESS,
            "put init");
      MPI_Win_flush(right, win);
      /* A contiguous derived origin type (N x dt as one element) for half of the cases. */
      MPI_Datatype otype = tc->dt;
      int ocount = N;
      if (oi % 2 == 1) {
        MPI_Type_contiguous(N, tc->dt, &otype);
        MPI_Type_commit(&otype);
        ocount = 1;
      }
      int rc = MPI_Get_accumulate(origin, ocount, otype, fetched, N, tc->dt, right,
                                  (MPI_Aint)base_off, N, tc->dt, ops[oi].op, win);
      if (otype != tc->dt) MPI_Type_free(&otype);
      CHECK(rc == MPI_SUCCESS, "%s %s: Get_accumulate rc %d", tc->name, ops[oi].name, rc);
      MPI_Win_flush(right, win);
      memset(got, 0, sizeof(got));
      CHECK(MPI_Get(got, (int)(bytes + 2 * GUARD), MPI_BYTE, right, (MPI_Aint)(base_off - GUARD),
                    (int)(bytes + 2 * GUARD), MPI_BYTE, win) == MPI_SUCCESS,
            "get back");
      MPI_Win_unlock(right, win);
      /* long double: compare the 10 value bytes only (the rest is padding). */
      int same_fetch = 1, same_new = 1;
      for (int e = 0; e < N; ++e) {
        const size_t cmp = tc->dt == MPI_LONG_DOUBLE ? 10 : tc->size;
        if (memcmp(fetched + e * tc->size, init + e * tc->size, cmp) != 0) same_fetch = 0;
        if (memcmp(got + GUARD + e * tc->size, expect + e * tc->size, cmp) != 0) same_new = 0;
      }
      CHECK(same_fetch, "%s %s: fetched values differ from the old contents", tc->name,
            ops[oi].name);
      CHECK(same_new, "%s %s: target holds the wrong result", tc->name, ops[oi].name);
      int guards = 1;
      for (int g = 0; g < GUARD; ++g) {
        if (got[g] != 0xCD || got[GUARD + bytes + (size_t)g] != 0xCD) guards = 0;
      }
      CHECK(guards, "%s %s: bytes around the accessed elements changed", tc->name, ops[oi].name);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  (void)left;
}

/* Non-contiguous derived types: each rank works on its right neighbour's window at 1024.. with
 * a vector target (every other double), a contiguous origin and a vector result (stride 3);
 * then all ranks at once at rank 0: an indexed target of shorts (locked path) and a vector of
 * floats (CAS loop), MPI_SUM, checked exactly; gaps untouched everywhere. */
static void test_derived(MPI_Win win, uint8_t* mem) {
  enum { K = 4, TOFF = 1024, COFF = 1200 };
  const int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
  double* t = (double*)(mem + TOFF);
  for (int i = 0; i < 2 * K; ++i) t[i] = i % 2 ? -7.0 : 10.0 * left + i; /* odd: gaps */
  memset(mem + COFF, 0, 64);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Datatype tvec, rvec, sidx, fvec;
  MPI_Type_vector(K, 1, 2, MPI_DOUBLE, &tvec);
  MPI_Type_vector(K, 1, 3, MPI_DOUBLE, &rvec);
  const int blen[2] = {2, 1}, bdisp[2] = {3, 0}; /* shorts 3,4 then 0: out of order, gaps 1,2 */
  MPI_Type_indexed(2, blen, bdisp, MPI_SHORT, &sidx);
  MPI_Type_vector(2, 1, 2, MPI_FLOAT, &fvec);
  MPI_Type_commit(&tvec);
  MPI_Type_commit(&rvec);
  MPI_Type_commit(&sidx);
  MPI_Type_commit(&fvec);
  const double add[K] = {1.0, 2.0, 3.0, 4.0};
  double res[3 * K];
  for (int i = 0; i < 3 * K; ++i) res[i] = -1.0;
  MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  int rc = MPI_Get_accumulate(add, K, MPI_DOUBLE, res, 1, rvec, right, TOFF, 1, tvec, MPI_SUM, win);
  CHECK(rc == MPI_SUCCESS, "get_accumulate vector: rc %d", rc);
  MPI_Win_unlock(right, win);
  for (int i = 0; i < K; ++i) {
    CHECK(res[3 * i] == 10.0 * g_rank + 2 * i, "vector result %d: %g", i, res[3 * i]);
    CHECK(res[3 * i + 1] == -1.0 && res[3 * i + 2] == -1.0, "result gap %d written", i);
  }
  MPI_Win_lock_all(0, win);
  const short sv[3] = {1, 2, 3};
  const float fv[2] = {0.5f, 0.25f};
  for (int it = 0; it < 10; ++it) {
    CHECK(MPI_Accumulate(sv, 3, MPI_SHORT, 0, COFF, 1, sidx, MPI_SUM, win) == MPI_SUCCESS,
          "accumulate indexed shorts");
    CHECK(MPI_Accumulate(fv, 2, MPI_FLOAT, 0, COFF + 16, 1, fvec, MPI_SUM, win) == MPI_SUCCESS,
          "accumulate vector floats");
  }
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < 2 * K; ++i) {
    const double want = i % 2 ? -7.0 : 10.0 * left + i + add[i / 2];
    CHECK(t[i] == want, "vector target element %d: %g, want %g", i, t[i], want);
  }
  if (g_rank == 0) {
    short sh[5];
    float fl[3];
    memcpy(sh, mem + COFF, sizeof(sh));
    memcpy(fl, mem + COFF + 16, sizeof(fl));
    const int n = 10 * g_size;
    CHECK(sh[3] == n * 1 && sh[4] == n * 2 && sh[0] == n * 3 && sh[1] == 0 && sh[2] == 0,
          "indexed shorts %d %d %d %d %d", sh[0], sh[1], sh[2], sh[3], sh[4]);
    CHECK(fl[0] == 0.5f * n && fl[1] == 0.0f && fl[2] == 0.25f * n, "vector floats %g %g %g",
          (double)fl[0], (double)fl[1], (double)fl[2]);
  }
  MPI_Type_free(&tvec);
  MPI_Type_free(&rvec);
  MPI_Type_free(&sidx);
  MPI_Type_free(&fvec);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void test_errors(MPI_Win win, uint8_t* mem) {
  const int right = (g_rank + 1) % g_size;
  memset(mem + WIN_BYTES - 64, 0x3C, 64);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  const double d[2] = {1.0, 2.0};
  const double_int_t di = {1.0, 1};
  int rc = MPI_Accumulate(d, 1, MPI_DOUBLE, right, 0, 1, MPI_DOUBLE, MPI_MAXLOC, win);
  CHECK(osct_err_class(rc) == MPI_ERR_OP, "MAXLOC on MPI_DOUBLE: rc %d class %d", rc,
        osct_err_class(rc));
  const float f = 1.0f;
  rc = MPI_Accumulate(&f, 1, MPI_FLOAT, right, 0, 1, MPI_FLOAT, MPI_BAND, win);
  CHECK(osct_err_class(rc) == MPI_ERR_OP, "BAND on MPI_FLOAT: rc %d class %d", rc,
        osct_err_class(rc));
  rc = MPI_Accumulate(d, 2, MPI_DOUBLE, right, WIN_BYTES - 8, 2, MPI_DOUBLE, MPI_SUM, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_RANGE, "double accumulate across the end: class %d",
        osct_err_class(rc));
  rc = MPI_Accumulate(&di, 1, MPI_DOUBLE_INT, right, WIN_BYTES - 8, 1, MPI_DOUBLE_INT, MPI_MAXLOC,
                      win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_RANGE, "double_int accumulate across the end: class %d",
        osct_err_class(rc));
  MPI_Win_unlock(right, win);
  MPI_Barrier(MPI_COMM_WORLD);
  int intact = 1;
  for (int i = 0; i < 64; ++i) intact &= mem[WIN_BYTES - 64 + i] == 0x3C;
  CHECK(intact, "rejected accumulates changed the window's end");
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
  test_concurrent(win, mem);
  test_ops(win, mem);
  test_derived(win, mem);
  test_errors(win, mem);
  MPI_Win_free(&win);
  return osct_finish("osc_iwarpx_acc_test", "");
}
