/*
 * osc/iwarpx blocking helpers for protocols that need an answer before going on (dynamic
 * windows' region table, the general accumulate path): one remote atomic, or RMA transfers
 * (one, or one per segment of a list, all in flight at once), posted and waited for (driving
 * opal_progress). Writes made this way complete LOCALLY (the buffer may be reused); they count
 * in the target's `unflushed`, and any later read or atomic of ours to that target is served
 * only after they are placed (one ordered stream; RDMAP queues Read and Atomic Requests behind
 * earlier writes), which is how a caller makes them remote (the general accumulate path: its
 * lock release). They count in the target's `outstanding` like every other operation. A failed
 * completion is OMPI_ERROR.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"
#include "osc_iwarpx.h"

int osc_iwarpx_amo_sync(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, const osc_iwarpx_amo_t* a) {
  volatile int done = 0;
  const int rc = osc_iwarpx_post_atomic(m, t, a, NULL, &done);
  if (rc != OMPI_SUCCESS) return rc;
  while (done == 0) opal_progress();
  return done > 0 ? OMPI_SUCCESS : OMPI_ERROR;
}

int osc_iwarpx_rma_segs_sync(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, bool write,
                             char* local, uint64_t remote, const osc_iwarpx_segs_t* segs,
                             const osc_iwarpx_rwin_t* w) {
  osc_iwarpx_request_t* req = osc_iwarpx_request_new();
  if (req == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  int rc = OMPI_SUCCESS;
  for (size_t i = 0; rc == OMPI_SUCCESS && i < segs->n; ++i) {
    const uint64_t at = (uint64_t)(uintptr_t)segs->v[i].iov_base;
    rc =
        osc_iwarpx_post_rma_key(m, t, write, local + (at - remote), at, segs->v[i].iov_len, w, req);
  }
  struct ompi_request_t* r = NULL;
  rc = osc_iwarpx_request_finish(req, rc, &r);
  if (rc != OMPI_SUCCESS) return rc;
  /* Returns the request's MPI_ERROR (set by a failed completion); the status is not filled. */
  rc = ompi_request_wait(&r, MPI_STATUS_IGNORE);
  return rc == OMPI_SUCCESS ? OMPI_SUCCESS : OMPI_ERROR;
}

int osc_iwarpx_rma_sync(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, bool write, void* local,
                        uint64_t remote, size_t len, const osc_iwarpx_rwin_t* w) {
  struct iovec one = {.iov_base = (void*)(uintptr_t)remote, .iov_len = len};
  const osc_iwarpx_segs_t segs = {.v = &one, .n = 1, .cap = 1, .bytes = len};
  return osc_iwarpx_rma_segs_sync(m, t, write, local, remote, &segs, w);
}
