/*
 * Pair types (MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT, MPI_FLOAT_INT,
 * MPI_2INT, MPI_2REAL) inside derived datatypes for the accumulate family of osc iwarpx, run
 * by osc_iwarpx_test.sh at 2..4 ranks with `--mca osc iwarpx`. Rank 0 prints
 * "osc_iwarpx_pair_test: OK <n> ranks" only when every rank passed every check.
 * Padding: every byte of an element outside its value and its index (e.g. the 4 after
 * MPI_DOUBLE_INT's int, the 2 between MPI_SHORT_INT's short and int) holds a sentinel that
 * must survive every call — at the target (0xA5), in the origin (0x5A, never copied to the
 * target, even by MPI_REPLACE) and in the result buffer (0xC3); gap elements and guard bytes
 * around the accessed span (0xEE) too. One allocate window, MPI_ERRORS_RETURN:
 *  1. concurrency at rank 0 under lock_all, from every rank, target a vector (3 blocks of 2
 *     elements, stride 3): MPI_MAXLOC and MPI_MINLOC by Accumulate / Raccumulate /
 *     Get_accumulate / Rget_accumulate in turn (distinct values, one element where every rank
 *     ties: the lowest index must win), the extremes one rank fetches never go back, the
 *     final values are the global extremes with their index; Get_accumulate(MPI_REPLACE) as
 *     an atomic swap of unique tokens through a strided result type: every token (and the
 *     initial one) is fetched exactly once or left in memory — a lost update shows up as a
 *     token fetched twice;
 *  2. every op (MAXLOC, MINLOC, REPLACE, NO_OP) x every call it is allowed in (NO_OP: the
 *     fetching ones), one origin per target (right neighbour) under an exclusive lock: a
 *     vector origin, an indexed target with out-of-order blocks, a contiguous-derived result;
 *     new contents checked against MPI_Reduce_local, fetched values = old contents;
 *  3. misuse: a vector whose last element crosses the window's end, and a displacement
 *     beyond it, are MPI_ERR_RMA_RANGE with nothing written;
 *  4. a dynamic window: a vector of MPI_SHORT_INT, pair types resized to their size (elements
 *     packed, so one convertor segment holds several), a vector across the region's end.
 */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osc_test_util.h"

#define WIN_BYTES 65536
#define ITERS 16
#define PAD_T 0xA5 /* target padding */
#define PAD_O 0x5A /* origin padding */
#define PAD_R 0xC3 /* result padding and gaps */
#define GAP 0xEE   /* target gap elements and guards */

typedef struct {
  double v;
  int k;
} t_double_int;
typedef struct {
  long v;
  int k;
} t_long_int;
typedef struct {
  short v;
  int k;
} t_short_int;
typedef struct {
  long double v;
  int k;
} t_ldouble_int;
typedef struct {
  float v;
  int k;
} t_float_int;
typedef struct {
  int v;
  int k;
} t_2int;
typedef struct {
  float v;
  float k;
} t_2real;

typedef enum { V_DOUBLE, V_LONG, V_SHORT, V_LDOUBLE, V_FLOAT, V_INT } vkind_t;

/* A pair type: its C layout (value at 0, index at koff) and how to read/write it. */
typedef struct {
  MPI_Datatype dt;
  const char* name;
  size_t ext, vsize, koff;
  vkind_t vk;
  int kfloat; /* the index is a float (MPI_2REAL) */
} pair_t;

/* C struct T with value type VT: the pair type dt's layout. */
#define PAIR(dt, T, VT, vk, kfloat)                            \
  (pair_t) {                                                   \
    dt, #dt, sizeof(T), sizeof(VT), offsetof(T, k), vk, kfloat \
  }

