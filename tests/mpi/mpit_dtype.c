/* mpit_dtype.c: derived datatypes on the send side and on the receive side (sub-test "dtype",
 * contract in mpit.h). Ring exchange (MPI_Sendrecv to the right, from the left) of:
 *   - vector: 2 doubles every kCols of a kRows x kCols matrix (1.6 MB of data, so the
 *     non-contiguous rendezvous pipeline runs) against contiguous doubles, both directions;
 *   - indexed: blocks {3,1,4,1,5} at {0,5,7,20,30} ints, repeated kIdxCount times;
 *   - struct: {int; double[3]; char[5]} records (MPI_Type_create_struct) of 2000 entries;
 *   - resized: the double field alone of a {int key; double val} array (struct of one double at
 *     its offset, resized to the record's extent) against contiguous doubles, both directions.
 * Every received element is compared with the sender's value, and every element of the receive
 * buffer that the datatype skips must still hold its poison value. */
#include <stddef.h>
#include <stdlib.h>

#include "mpit.h"

enum { kRows = 100000, kCols = 7, kIdxCount = 64, kRecs = 2000, kPairs = 50000 };
#define POISON (-12345.5)

static double val(int from, long i) {
  return (double)from * 1e7 + (double)i + 0.25;
}

static int right_of(void) {
  return (mpit_rank + 1) % mpit_size;
}
static int left_of(void) {
  return (mpit_rank + mpit_size - 1) % mpit_size;
}

static void exchange(const void* tx, int tx_count, MPI_Datatype tx_type, void* rx, int rx_count,
                     MPI_Datatype rx_type, int tag) {
  MPI_Status st;
  MPI_Sendrecv(tx, tx_count, tx_type, right_of(), tag, rx, rx_count, rx_type, left_of(), tag,
               MPI_COMM_WORLD, &st);
  if (st.MPI_SOURCE != left_of()) mpit_fail("dtype source", st.MPI_SOURCE, left_of());
}

static void vector(void) {
  MPI_Datatype vec;
  MPI_Type_vector(kRows, 2, kCols, MPI_DOUBLE, &vec);
  MPI_Type_commit(&vec);
  double* mat = mpit_alloc(sizeof(double) * kRows * kCols);
  double* flat = mpit_alloc(sizeof(double) * kRows * 2);
  /* Vector on the send side. */
  for (long i = 0; i < (long)kRows * kCols; ++i) mat[i] = val(mpit_rank, i);
  for (long i = 0; i < (long)kRows * 2; ++i) flat[i] = POISON;
  exchange(mat, 1, vec, flat, kRows * 2, MPI_DOUBLE, 800);
  for (long r = 0; r < kRows; ++r)
    for (int c = 0; c < 2; ++c)
      if (flat[r * 2 + c] != val(left_of(), r * kCols + c)) mpit_fail("vector send", r, c);
  /* Vector on the receive side. */
  for (long i = 0; i < (long)kRows * 2; ++i) flat[i] = val(mpit_rank, i);
  for (long i = 0; i < (long)kRows * kCols; ++i) mat[i] = POISON;
  exchange(flat, kRows * 2, MPI_DOUBLE, mat, 1, vec, 801);
  for (long r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) {
      const double want = c < 2 ? val(left_of(), r * 2 + c) : POISON;
      if (mat[r * kCols + c] != want) mpit_fail("vector recv", r, c);
    }
  free(mat);
  free(flat);
  MPI_Type_free(&vec);
}

static void indexed(void) {
  static const int lens[5] = {3, 1, 4, 1, 5};
  static const int displs[5] = {0, 5, 7, 20, 30};
  enum { kSpan = 35, kPer = 14 };
  MPI_Datatype idx;
  MPI_Type_indexed(5, lens, displs, MPI_INT, &idx);
  MPI_Type_commit(&idx);
  MPI_Aint lb, extent;
  MPI_Type_get_extent(idx, &lb, &extent);
  if (lb != 0 || extent != kSpan * (MPI_Aint)sizeof(int))
    mpit_fail("indexed extent", extent, kSpan);
  int* sparse = mpit_alloc(sizeof(int) * kSpan * kIdxCount);
  int* dense = mpit_alloc(sizeof(int) * kPer * kIdxCount);
  char* used = mpit_zalloc(kSpan);
  for (int b = 0; b < 5; ++b)
    for (int k = 0; k < lens[b]; ++k) used[displs[b] + k] = 1;
  for (int i = 0; i < kSpan * kIdxCount; ++i) sparse[i] = mpit_rank * 1000000 + i;
  for (int i = 0; i < kPer * kIdxCount; ++i) dense[i] = -1;
  exchange(sparse, kIdxCount, idx, dense, kPer * kIdxCount, MPI_INT, 802);
  int j = 0;
  for (int i = 0; i < kSpan * kIdxCount; ++i)
    if (used[i % kSpan] && dense[j++] != left_of() * 1000000 + i) mpit_fail("indexed send", i, j);
  for (int i = 0; i < kPer * kIdxCount; ++i) dense[i] = mpit_rank * 1000000 + i;
  for (int i = 0; i < kSpan * kIdxCount; ++i) sparse[i] = -1;
  exchange(dense, kPer * kIdxCount, MPI_INT, sparse, kIdxCount, idx, 803);
  j = 0;
  for (int i = 0; i < kSpan * kIdxCount; ++i) {
    const int want = used[i % kSpan] ? left_of() * 1000000 + j++ : -1;
    if (sparse[i] != want) mpit_fail("indexed recv", i, sparse[i]);
  }
  free(used);
  free(sparse);
  free(dense);
  MPI_Type_free(&idx);
}

