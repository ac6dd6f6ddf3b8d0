/*
 * osc/iwarpx accumulate family on the provider's remote atomics (one fi_atomic per element):
 *   MPI_Accumulate / MPI_Raccumulate          MPI_SUM -> FI_SUM, MPI_REPLACE -> FI_ATOMIC_WRITE
 *                                             (MPI_NO_OP: nothing to do)
 *   MPI_Get_accumulate / MPI_Rget_accumulate  the same, fetching; MPI_NO_OP -> FI_ATOMIC_READ
 *   MPI_Fetch_and_op                          one element of the above
 *   MPI_Compare_and_swap                      FI_CSWAP
 * for 32- and 64-bit integer types with the same datatype at origin, target (and result),
 * naturally aligned at the target. Anything else (other ops, floating point, MAXLOC,
 * derived or mixed types, unaligned targets) returns MPI_ERR_UNSUPPORTED_OPERATION with a log
 * line; a general path is the next increment. Element-wise atomicity holds among all these
 * calls because every access to the target goes through the target's RDMA engine; accumulates
 * from one origin to one target travel one ordered stream.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <rdma/fi_atomic.h>

#include "ompi/datatype/ompi_datatype.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

static int unsupported(osc_iwarpx_module_t* m, const char* call, const char* why, int target) {
  opal_output_verbose(1, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: rank %d -> %d: %s: %s (not supported in this version)", m->rank,
                      target, call, why);
  return MPI_ERR_UNSUPPORTED_OPERATION;
}

/* 32/64-bit integer predefined types -> provider datatype and element size. */
static bool amo_type(struct ompi_datatype_t* dt, enum fi_datatype* out, size_t* size) {
  struct ompi_datatype_t* const i32[] = {MPI_INT32_T, MPI_UINT32_T, MPI_INT, MPI_UNSIGNED};
  struct ompi_datatype_t* const i64[] = {MPI_INT64_T,       MPI_UINT64_T,
                                         MPI_LONG,          MPI_UNSIGNED_LONG,
                                         MPI_LONG_LONG_INT, MPI_UNSIGNED_LONG_LONG};
  for (size_t i = 0; i < sizeof(i32) / sizeof(i32[0]); ++i) {
    if (dt == i32[i]) {
      *out = FI_UINT32;
      *size = 4;
      return true;
    }
  }
  for (size_t i = 0; i < sizeof(i64) / sizeof(i64[0]); ++i) {
    if (dt == i64[i]) {
      *out = FI_UINT64;
      *size = 8;
      return true;
    }
  }
  return false;
}

/* MPI op -> provider op; fetching says whether MPI_NO_OP (a read) is meaningful. */
static bool amo_op(struct ompi_op_t* op, bool fetching, enum fi_op* out) {
  if (op == MPI_SUM) {
    *out = FI_SUM;
  } else if (op == MPI_REPLACE) {
    *out = FI_ATOMIC_WRITE;
  } else if (op == MPI_NO_OP && fetching) {
    *out = FI_ATOMIC_READ;
  } else {
    return false;
  }
  return true;
}

/* The common body: validate, then one atomic per element. result NULL: not fetching. */
static int accumulate_common(const char* call, const void* origin, int ocount,
                             struct ompi_datatype_t* odt, void* result, int rcount,
                             struct ompi_datatype_t* rdt, int target, ptrdiff_t disp, int tcount,
                             struct ompi_datatype_t* tdt, struct ompi_op_t* op,
                             struct ompi_win_t* win, struct ompi_request_t** request) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  const bool fetching = result != NULL;
  if (op == MPI_NO_OP && !fetching) return OMPI_SUCCESS; /* MPI_Accumulate(MPI_NO_OP): no-op */
  const bool noop = op == MPI_NO_OP;
  /* MPI_NO_OP ignores the origin buffer: validate the access against the result buffer. */
  const void* vbuf = noop ? result : origin;
  const int vcount = noop ? rcount : ocount;
  struct ompi_datatype_t* vdt = noop ? rdt : odt;
  char* local = NULL;
  uint64_t remote = 0;
  size_t bytes = 0;
  osc_iwarpx_rwin_t rw = {0};
  int rc = osc_iwarpx_resolve(m, vbuf, vcount, vdt, target, disp, tcount, tdt, &local, &remote,
                              &bytes, &rw);
  if (rc != OMPI_SUCCESS) return rc;
  enum fi_datatype fdt = FI_UINT64;
  size_t esize = 0;
  enum fi_op fop = FI_SUM;
  if (vdt != tdt || (fetching && rdt != tdt) || (fetching && rcount != tcount) ||
      !amo_type(tdt, &fdt, &esize)) {
    return unsupported(m, call, "datatype other than one 32/64-bit integer type everywhere",
                       target);
  }
  if (!amo_op(op, fetching, &fop)) {
    return unsupported(m, call, "operation other than MPI_SUM, MPI_REPLACE, MPI_NO_OP", target);
  }
  if (remote % esize != 0) return unsupported(m, call, "unaligned target address", target);
  char* res = NULL;
  if (fetching) {
    ptrdiff_t lb = 0, extent = 0;
    (void)ompi_datatype_get_true_extent(rdt, &lb, &extent);
    res = (char*)result + lb;
  }
  const char* src = noop ? NULL : local;
  osc_iwarpx_request_t* req = NULL;
  if (request != NULL) {
    req = osc_iwarpx_request_new();
    if (req == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  }
  osc_iwarpx_target_t* t = &m->targets[target];
  const uint64_t zero = 0;
  for (size_t off = 0; rc == OMPI_SUCCESS && off < bytes; off += esize) {
    const osc_iwarpx_amo_t a = {.op = fop,
                                .datatype = fdt,
                                .remote = remote + off,
                                .region_base = rw.base,
                                .key = rw.key,
                                .operand = src != NULL ? (const void*)(src + off) : &zero,
                                .compare = NULL,
                                .result = res != NULL ? res + off : NULL};
    rc = osc_iwarpx_post_atomic(m, t, &a, req, NULL);
  }
  return osc_iwarpx_request_finish(req, rc, request);
}