static const pair_t* cases(size_t* n) {
  static pair_t c[7];
  c[0] = PAIR(MPI_DOUBLE_INT, t_double_int, double, V_DOUBLE, 0);
  c[1] = PAIR(MPI_LONG_INT, t_long_int, long, V_LONG, 0);
  c[2] = PAIR(MPI_SHORT_INT, t_short_int, short, V_SHORT, 0);
  c[3] = PAIR(MPI_LONG_DOUBLE_INT, t_ldouble_int, long double, V_LDOUBLE, 0);
  c[4] = PAIR(MPI_FLOAT_INT, t_float_int, float, V_FLOAT, 0);
  c[5] = PAIR(MPI_2INT, t_2int, int, V_INT, 0);
  c[6] = PAIR(MPI_2REAL, t_2real, float, V_FLOAT, 1); /* Fortran REAL = C float */
  *n = 7;
  return c;
}

/* Element e of an array of p at base: fill value/index (padding left alone), read them. */
static void put_elem(const pair_t* p, uint8_t* e, long v, int k) {
  switch (p->vk) {
    case V_DOUBLE: {
      const double x = (double)v;
      memcpy(e, &x, sizeof(x));
      break;
    }
    case V_LONG: {
      memcpy(e, &v, sizeof(v));
      break;
    }
    case V_SHORT: {
      const short x = (short)v;
      memcpy(e, &x, sizeof(x));
      break;
    }
    case V_LDOUBLE: {
      const long double x = (long double)v;
      memcpy(e, &x, 10);
      break;
    }
    case V_FLOAT: {
      const float x = (float)v;
      memcpy(e, &x, sizeof(x));
      break;
    }
    case V_INT: {
      const int x = (int)v;
      memcpy(e, &x, sizeof(x));
      break;
    }
  }
  if (p->kfloat) {
    const float x = (float)k;
    memcpy(e + p->koff, &x, 4);
  } else {
    memcpy(e + p->koff, &k, 4);
  }
}
static void get_elem(const pair_t* p, const uint8_t* e, long* v, int* k) {
  switch (p->vk) {
    case V_DOUBLE: {
      double x;
      memcpy(&x, e, sizeof(x));
      *v = (long)x;
      break;
    }
    case V_LONG: {
      memcpy(v, e, sizeof(*v));
      break;
    }
    case V_SHORT: {
      short x;
      memcpy(&x, e, sizeof(x));
      *v = x;
      break;
    }
    case V_LDOUBLE: {
      long double x = 0;
      memcpy(&x, e, 10);
      *v = (long)x;
      break;
    }
    case V_FLOAT: {
      float x;
      memcpy(&x, e, sizeof(x));
      *v = (long)x;
      break;
    }
    case V_INT: {
      int x;
      memcpy(&x, e, sizeof(x));
      *v = x;
      break;
    }
  }
  if (p->kfloat) {
    float x;
    memcpy(&x, e + p->koff, 4);
    *k = (int)x;
  } else {
    memcpy(k, e + p->koff, 4);
  }
}
/* Is byte b of an element padding (neither value nor index)? long double: bytes 10..15 of
 * the value are the type's own, MPI data, never checked. */
static int is_pad(const pair_t* p, size_t b) {
  return !(b < p->vsize || (b >= p->koff && b < p->koff + 4));
}
/* Fresh element storage: every byte `fill`, then value/index. */
static void init_elem(const pair_t* p, uint8_t* e, int fill, long v, int k) {
  memset(e, fill, p->ext);
  put_elem(p, e, v, k);
}
/* Padding of elements [0, n) at base still `fill`? */
static int pads_ok(const pair_t* p, const uint8_t* base, int n, int fill) {
  for (int i = 0; i < n; ++i) {
    for (size_t b = 0; b < p->ext; ++b) {
      if (is_pad(p, b) && base[(size_t)i * p->ext + b] != (uint8_t)fill) return 0;
    }
  }
  return 1;
}
static int all_bytes(const uint8_t* q, size_t n, int fill) {
  for (size_t i = 0; i < n; ++i) {
    if (q[i] != (uint8_t)fill) return 0;
  }
  return 1;
}

