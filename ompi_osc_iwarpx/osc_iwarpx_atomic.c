/*
 * osc/iwarpx accumulate family (MPI_Accumulate, MPI_Raccumulate, MPI_Get_accumulate,
 * MPI_Rget_accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap). Origin, target (and result)
 * must be built of one predefined type (any derived type of it: non-contiguous ones, pair
 * types with holes such as a vector of MPI_DOUBLE_INT included, go through
 * osc_iwarpx_acc_dtype.c); a mix of predefined types is MPI_ERR_UNSUPPORTED_OPERATION, an op
 * Open MPI does not define on the type MPI_ERR_OP. The path is a function of the element type and
 * target address only, so every access to one element of one basic type takes the same kind of path
 * (MPI's atomicity rule: same op or MPI_NO_OP, same basic type):
 *  - native (one remote atomic per element, non-blocking): elements of 4 or 8 bytes, aligned:
 *    MPI_REPLACE -> FI_ATOMIC_WRITE, MPI_NO_OP -> FI_ATOMIC_READ, MPI_Compare_and_swap ->
 *    FI_CSWAP for any such type; MPI_SUM/MPI_BAND/MPI_BOR/MPI_BXOR -> FI_SUM/FI_BAND/FI_BOR/
 *    FI_BXOR on 32/64-bit integer types when fi_query_atomic says the provider has them;
 *  - CAS loop (osc_iwarpx_acc_general.c): every other op on those elements (floating point,
 *    MIN/MAX/PROD, logical ops, BXOR, MAXLOC/MINLOC on MPI_2INT/MPI_FLOAT_INT, ...); atomic
 *    against the native ones since both are remote atomics on the same word;
 *  - locked (osc_iwarpx_acc_general.c): elements of any other size or alignment (1/2-byte
 *    types, long double, MPI_DOUBLE_INT, ...): every op under the target's accumulate lock.
 * Native accumulates from one origin to one target travel one ordered stream; the blocking
 * paths first wait for our earlier operations to that target (accumulate_ordering).
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stdlib.h>

#include <rdma/fi_atomic.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"
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

/* MPI op -> provider op on integers, if the provider offers it (fabric->native_ops;
 * MPI_REPLACE/MPI_NO_OP are handled apart). */
static bool amo_op(struct ompi_op_t* op, enum fi_op* out) {
  if (op == MPI_SUM) {
    *out = FI_SUM;
  } else if (op == MPI_BAND) {
    *out = FI_BAND;
  } else if (op == MPI_BOR) {
    *out = FI_BOR;
  } else if (op == MPI_BXOR) {
    *out = FI_BXOR;
  } else {
    return false;
  }
  return (mca_osc_iwarpx_component.fabric->native_ops & (1u << *out)) != 0;
}

/* The predefined type a datatype is built of (itself if predefined), NULL if several. */
static struct ompi_datatype_t* basic_of(struct ompi_datatype_t* dt) {
  if (ompi_datatype_is_predefined(dt)) return dt;
  return ompi_datatype_get_single_predefined_type_from_args(dt);
}

/* MPI_NO_OP / MPI_REPLACE are defined on every type; other ops only where Open MPI has the
 * reduction (MPI_ERR_OP otherwise, e.g. MPI_MAXLOC on MPI_DOUBLE). */
static int check_op(osc_iwarpx_module_t* m, const char* call, struct ompi_op_t* op,
                    struct ompi_datatype_t* basic, int target) {
  if (op == MPI_NO_OP || op == MPI_REPLACE) return OMPI_SUCCESS;
  char* msg = NULL;
  if (ompi_op_is_intrinsic(op) && ompi_op_is_valid(op, basic, &msg, call)) return OMPI_SUCCESS;
  opal_output_verbose(1, mca_osc_iwarpx_component.output, "osc:iwarpx: rank %d -> %d: %s", m->rank,
                      target, msg != NULL ? msg : "operation not allowed in RMA");
  free(msg);
  return MPI_ERR_OP;
}

