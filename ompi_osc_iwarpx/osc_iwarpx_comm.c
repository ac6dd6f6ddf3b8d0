/*
 * osc/iwarpx communication calls: MPI_Put/MPI_Get/MPI_Rput/MPI_Rget as fi_write/fi_read
 * straight into / out of the target's registered window; contiguous datatypes here (one
 * transfer), non-contiguous ones in osc_iwarpx_dtype.c (one transfer per segment overlap).
 * Checks, in this order, each with a log line at verbosity 1 and nothing sent on failure:
 *   target rank valid (OMPI_ERR_RMA_RANGE), an access epoch covers the target
 *   (OMPI_ERR_RMA_SYNC), origin and target byte counts equal (OMPI_ERR_BAD_PARAM), the target
 *   range inside the target's window or one of its attached regions (dynamic windows,
 *   osc_iwarpx_range.c) (OMPI_ERR_RMA_RANGE). osc_iwarpx_resolve (also used by the
 *   accumulate calls) rejects non-contiguous datatypes (MPI_ERR_UNSUPPORTED_OPERATION).
 * Rput/Rget requests complete when every chunk has completed: an Rput's writes locally (MPI's
 * rule for Rput; a flush, unlock, fence or complete makes them remote), an Rget's reads at their
 * response.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include "ompi/datatype/ompi_datatype.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

static int reject(osc_iwarpx_module_t* m, int rc, const char* why, int target) {
  opal_output_verbose(1, mca_osc_iwarpx_component.output, "osc:iwarpx: rank %d -> %d: %s", m->rank,
                      target, why);
  return rc;
}

static int check_access(osc_iwarpx_module_t* m, int target, int ocount, int tcount) {
  if (target < 0 || target >= m->size) {
    return reject(m, OMPI_ERR_RMA_RANGE, "target rank outside the window's group", target);
  }
  if (!osc_iwarpx_epoch_covers(m, target)) {
    return reject(m, OMPI_ERR_RMA_SYNC,
                  "no access epoch (fence/start/lock/lock_all) covers the target", target);
  }
  if (ocount < 0 || tcount < 0) return reject(m, OMPI_ERR_BAD_PARAM, "negative count", target);
  return OMPI_SUCCESS;
}

int osc_iwarpx_check_access(osc_iwarpx_module_t* m, int target, int ocount, int tcount) {
  return check_access(m, target, ocount, tcount);
}

int osc_iwarpx_resolve(osc_iwarpx_module_t* m, const void* origin, int ocount,
                       struct ompi_datatype_t* odt, int target, ptrdiff_t disp, int tcount,
                       struct ompi_datatype_t* tdt, char** local, uint64_t* remote, size_t* bytes,
                       osc_iwarpx_rwin_t* rw) {
  int rc = check_access(m, target, ocount, tcount);
  if (rc != OMPI_SUCCESS) return rc;
  /* The one non-contiguous case: the same predefined type on both sides (pair types with
   * holes, e.g. MPI_DOUBLE_INT, for the accumulate family). */
  const bool same_predefined = odt == tdt && ocount == tcount && ompi_datatype_is_predefined(tdt);
  if (!same_predefined && (!ompi_datatype_is_contiguous_memory_layout(odt, ocount) ||
                           !ompi_datatype_is_contiguous_memory_layout(tdt, tcount))) {
    return reject(m, MPI_ERR_UNSUPPORTED_OPERATION,
                  "non-contiguous datatype (not supported in this version)", target);
  }
  size_t osize = 0, tsize = 0;
  (void)ompi_datatype_type_size(odt, &osize);
  (void)ompi_datatype_type_size(tdt, &tsize);
  size_t obytes = 0, tbytes = 0;
  if (__builtin_mul_overflow(osize, (size_t)ocount, &obytes) ||
      __builtin_mul_overflow(tsize, (size_t)tcount, &tbytes) || obytes != tbytes) {
    return reject(m, OMPI_ERR_BAD_PARAM, "origin and target byte counts differ", target);
  }
  ptrdiff_t olb = 0, oext = 0, tlb = 0, text = 0;
  (void)ompi_datatype_get_true_extent(odt, &olb, &oext);
  (void)ompi_datatype_get_true_extent(tdt, &tlb, &text);
  uint64_t addr = 0;
  rc = osc_iwarpx_target_addr(m, target, disp, &addr);
  if (rc == OMPI_SUCCESS && __builtin_add_overflow(addr, (uint64_t)(int64_t)tlb, &addr)) {
    rc = OMPI_ERR_RMA_RANGE;
  }
  if (rc == OMPI_SUCCESS) {
    rc = osc_iwarpx_remote_range(m, target, addr, osc_iwarpx_span(tdt, tcount), rw);
  }
  if (rc != OMPI_SUCCESS) {
    return reject(m, rc, "target range outside the window (see above)", target);
  }
  *local = (char*)(uintptr_t)origin + olb;
  *remote = addr;
  *bytes = tbytes;
  return OMPI_SUCCESS;
}