/* ---- 1. concurrency at rank 0 ---------------------------------------------------------- */

enum { NSLOT = 8, NEL = 6, GUARD = 32 };
static const int vec_slot[NEL] = {0, 1, 3, 4, 6, 7}; /* vector(3, 2, 3): elements in slots */

/* Distinct per (it, rank) for a given element; element 5 ties across all ranks. */
static long mval(int it, int r, int e) {
  return e == NEL - 1 ? 2000 : ((long)(it * g_size + r) * 37 + e * 11) % 1009;
}
static int mloc(int it, int r, int e) {
  return e == NEL - 1 ? r + 1 : r * 1000 + it;
}
static long token(int it, int r, int e) {
  return (long)(it * g_size + r + 1) + e * 100;
}

static int call_acc(int variant, const void* o, int oc, MPI_Datatype odt, void* res, int rc_,
                    MPI_Datatype rdt, int target, MPI_Aint disp, MPI_Datatype tdt, MPI_Op op,
                    MPI_Win win) {
  MPI_Request rq = MPI_REQUEST_NULL;
  int rc;
  switch (variant % 4) {
    case 0: rc = MPI_Accumulate(o, oc, odt, target, disp, 1, tdt, op, win); break;
    case 1: rc = MPI_Raccumulate(o, oc, odt, target, disp, 1, tdt, op, win, &rq); break;
    case 2:
      rc = MPI_Get_accumulate(o, oc, odt, res, rc_, rdt, target, disp, 1, tdt, op, win);
      break;
    default:
      rc = MPI_Rget_accumulate(o, oc, odt, res, rc_, rdt, target, disp, 1, tdt, op, win, &rq);
  }
  if (rc == MPI_SUCCESS && rq != MPI_REQUEST_NULL) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
  return rc;
}