int osc_iwarpx_accumulate(const void* origin_addr, int origin_count,
                          struct ompi_datatype_t* origin_dt, int target, ptrdiff_t target_disp,
                          int target_count, struct ompi_datatype_t* target_dt, struct ompi_op_t* op,
                          struct ompi_win_t* win) {
  return accumulate_common("MPI_Accumulate", origin_addr, origin_count, origin_dt, NULL, 0, NULL,
                           target, target_disp, target_count, target_dt, op, win, NULL);
}

int osc_iwarpx_raccumulate(const void* origin_addr, int origin_count,
                           struct ompi_datatype_t* origin_dt, int target, ptrdiff_t target_disp,
                           int target_count, struct ompi_datatype_t* target_dt,
                           struct ompi_op_t* op, struct ompi_win_t* win,
                           struct ompi_request_t** request) {
  return accumulate_common("MPI_Raccumulate", origin_addr, origin_count, origin_dt, NULL, 0, NULL,
                           target, target_disp, target_count, target_dt, op, win, request);
}

int osc_iwarpx_get_accumulate(const void* origin_addr, int origin_count,
                              struct ompi_datatype_t* origin_dt, void* result_addr,
                              int result_count, struct ompi_datatype_t* result_dt, int target,
                              ptrdiff_t target_disp, int target_count,
                              struct ompi_datatype_t* target_dt, struct ompi_op_t* op,
                              struct ompi_win_t* win) {
  return accumulate_common("MPI_Get_accumulate", origin_addr, origin_count, origin_dt, result_addr,
                           result_count, result_dt, target, target_disp, target_count, target_dt,
                           op, win, NULL);
}

int osc_iwarpx_rget_accumulate(const void* origin_addr, int origin_count,
                               struct ompi_datatype_t* origin_dt, void* result_addr,
                               int result_count, struct ompi_datatype_t* result_dt, int target,
                               ptrdiff_t target_disp, int target_count,
                               struct ompi_datatype_t* target_dt, struct ompi_op_t* op,
                               struct ompi_win_t* win, struct ompi_request_t** request) {
  return accumulate_common("MPI_Rget_accumulate", origin_addr, origin_count, origin_dt, result_addr,
                           result_count, result_dt, target, target_disp, target_count, target_dt,
                           op, win, request);
}

int osc_iwarpx_fetch_and_op(const void* origin_addr, void* result_addr, struct ompi_datatype_t* dt,
                            int target, ptrdiff_t target_disp, struct ompi_op_t* op,
                            struct ompi_win_t* win) {
  return accumulate_common("MPI_Fetch_and_op", origin_addr, 1, dt, result_addr, 1, dt, target,
                           target_disp, 1, dt, op, win, NULL);
}

int osc_iwarpx_compare_and_swap(const void* origin_addr, const void* compare_addr,
                                void* result_addr, struct ompi_datatype_t* dt, int target,
                                ptrdiff_t target_disp, struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  char* local = NULL;
  uint64_t remote = 0;
  size_t bytes = 0;
  osc_iwarpx_rwin_t rw = {0};
  int rc = osc_iwarpx_resolve(m, origin_addr, 1, dt, target, target_disp, 1, dt, &local, &remote,
                              &bytes, &rw);
  if (rc != OMPI_SUCCESS) return rc;
  enum fi_datatype fdt = FI_UINT64;
  size_t esize = 0;
  if (!amo_type(dt, &fdt, &esize)) {
    return unsupported(m, "MPI_Compare_and_swap", "datatype other than a 32/64-bit integer",
                       target);
  }
  if (remote % esize != 0) {
    return unsupported(m, "MPI_Compare_and_swap", "unaligned target address", target);
  }
  osc_iwarpx_target_t* t = &m->targets[target];
  const osc_iwarpx_amo_t a = {.op = FI_CSWAP,
                              .datatype = fdt,
                              .remote = remote,
                              .region_base = rw.base,
                              .key = rw.key,
                              .operand = local,
                              .compare = compare_addr,
                              .result = result_addr};
  return osc_iwarpx_post_atomic(m, t, &a, NULL, NULL);
}
