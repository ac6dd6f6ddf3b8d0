/*
 * osc/iwarpx accumulate family with non-contiguous derived datatypes (vector, indexed,
 * struct, resized, ... built of one predefined type) at origin, target or result.
 *
 * The target side is flattened into (address, length) segments over the target's memory;
 * every segment must hold whole elements of the basic type and lie inside the window (or one
 * attached region), all checked before anything is sent (MPI_ERR_RMA_RANGE /
 * MPI_ERR_UNSUPPORTED_OPERATION). The origin is packed into a contiguous buffer in type-map
 * order; each target segment is then one run of elements served by osc_iwarpx_acc_run (the
 * same per-type path choice as contiguous accesses, so atomicity per element is unchanged);
 * fetched values land in a packed buffer that is unpacked into the result layout once every
 * run has completed. Blocking: the call returns after remote completion.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

static int reject(osc_iwarpx_module_t* m, int rc, int target, const char* why) {
  opal_output_verbose(1, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: rank %d -> %d: accumulate with derived datatypes: %s", m->rank,
                      target, why);
  return rc;
}

/* Copies between the segments of l and the packed buffer p (to_packed: gather). */
static void copy_segs(const osc_iwarpx_segs_t* l, char* p, bool to_packed) {
  for (size_t i = 0; i < l->n; ++i) {
    if (to_packed) {
      memcpy(p, l->v[i].iov_base, l->v[i].iov_len);
    } else {
      memcpy(l->v[i].iov_base, p, l->v[i].iov_len);
    }
    p += l->v[i].iov_len;
  }
}

/* Posts every run (native ones counted in req), blocking ones done in place. */
static int run_all(osc_iwarpx_module_t* m, const osc_iwarpx_acc_args_t* a,
                   const osc_iwarpx_segs_t* t, const osc_iwarpx_rwin_t* rw, const char* po,
                   char* pr, size_t es, osc_iwarpx_request_t* req) {
  size_t off = 0;
  int rc = OMPI_SUCCESS;
  for (size_t i = 0; rc == OMPI_SUCCESS && i < t->n; ++i) {
    const size_t len = t->v[i].iov_len;
    const osc_iwarpx_acc_t run = {.op = a->op,
                                  .dt = a->basic,
                                  .count = len / es,
                                  .span = len,
                                  .origin = po != NULL ? po + off : NULL,
                                  .compare = NULL,
                                  .result = pr != NULL ? pr + off : NULL,
                                  .remote = (uint64_t)(uintptr_t)t->v[i].iov_base,
                                  .rw = rw[i]};
    rc = osc_iwarpx_acc_run(m, &m->targets[a->target], &run, true, req);
    off += len;
  }
  return rc;
}

int osc_iwarpx_acc_noncontig(osc_iwarpx_module_t* m, const osc_iwarpx_acc_args_t* a) {
  size_t es = 0;
  (void)ompi_datatype_type_size(a->basic, &es);
  uint64_t start = 0;
  if (osc_iwarpx_target_addr(m, a->target, a->disp, &start) != OMPI_SUCCESS) {
    return reject(m, OMPI_ERR_RMA_RANGE, a->target, "displacement out of range");
  }
  osc_iwarpx_segs_t t = {0}, o = {0}, r = {0};
  osc_iwarpx_rwin_t* rw = NULL;
  char *po = NULL, *pr = NULL;
  int rc = osc_iwarpx_flatten(a->tdt, a->tcount, (const void*)(uintptr_t)start, &t);
  if (rc == OMPI_SUCCESS && a->origin != NULL)
    rc = osc_iwarpx_flatten(a->odt, a->ocount, a->origin, &o);
  if (rc == OMPI_SUCCESS && a->result != NULL)
    rc = osc_iwarpx_flatten(a->rdt, a->rcount, a->result, &r);
  if (rc == OMPI_SUCCESS &&
      ((a->origin != NULL && o.bytes != t.bytes) || (a->result != NULL && r.bytes != t.bytes))) {
    rc = reject(m, OMPI_ERR_BAD_PARAM, a->target, "origin, target and result sizes differ");
  }
  if (rc == OMPI_SUCCESS) {
    rw = calloc(t.n > 0 ? t.n : 1, sizeof(*rw));
    po = malloc(t.bytes > 0 ? t.bytes : 1);
    pr = malloc(t.bytes > 0 ? t.bytes : 1);
    if (rw == NULL || po == NULL || pr == NULL) rc = OMPI_ERR_OUT_OF_RESOURCE;
  }
  for (size_t i = 0; rc == OMPI_SUCCESS && i < t.n; ++i) {
    const uint64_t addr = (uint64_t)(uintptr_t)t.v[i].iov_base;
    if (t.v[i].iov_len % es != 0) {
      rc = reject(m, MPI_ERR_UNSUPPORTED_OPERATION, a->target,
                  "a target segment splits an element (pair type inside a derived type)");
    } else {
      rc = osc_iwarpx_remote_range(m, a->target, addr, t.v[i].iov_len, &rw[i]);
    }
  }
  if (rc == OMPI_SUCCESS && a->origin != NULL) copy_segs(&o, po, true);
  if (rc == OMPI_SUCCESS) {
    osc_iwarpx_request_t* req = osc_iwarpx_request_new();
    if (req == NULL) {
      rc = OMPI_ERR_OUT_OF_RESOURCE;
    } else {
      rc = run_all(m, a, &t, rw, a->origin != NULL ? po : NULL, a->result != NULL ? pr : NULL, es,
                   req);
      struct ompi_request_t* done = NULL;
      rc = osc_iwarpx_request_finish(req, rc, &done);
      if (rc == OMPI_SUCCESS) rc = ompi_request_wait(&done, MPI_STATUS_IGNORE);
    }
  }
  if (rc == OMPI_SUCCESS && a->result != NULL) copy_segs(&r, pr, false);
  free(rw);
  free(po);
  free(pr);
  free(t.v);
  free(o.v);
  free(r.v);
  return rc;
}