static void concurrent_case(const pair_t* p, MPI_Win win, uint8_t* mem, size_t at) {
  const size_t region = GUARD + NSLOT * p->ext + GUARD;
  uint8_t* reg[3] = {mem + at, mem + at + region, mem + at + 2 * region}; /* max, min, swap */
  if (g_rank == 0) {
    for (int q = 0; q < 3; ++q) {
      memset(reg[q], GAP, region);
      for (int e = 0; e < NEL; ++e) {
        const long v0 = q == 0 ? -5000 : q == 1 ? 5000 : e * 100; /* swap: token 0 of e */
        init_elem(p, reg[q] + GUARD + vec_slot[e] * p->ext, PAD_T, v0, q == 2 ? e : -1);
      }
    }
  }
  MPI_Datatype tvec, rvec;
  MPI_Type_vector(3, 2, 3, p->dt, &tvec);
  MPI_Type_vector(NEL, 1, 2, p->dt, &rvec); /* result: every other element */
  MPI_Type_commit(&tvec);
  MPI_Type_commit(&rvec);
  MPI_Barrier(MPI_COMM_WORLD);
  uint8_t org[NEL * 32], res[2 * NEL * 32];
  long last_max[NEL], last_min[NEL], fetched[ITERS][NEL];
  memset(fetched, 0xff, sizeof(fetched)); /* -1: not a token */
  for (int e = 0; e < NEL; ++e) last_max[e] = -5000, last_min[e] = 5000;
  int monotonic = 1, res_pads = 1;
  MPI_Win_lock_all(0, win);
  for (int it = 0; it < ITERS; ++it) {
    for (int q = 0; q < 3; ++q) {
      for (int e = 0; e < NEL; ++e) {
        const long v = q == 2   ? token(it, g_rank, e)
                       : q == 0 ? mval(it, g_rank, e)
                                : -mval(it, g_rank, e);
        init_elem(p, org + e * p->ext, PAD_O, v, q == 2 ? e : mloc(it, g_rank, e));
      }
      memset(res, PAD_R, sizeof(res));
      const int variant = q == 2 ? 2 + it % 2 : it + q;
      const MPI_Op op = q == 0 ? MPI_MAXLOC : q == 1 ? MPI_MINLOC : MPI_REPLACE;
      const int rc = call_acc(variant, org, NEL, p->dt, res, 1, rvec, 0,
                              (MPI_Aint)(reg[q] + GUARD - mem), tvec, op, win);
      CHECK(rc == MPI_SUCCESS, "%s concurrent op %d variant %d: rc %d", p->name, q, variant, rc);
      if (variant % 4 < 2) continue;
      /* Fetched: elements at even result slots; odd slots and all padding untouched. */
      for (int e = 0; e < NEL; ++e) {
        long v;
        int k;
        get_elem(p, res + 2 * e * p->ext, &v, &k);
        if (q == 0) {
          if (v < last_max[e]) monotonic = 0;
          last_max[e] = v;
        } else if (q == 1) {
          if (v > last_min[e]) monotonic = 0;
          last_min[e] = v;
        } else {
          fetched[it][e] = v;
          CHECK(k == e, "%s swap: fetched index %d for element %d", p->name, k, e);
        }
        if (!all_bytes(res + (2 * e + 1) * p->ext, p->ext, PAD_R)) res_pads = 0;
      }
      if (!pads_ok(p, res, 2 * NEL, PAD_R)) res_pads = 0;
    }
  }
  MPI_Win_unlock_all(win);
  CHECK(monotonic, "%s: Get_accumulate(MAXLOC/MINLOC) fetched an extreme that went back", p->name);
  CHECK(res_pads, "%s: result padding or gaps written", p->name);
  /* Swap tokens: gather every rank's fetches at rank 0. */
  long* all = malloc(sizeof(long) * ITERS * NEL * (size_t)g_size);
  MPI_Gather(fetched, ITERS * NEL, MPI_LONG, all, ITERS * NEL, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    for (int e = 0; e < NEL; ++e) {
      long want_max = -1, want_min = 1;
      int max_loc = 0, min_loc = 0;
      for (int it = 0; it < ITERS; ++it) {
        for (int r = 0; r < g_size; ++r) {
          const long v = mval(it, r, e);
          const int l = mloc(it, r, e);
          if (v > want_max || (v == want_max && l < max_loc)) want_max = v, max_loc = l;
          if (-v < want_min || (-v == want_min && l < min_loc)) want_min = -v, min_loc = l;
        }
      }
      long v;
      int k;
      get_elem(p, reg[0] + GUARD + vec_slot[e] * p->ext, &v, &k);
      CHECK(v == want_max && k == max_loc, "%s MAXLOC element %d: (%ld, %d), want (%ld, %d)",
            p->name, e, v, k, want_max, max_loc);
      get_elem(p, reg[1] + GUARD + vec_slot[e] * p->ext, &v, &k);
      CHECK(v == want_min && k == min_loc, "%s MINLOC element %d: (%ld, %d), want (%ld, %d)",
            p->name, e, v, k, want_min, min_loc);
      /* Tokens 0..ITERS*size (value - e*100): each fetched once, or the final one left. */
      const int ntok = ITERS * g_size + 1;
      int* seen = calloc((size_t)ntok, sizeof(int));
      get_elem(p, reg[2] + GUARD + vec_slot[e] * p->ext, &v, &k);
      int bad = 0;
      for (int i = -1; i < ITERS * g_size; ++i) {
        const long x =
            (i < 0 ? v : all[(size_t)(i / ITERS) * ITERS * NEL + (size_t)(i % ITERS) * NEL + e]) -
            e * 100;
        if (x < 0 || x >= ntok) {
          bad = 1;
        } else {
          seen[x]++;
        }
      }
      for (int x = 0; x < ntok; ++x) bad |= seen[x] != 1;
      free(seen);
      CHECK(!bad, "%s swap element %d: tokens lost or fetched twice (not atomic)", p->name, e);
    }
    for (int q = 0; q < 3; ++q) {
      int ok =
          all_bytes(reg[q], GUARD, GAP) && all_bytes(reg[q] + GUARD + NSLOT * p->ext, GUARD, GAP);
      for (int s = 0; s < NSLOT; ++s) {
        const uint8_t* el = reg[q] + GUARD + (size_t)s * p->ext;
        ok &= (s == 2 || s == 5) ? all_bytes(el, p->ext, GAP) : pads_ok(p, el, 1, PAD_T);
      }
      CHECK(ok, "%s region %d: target padding, gap elements or guards changed", p->name, q);
    }
  }
  free(all);
  MPI_Type_free(&tvec);
  MPI_Type_free(&rvec);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- 2. every op x every call, right neighbour ----------------------------------------- */

static void ops_case(const pair_t* p, MPI_Win win, size_t at) {
  enum { TS = 5 }; /* target slots: elements at 3, 4, 0 */
  static const int tmap[3] = {3, 4, 0};
  const int blen[2] = {2, 1}, bdisp[2] = {3, 0};
  const int right = (g_rank + 1) % g_size;
  MPI_Datatype tidx, ovec, rcon;
  MPI_Type_indexed(2, blen, bdisp, p->dt, &tidx);
  MPI_Type_vector(3, 1, 2, p->dt, &ovec);
  MPI_Type_contiguous(3, p->dt, &rcon);
  MPI_Type_commit(&tidx);
  MPI_Type_commit(&ovec);
  MPI_Type_commit(&rcon);
  const MPI_Op ops[4] = {MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
  const char* names[4] = {"MAXLOC", "MINLOC", "REPLACE", "NO_OP"};
  const size_t area = GUARD + TS * p->ext + GUARD;
  for (int oi = 0; oi < 4; ++oi) {
    for (int variant = 0; variant < 4; ++variant) {
      if (ops[oi] == MPI_NO_OP && variant < 2) continue; /* (R)accumulate: MPI_ERR_OP in MPI */
      uint8_t init[GUARD * 2 + TS * 32], org[6 * 32], res[3 * 32], got[GUARD * 2 + TS * 32];
      uint8_t pk_init[3 * 32], pk_org[3 * 32], pk_want[3 * 32];
      memset(init, GAP, area);
      for (int s = 0; s < TS; ++s) {
        if (s == 1 || s == 2) continue; /* gaps */
        init_elem(p, init + GUARD + s * p->ext, PAD_T, 10 * s + variant, 100 + s);
      }
      memset(org, PAD_O, sizeof(org));
      /* Origin element j (vector slot 2j): larger, smaller and equal value than its target. */
      const long ov[3] = {10 * 3 + variant + 7, 10 * 4 + variant - 7, variant};
      for (int j = 0; j < 3; ++j) put_elem(p, org + 2 * j * p->ext, ov[j], 50 + j);
      memset(res, PAD_R, sizeof(res));
      for (int j = 0; j < 3; ++j) {
        memcpy(pk_init + j * p->ext, init + GUARD + tmap[j] * p->ext, p->ext);
        memcpy(pk_org + j * p->ext, org + 2 * j * p->ext, p->ext);
      }
      memcpy(pk_want, pk_init, 3 * p->ext);
      if (ops[oi] == MPI_REPLACE) {
        memcpy(pk_want, pk_org, 3 * p->ext);
      } else if (ops[oi] != MPI_NO_OP) {
        MPI_Reduce_local(pk_org, pk_want, 3, p->dt, ops[oi]);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
      CHECK(MPI_Put(init, (int)area, MPI_BYTE, right, (MPI_Aint)at, (int)area, MPI_BYTE, win) ==
                MPI_SUCCESS,
            "put init");
      MPI_Win_flush(right, win);
      const int rc = call_acc(variant, org, 1, ovec, res, 1, rcon, right, (MPI_Aint)(at + GUARD),
                              tidx, ops[oi], win);
      CHECK(rc == MPI_SUCCESS, "%s %s variant %d: rc %d", p->name, names[oi], variant, rc);
      MPI_Win_flush(right, win);
      memset(got, 0, sizeof(got));
      CHECK(MPI_Get(got, (int)area, MPI_BYTE, right, (MPI_Aint)at, (int)area, MPI_BYTE, win) ==
                MPI_SUCCESS,
            "get back");
      MPI_Win_unlock(right, win);
      int data_ok = 1, fetch_ok = 1;
      for (int j = 0; j < 3; ++j) {
        long v, wv;
        int k, wk;
        get_elem(p, got + GUARD + tmap[j] * p->ext, &v, &k);
        get_elem(p, pk_want + j * p->ext, &wv, &wk);
        if (v != wv || k != wk) data_ok = 0;
        if (variant >= 2) {
          get_elem(p, res + j * p->ext, &v, &k);
          get_elem(p, pk_init + j * p->ext, &wv, &wk);
          if (v != wv || k != wk) fetch_ok = 0;
        }
      }
      CHECK(data_ok, "%s %s variant %d: target holds the wrong result", p->name, names[oi],
            variant);
      CHECK(fetch_ok, "%s %s variant %d: fetched values differ from the old contents", p->name,
            names[oi], variant);
      int pads = all_bytes(got, GUARD, GAP) && all_bytes(got + GUARD + TS * p->ext, GUARD, GAP) &&
                 all_bytes(got + GUARD + p->ext, 2 * p->ext, GAP);
      for (int j = 0; j < 3; ++j) pads &= pads_ok(p, got + GUARD + tmap[j] * p->ext, 1, PAD_T);
      CHECK(pads, "%s %s variant %d: target padding, gaps or guards changed", p->name, names[oi],
            variant);
      CHECK(variant < 2 ? all_bytes(res, sizeof(res), PAD_R)
                        : pads_ok(p, res, 3, PAD_R) &&
                              all_bytes(res + 3 * p->ext, sizeof(res) - 3 * p->ext, PAD_R),
            "%s %s variant %d: result padding written", p->name, names[oi], variant);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  MPI_Type_free(&tidx);
  MPI_Type_free(&ovec);
  MPI_Type_free(&rcon);
}

/* ---- 3. misuse ------------------------------------------------------------------------- */

static void test_errors(MPI_Win win, uint8_t* mem) {
  const int right = (g_rank + 1) % g_size;
  memset(mem + WIN_BYTES - 256, 0x3C, 256);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Datatype v2;
  MPI_Type_vector(2, 1, 4, MPI_DOUBLE_INT, &v2); /* elements 64 bytes apart */
  MPI_Type_commit(&v2);
  t_double_int o[2] = {{1e9, 1}, {1e9, 2}}, r[2];
  MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
  /* First element inside (at end - 72), second at end - 8: its 12 data bytes cross the end. */
  int rc = MPI_Accumulate(o, 2, MPI_DOUBLE_INT, right, WIN_BYTES - 72, 1, v2, MPI_MAXLOC, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_RANGE, "vector crossing the end: rc %d class %d", rc,
        osct_err_class(rc));
  rc = MPI_Get_accumulate(o, 2, MPI_DOUBLE_INT, r, 2, MPI_DOUBLE_INT, right, WIN_BYTES - 72, 1, v2,
                          MPI_REPLACE, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_RANGE, "get_accumulate crossing the end: class %d",
        osct_err_class(rc));
  rc = MPI_Accumulate(o, 2, MPI_DOUBLE_INT, right, WIN_BYTES + 64, 1, v2, MPI_MINLOC, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_RANGE, "displacement beyond the end: class %d",
        osct_err_class(rc));
  MPI_Win_unlock(right, win);
  MPI_Type_free(&v2);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(all_bytes(mem + WIN_BYTES - 256, 256, 0x3C), "rejected accumulates wrote the window");
}

/* ---- 4. dynamic window, resized types ---------------------------------------------------- */

/* One dynamic window, a 512-byte region attached per rank, addresses by allgather; on the right
 * neighbour's region: Get_accumulate(MAXLOC) through a vector of MPI_SHORT_INT (padding inside
 * each element); Accumulate(MAXLOC) through MPI_DOUBLE_INT / MPI_LONG_INT /
 * MPI_LONG_DOUBLE_INT resized to their size (elements packed: the convertor reports one segment
 * holding several elements, which must be cut at element boundaries, not at holes); a vector
 * crossing the region's end is MPI_ERR_RMA_RANGE with nothing written. */
/* MAXLOC origin values for the resized slots: element 1 below the target's -1. */
static long rval(size_t i, int e) {
  return e == 1 ? -5 : 1000 * (long)i + e;
}

static void test_dynamic(void) {
  enum { REG = 512, VOFF = 64, ROFF = 256 };
  const int right = (g_rank + 1) % g_size;
  uint8_t* region = malloc(REG);
  memset(region, GAP, REG);
  MPI_Win win;
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  MPI_Win_attach(win, region, REG);
  MPI_Aint mine = 0, *addr = malloc(sizeof(MPI_Aint) * (size_t)g_size);
  MPI_Get_address(region, &mine);
  MPI_Allgather(&mine, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD);
  size_t n = 0;
  const pair_t* c = cases(&n);
  const pair_t* si = &c[2]; /* MPI_SHORT_INT */
  /* Our region as the left neighbour will see it: three packed (-1, -1) elements per resized
   * slot, two MPI_SHORT_INT at VOFF, VOFF + 3 ext. */
  for (size_t i = 0; i < n; ++i) {
    if (i != 0 && i != 1 && i != 3) continue;
    for (int e = 0; e < 3; ++e) {
      put_elem(&c[i], region + ROFF + 80 * (i == 3 ? 2 : i) + e * (c[i].vsize + 4), -1, -1);
    }
  }
  for (int j = 0; j < 2; ++j) init_elem(si, region + VOFF + 3 * j * si->ext, PAD_T, 100 * j, 7);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Datatype svec;
  MPI_Type_vector(2, 1, 3, MPI_SHORT_INT, &svec);
  MPI_Type_commit(&svec);
  uint8_t org[4 * 32], res[4 * 32];
  memset(org, PAD_O, sizeof(org));
  memset(res, PAD_R, sizeof(res));
  put_elem(si, org, 50, 1);           /* > 0: replaces element 0 */
  put_elem(si, org + si->ext, 50, 2); /* < 100: element 1 stays */
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
  int rc = MPI_Get_accumulate(org, 2, MPI_SHORT_INT, res, 2, MPI_SHORT_INT, right,
                              addr[right] + VOFF, 1, svec, MPI_MAXLOC, win);
  CHECK(rc == MPI_SUCCESS, "dynamic MPI_SHORT_INT vector: rc %d", rc);
  /* Resized to their size: three packed elements of each type, 80 bytes apart. */
  for (size_t i = 0; i < n; ++i) {
    if (i != 0 && i != 1 && i != 3) continue; /* padding at the end only */
    const pair_t* p = &c[i];
    MPI_Datatype packed;
    MPI_Type_create_resized(p->dt, 0, (MPI_Aint)(p->vsize + 4), &packed);
    MPI_Type_commit(&packed);
    uint8_t o3[3 * 32];
    for (int e = 0; e < 3; ++e) init_elem(p, o3 + e * p->ext, PAD_O, rval(i, e), e + 20);
    rc = MPI_Accumulate(o3, 3, p->dt, right, addr[right] + ROFF + 80 * (MPI_Aint)(i == 3 ? 2 : i),
                        3, packed, MPI_MAXLOC, win);
    CHECK(rc == MPI_SUCCESS, "%s resized to its size: rc %d", p->name, rc);
    MPI_Type_free(&packed);
  }
  /* Crossing the region's end: the second element starts 6 bytes before it. */
  rc = MPI_Accumulate(org, 2, MPI_SHORT_INT, right, addr[right] + REG - 6 - 3 * 8, 1, svec,
                      MPI_MAXLOC, win);
  CHECK(osct_err_class(rc) == MPI_ERR_RMA_RANGE, "dynamic vector across the region's end: class %d",
        osct_err_class(rc));
  MPI_Win_unlock(right, win);
  MPI_Barrier(MPI_COMM_WORLD);
  /* Our region, written by the left neighbour. */
  long v;
  int k;
  get_elem(si, region + VOFF, &v, &k);
  CHECK(v == 50 && k == 1, "dynamic vector element 0: (%ld, %d)", v, k);
  get_elem(si, region + VOFF + 3 * si->ext, &v, &k);
  CHECK(v == 100 && k == 7, "dynamic vector element 1: (%ld, %d)", v, k);
  CHECK(pads_ok(si, region + VOFF, 1, PAD_T) &&
            pads_ok(si, region + VOFF + 3 * si->ext, 1, PAD_T) &&
            all_bytes(region + VOFF + si->ext, 2 * si->ext, GAP),
        "dynamic vector: padding or gap written");
  get_elem(si, res, &v, &k);
  long v1;
  int k1;
  get_elem(si, res + si->ext, &v1, &k1);
  CHECK(v == 0 && k == 7 && v1 == 100 && k1 == 7 && pads_ok(si, res, 2, PAD_R),
        "dynamic vector: fetched (%ld, %d) (%ld, %d) or result padding written", v, k, v1, k1);
  for (size_t i = 0; i < n; ++i) {
    if (i != 0 && i != 1 && i != 3) continue;
    const pair_t* p = &c[i];
    const size_t sz = p->vsize + 4;
    const uint8_t* at = region + ROFF + 80 * (i == 3 ? 2 : i);
    int ok = 1;
    for (int e = 0; e < 3; ++e) {
      uint8_t want[32];
      if (e == 1) { /* the origin's -5 lost: the target's (-1, -1) stays */
        init_elem(p, want, 0, -1, -1);
      } else {
        init_elem(p, want, 0, rval(i, e), e + 20);
      }
      ok &= memcmp(at + e * sz, want, p->vsize == 16 ? 10 : p->vsize) == 0 &&
            memcmp(at + e * sz + p->koff, want + p->koff, 4) == 0;
    }
    CHECK(ok, "%s resized to its size: wrong contents", p->name);
    CHECK(all_bytes(at + 3 * sz, 8, GAP), "%s resized: bytes after the last element written",
          p->name);
  }
  CHECK(all_bytes(region + REG - 32, 32, GAP), "rejected dynamic accumulate wrote the region");
  MPI_Type_free(&svec);
  MPI_Win_detach(win, region);
  MPI_Win_free(&win);
  free(addr);
  free(region);
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
  size_t n = 0;
  const pair_t* c = cases(&n);
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    MPI_Aint lb = 0, ext = 0;
    int size = 0;
    MPI_Type_get_extent(c[i].dt, &lb, &ext);
    MPI_Type_size(c[i].dt, &size);
    const size_t want = c[i].vsize + 4; /* MPI size: value and index, no padding */
    CHECK(lb == 0 && (size_t)ext == c[i].ext && (size_t)size == want,
          "%s: extent %ld size %d, C layout %zu/%zu", c[i].name, (long)ext, size, c[i].ext, want);
    if ((size_t)ext != c[i].ext) continue;
    concurrent_case(&c[i], win, mem, at);
    at += 3 * (GUARD + NSLOT * c[i].ext + GUARD);
    ops_case(&c[i], win, 32768 + 1024 * i);
  }
  test_errors(win, mem);
  MPI_Win_free(&win);
  test_dynamic();
  return osct_finish("osc_iwarpx_pair_test", "");
}