/* Which path serves this access (see the file comment). */
typedef enum { PATH_NATIVE, PATH_CAS, PATH_LOCKED } acc_path_t;
static acc_path_t choose_path(struct ompi_op_t* op, struct ompi_datatype_t* basic, uint64_t remote,
                              bool packed, enum fi_op* fop) {
  size_t es = 0;
  ptrdiff_t lb = 0, ext = 0;
  (void)ompi_datatype_type_size(basic, &es);
  (void)ompi_datatype_get_extent(basic, &lb, &ext);
  if (!packed || (es != 4 && es != 8) || (size_t)ext != es || remote % es != 0) return PATH_LOCKED;
  enum fi_datatype fdt = FI_UINT64;
  size_t isize = 0;
  const bool integer = amo_type(basic, &fdt, &isize);
  if (op == MPI_REPLACE) {
    *fop = FI_ATOMIC_WRITE;
  } else if (op == MPI_NO_OP) {
    *fop = FI_ATOMIC_READ;
  } else if (integer && amo_op(op, fop)) {
    return PATH_NATIVE;
  } else {
    return PATH_CAS;
  }
  return PATH_NATIVE;
}

/* The common body: validate, choose the path, run it. result NULL: not fetching. */
static int accumulate_common(const char* call, const void* origin, int ocount,
                             struct ompi_datatype_t* odt, void* result, int rcount,
                             struct ompi_datatype_t* rdt, int target, ptrdiff_t disp, int tcount,
                             struct ompi_datatype_t* tdt, struct ompi_op_t* op,
                             struct ompi_win_t* win, struct ompi_request_t** request) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  const bool fetching = result != NULL;
  if (op == MPI_NO_OP && !fetching) { /* MPI_(R)accumulate(MPI_NO_OP): nothing to do */
    if (request == NULL) return OMPI_SUCCESS;
    osc_iwarpx_request_t* req = osc_iwarpx_request_new(); /* completes in finish */
    return req != NULL ? osc_iwarpx_request_finish(req, OMPI_SUCCESS, request)
                       : OMPI_ERR_OUT_OF_RESOURCE;
  }
  const bool noop = op == MPI_NO_OP;
  /* MPI_NO_OP ignores the origin buffer: validate the access against the result buffer. */
  const void* vbuf = noop ? result : origin;
  const int vcount = noop ? rcount : ocount;
  struct ompi_datatype_t* vdt = noop ? rdt : odt;
  const bool contiguous = ompi_datatype_is_contiguous_memory_layout(tdt, tcount) &&
                          ompi_datatype_is_contiguous_memory_layout(vdt, vcount) &&
                          (!fetching || ompi_datatype_is_contiguous_memory_layout(rdt, rcount));
  const bool same_predefined = ompi_datatype_is_predefined(tdt) && vdt == tdt && vcount == tcount &&
                               (!fetching || (rdt == tdt && rcount == tcount));
  if (!contiguous && !same_predefined) {
    struct ompi_datatype_t* basic = basic_of(tdt);
    if (basic == NULL || basic_of(vdt) != basic || (fetching && basic_of(rdt) != basic)) {
      return unsupported(m, call, "origin, target and result must be built of one predefined type",
                         target);
    }
    int rc = osc_iwarpx_check_access(m, target, vcount, tcount);
    if (rc == OMPI_SUCCESS) rc = check_op(m, call, op, basic, target);
    if (rc != OMPI_SUCCESS) return rc;
    osc_iwarpx_request_t* req = NULL;
    if (request != NULL) {
      req = osc_iwarpx_request_new();
      if (req == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    }
    const osc_iwarpx_acc_args_t args = {.origin = noop ? NULL : origin,
                                        .ocount = ocount,
                                        .odt = odt,
                                        .result = result,
                                        .rcount = rcount,
                                        .rdt = rdt,
                                        .target = target,
                                        .disp = disp,
                                        .tcount = tcount,
                                        .tdt = tdt,
                                        .op = op,
                                        .basic = basic};
    rc = osc_iwarpx_acc_noncontig(m, &args);
    return osc_iwarpx_request_finish(req, rc, request);
  }
  char* local = NULL;
  uint64_t remote = 0;
  size_t bytes = 0;
  osc_iwarpx_rwin_t rw = {0};
  int rc = osc_iwarpx_resolve(m, vbuf, vcount, vdt, target, disp, tcount, tdt, &local, &remote,
                              &bytes, &rw);
  if (rc != OMPI_SUCCESS) return rc;
  struct ompi_datatype_t* basic = basic_of(tdt);
  if (basic == NULL || basic_of(vdt) != basic || (fetching && basic_of(rdt) != basic)) {
    return unsupported(m, call, "origin, target and result must be built of one predefined type",
                       target);
  }
  const bool packed = ompi_datatype_is_contiguous_memory_layout(tdt, tcount) &&
                      ompi_datatype_is_contiguous_memory_layout(vdt, vcount);
  if (fetching && (packed ? !ompi_datatype_is_contiguous_memory_layout(rdt, rcount) ||
                                osc_iwarpx_span(rdt, rcount) != bytes
                          : rdt != tdt || rcount != tcount)) {
    return unsupported(m, call, "result buffer layout differs from the target's", target);
  }
  rc = check_op(m, call, op, basic, target);
  if (rc != OMPI_SUCCESS) return rc;
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
  size_t es = 0;
  (void)ompi_datatype_type_size(basic, &es);
  const osc_iwarpx_acc_t a = {.op = op,
                              .dt = packed ? basic : tdt,
                              .count = packed ? bytes / es : (size_t)tcount,
                              .span = osc_iwarpx_span(tdt, tcount),
                              .origin = src,
                              .compare = NULL,
                              .result = res,
                              .remote = remote,
                              .rw = rw};
  rc = osc_iwarpx_acc_run(m, &m->targets[target], &a, packed, req);
  return osc_iwarpx_request_finish(req, rc, request);
}