struct rec {
  int a;
  double b[3];
  char c[5];
};

static void structs(void) {
  const int lens[3] = {1, 3, 5};
  const MPI_Aint displs[3] = {offsetof(struct rec, a), offsetof(struct rec, b),
                              offsetof(struct rec, c)};
  const MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
  MPI_Datatype st0, st;
  MPI_Type_create_struct(3, lens, displs, types, &st0);
  MPI_Type_create_resized(st0, 0, sizeof(struct rec), &st);
  MPI_Type_commit(&st);
  struct rec* tx = mpit_alloc(sizeof(struct rec) * kRecs);
  struct rec* rx = mpit_alloc(sizeof(struct rec) * kRecs);
  for (int i = 0; i < kRecs; ++i) {
    tx[i].a = mpit_rank * 100000 + i;
    for (int k = 0; k < 3; ++k) tx[i].b[k] = val(mpit_rank, i * 3 + k);
    for (int k = 0; k < 5; ++k) tx[i].c[k] = (char)('a' + (i + k + mpit_rank) % 26);
    rx[i].a = -1;
    for (int k = 0; k < 3; ++k) rx[i].b[k] = POISON;
    for (int k = 0; k < 5; ++k) rx[i].c[k] = 0;
  }
  exchange(tx, kRecs, st, rx, kRecs, st, 804);
  const int l = left_of();
  for (int i = 0; i < kRecs; ++i) {
    if (rx[i].a != l * 100000 + i) mpit_fail("struct int", i, rx[i].a);
    for (int k = 0; k < 3; ++k)
      if (rx[i].b[k] != val(l, i * 3 + k)) mpit_fail("struct double", i, k);
    for (int k = 0; k < 5; ++k)
      if (rx[i].c[k] != (char)('a' + (i + k + l) % 26)) mpit_fail("struct char", i, k);
  }
  free(tx);
  free(rx);
  MPI_Type_free(&st);
  MPI_Type_free(&st0);
}

struct pair {
  int key;
  double v;
};

static void resized(void) {
  const int one = 1;
  const MPI_Aint at = offsetof(struct pair, v);
  const MPI_Datatype dbl = MPI_DOUBLE;
  MPI_Datatype only_v, t;
  MPI_Type_create_struct(1, &one, &at, &dbl, &only_v);
  MPI_Type_create_resized(only_v, 0, sizeof(struct pair), &t);
  MPI_Type_commit(&t);
  struct pair* pairs = mpit_alloc(sizeof(struct pair) * kPairs);
  double* flat = mpit_alloc(sizeof(double) * kPairs);
  for (int i = 0; i < kPairs; ++i) {
    pairs[i].key = i;
    pairs[i].v = val(mpit_rank, i);
    flat[i] = POISON;
  }
  exchange(pairs, kPairs, t, flat, kPairs, MPI_DOUBLE, 805);
  for (int i = 0; i < kPairs; ++i)
    if (flat[i] != val(left_of(), i)) mpit_fail("resized send", i, 0);
  for (int i = 0; i < kPairs; ++i) {
    flat[i] = val(mpit_rank, -i);
    pairs[i].key = -7;
    pairs[i].v = POISON;
  }
  exchange(flat, kPairs, MPI_DOUBLE, pairs, kPairs, t, 806);
  for (int i = 0; i < kPairs; ++i) {
    if (pairs[i].v != val(left_of(), -i)) mpit_fail("resized recv", i, 0);
    if (pairs[i].key != -7) mpit_fail("resized recv wrote outside the field", i, pairs[i].key);
  }
  free(pairs);
  free(flat);
  MPI_Type_free(&t);
  MPI_Type_free(&only_v);
}

void mpit_dtype(void) {
  vector();
  indexed();
  structs();
  resized();
}