static int rma(bool write, const void* origin, int ocount, struct ompi_datatype_t* odt, int target,
               ptrdiff_t disp, int tcount, struct ompi_datatype_t* tdt, struct ompi_win_t* win,
               struct ompi_request_t** request) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  const bool contiguous = ompi_datatype_is_contiguous_memory_layout(odt, ocount) &&
                          ompi_datatype_is_contiguous_memory_layout(tdt, tcount);
  char* local = NULL;
  uint64_t remote = 0;
  size_t bytes = 0;
  osc_iwarpx_rwin_t rw = {0};
  int rc = contiguous ? osc_iwarpx_resolve(m, origin, ocount, odt, target, disp, tcount, tdt,
                                           &local, &remote, &bytes, &rw)
                      : check_access(m, target, ocount, tcount);
  if (rc != OMPI_SUCCESS) return rc;
  osc_iwarpx_request_t* req = NULL;
  if (request != NULL) {
    req = osc_iwarpx_request_new();
    if (req == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  }
  if (!contiguous) {
    rc = osc_iwarpx_rma_noncontig(m, write, origin, ocount, odt, target, disp, tcount, tdt, req,
                                  &bytes);
  } else if (bytes > 0) {
    rc = osc_iwarpx_post_rma_key(m, &m->targets[target], write, local, remote, bytes, &rw, req);
  }
  if (write) {
    m->puts++;
    m->put_bytes += bytes;
  } else {
    m->gets++;
    m->get_bytes += bytes;
  }
  return osc_iwarpx_request_finish(req, rc, request);
}

int osc_iwarpx_put(const void* origin_addr, int origin_count, struct ompi_datatype_t* origin_dt,
                   int target, ptrdiff_t target_disp, int target_count,
                   struct ompi_datatype_t* target_dt, struct ompi_win_t* win) {
  return rma(true, origin_addr, origin_count, origin_dt, target, target_disp, target_count,
             target_dt, win, NULL);
}

int osc_iwarpx_get(void* origin_addr, int origin_count, struct ompi_datatype_t* origin_dt,
                   int target, ptrdiff_t target_disp, int target_count,
                   struct ompi_datatype_t* target_dt, struct ompi_win_t* win) {
  return rma(false, origin_addr, origin_count, origin_dt, target, target_disp, target_count,
             target_dt, win, NULL);
}

int osc_iwarpx_rput(const void* origin_addr, int origin_count, struct ompi_datatype_t* origin_dt,
                    int target, ptrdiff_t target_disp, int target_count,
                    struct ompi_datatype_t* target_dt, struct ompi_win_t* win,
                    struct ompi_request_t** request) {
  return rma(true, origin_addr, origin_count, origin_dt, target, target_disp, target_count,
             target_dt, win, request);
}

int osc_iwarpx_rget(void* origin_addr, int origin_count, struct ompi_datatype_t* origin_dt,
                    int target, ptrdiff_t target_disp, int target_count,
                    struct ompi_datatype_t* target_dt, struct ompi_win_t* win,
                    struct ompi_request_t** request) {
  return rma(false, origin_addr, origin_count, origin_dt, target, target_disp, target_count,
             target_dt, win, request);
}
