/*
 * osc/iwarpx Put/Get with non-contiguous (derived) datatypes: both sides are flattened into
 * (address, length) segments in type-map order with opal_convertor_raw (the target side over
 * the target's window addresses, never dereferenced here), every target segment is checked
 * against the target's window before anything is posted (MPI_ERR_RMA_RANGE, nothing sent),
 * then the two lists are walked in lockstep, one fi_write/fi_read per overlapping piece.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stdlib.h>
#include <sys/uio.h>

#include "ompi/datatype/ompi_datatype.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

#define OSC_IWX_RAW_BATCH 64

typedef osc_iwarpx_segs_t seg_list_t;

static int seg_push(seg_list_t* l, const struct iovec* iov, uint32_t n) {
  if (l->n + n > l->cap) {
    size_t cap = l->cap == 0 ? OSC_IWX_RAW_BATCH : l->cap * 2;
    while (cap < l->n + n) cap *= 2;
    struct iovec* v = realloc(l->v, cap * sizeof(*v));
    if (v == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    l->v = v;
    l->cap = cap;
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (iov[i].iov_len == 0) continue;
    l->v[l->n++] = iov[i];
    l->bytes += iov[i].iov_len;
  }
  return OMPI_SUCCESS;
}

int osc_iwarpx_flatten(struct ompi_datatype_t* dt, int count, const void* base,
                       osc_iwarpx_segs_t* out) {
  opal_convertor_t conv;
  OBJ_CONSTRUCT(&conv, opal_convertor_t);
  int rc = opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dt->super,
                                                    (size_t)count, base, 0, &conv);
  for (int done = 0; rc == OMPI_SUCCESS && !done;) {
    struct iovec iov[OSC_IWX_RAW_BATCH];
    uint32_t n = OSC_IWX_RAW_BATCH;
    size_t len = 0;
    done = opal_convertor_raw(&conv, iov, &n, &len);
    rc = seg_push(out, iov, n);
  }
  OBJ_DESTRUCT(&conv);
  return rc;
}

int osc_iwarpx_rma_noncontig(osc_iwarpx_module_t* m, bool write, const void* origin, int ocount,
                             struct ompi_datatype_t* odt, int target, ptrdiff_t disp, int tcount,
                             struct ompi_datatype_t* tdt, osc_iwarpx_request_t* req,
                             size_t* bytes) {
  osc_iwarpx_target_t* t = &m->targets[target];
  uint64_t start = 0;
  if (osc_iwarpx_target_addr(m, target, disp, &start) != OMPI_SUCCESS) return OMPI_ERR_RMA_RANGE;
  seg_list_t o = {0}, r = {0};
  int rc = osc_iwarpx_flatten(odt, ocount, origin, &o);
  if (rc == OMPI_SUCCESS) {
    rc = osc_iwarpx_flatten(tdt, tcount, (const void*)(uintptr_t)start, &r);
  }
  if (rc == OMPI_SUCCESS && o.bytes != r.bytes) {
    opal_output_verbose(1, mca_osc_iwarpx_component.output,
                        "osc:iwarpx: rank %d -> %d: origin (%zu bytes) and target (%zu bytes) "
                        "datatypes differ in size",
                        m->rank, target, o.bytes, r.bytes);
    rc = OMPI_ERR_BAD_PARAM;
  }
  /* Every target segment is checked (and its remote memory found) before anything is posted. */
  osc_iwarpx_rwin_t* rw = rc == OMPI_SUCCESS ? calloc(r.n > 0 ? r.n : 1, sizeof(*rw)) : NULL;
  if (rc == OMPI_SUCCESS && rw == NULL) rc = OMPI_ERR_OUT_OF_RESOURCE;
  for (size_t i = 0; rc == OMPI_SUCCESS && i < r.n; ++i) {
    rc = osc_iwarpx_remote_range(m, target, (uint64_t)(uintptr_t)r.v[i].iov_base, r.v[i].iov_len,
                                 &rw[i]);
  }
  /* Lockstep walk: one operation per overlap of an origin and a target segment. */
  size_t oi = 0, ri = 0, oo = 0, ro = 0;
  while (rc == OMPI_SUCCESS && oi < o.n && ri < r.n) {
    const size_t olen = o.v[oi].iov_len - oo, rlen = r.v[ri].iov_len - ro;
    const size_t len = olen < rlen ? olen : rlen;
    rc = osc_iwarpx_post_rma_key(m, t, write, (char*)o.v[oi].iov_base + oo,
                                 (uint64_t)(uintptr_t)r.v[ri].iov_base + ro, len, &rw[ri], req);
    oo += len;
    ro += len;
    if (oo == o.v[oi].iov_len) ++oi, oo = 0;
    if (ro == r.v[ri].iov_len) ++ri, ro = 0;
  }
  *bytes = o.bytes;
  free(rw);
  free(o.v);
  free(r.v);
  return rc;
}