int osc_iwarpx_acc_run(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, const osc_iwarpx_acc_t* a,
                       bool packed, osc_iwarpx_request_t* req) {
  enum fi_op fop = FI_SUM;
  const acc_path_t path = choose_path(a->op, a->dt, a->remote, packed, &fop);
  if (path == PATH_NATIVE) {
    size_t es = 0;
    (void)ompi_datatype_type_size(a->dt, &es);
    const enum fi_datatype fdt = es == 4 ? FI_UINT32 : FI_UINT64;
    const uint64_t zero = 0;
    const char* src = a->origin;
    char* res = a->result;
    int rc = OMPI_SUCCESS;
    for (size_t off = 0; rc == OMPI_SUCCESS && off < a->span; off += es) {
      const osc_iwarpx_amo_t amo = {.op = fop,
                                    .datatype = fdt,
                                    .remote = a->remote + off,
                                    .region_base = a->rw.base,
                                    .key = a->rw.key,
                                    .operand = src != NULL ? (const void*)(src + off) : &zero,
                                    .compare = NULL,
                                    .result = res != NULL ? res + off : NULL};
      rc = osc_iwarpx_post_atomic(m, t, &amo, req, NULL);
    }
    return rc;
  }
  /* General path: blocking, after our earlier operations to this target (ordering; not with
   * accumulate_ordering=none). */
  if (!m->acc_unordered) osc_iwarpx_wait_target(m, t);
  return path == PATH_CAS ? osc_iwarpx_acc_cas(m, t, a) : osc_iwarpx_acc_locked(m, t, a);
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
  if (!ompi_datatype_is_predefined(dt)) {
    return unsupported(m, "MPI_Compare_and_swap", "derived datatype", target);
  }
  osc_iwarpx_target_t* t = &m->targets[target];
  enum fi_op fop = FI_SUM;
  if (choose_path(MPI_REPLACE, dt, remote, true, &fop) == PATH_NATIVE) {
    /* 4/8-byte element: the provider compares and swaps the bits. */
    const osc_iwarpx_amo_t a = {.op = FI_CSWAP,
                                .datatype = bytes == 4 ? FI_UINT32 : FI_UINT64,
                                .remote = remote,
                                .region_base = rw.base,
                                .key = rw.key,
                                .operand = local,
                                .compare = compare_addr,
                                .result = result_addr};
    return osc_iwarpx_post_atomic(m, t, &a, NULL, NULL);
  }
  if (!m->acc_unordered) osc_iwarpx_wait_target(m, t);
  const osc_iwarpx_acc_t a = {.op = MPI_REPLACE,
                              .dt = dt,
                              .count = 1,
                              .span = osc_iwarpx_span(dt, 1),
                              .origin = local,
                              .compare = compare_addr,
                              .result = result_addr,
                              .remote = remote,
                              .rw = rw};
  return osc_iwarpx_acc_locked(m, t, &a);
}
