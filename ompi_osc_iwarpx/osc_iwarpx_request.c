/*
 * osc/iwarpx requests of the request-based RMA calls (MPI_Rput, MPI_Rget, MPI_Raccumulate,
 * MPI_Rget_accumulate). A request counts its posted operations in `pending`, plus a guard
 * held while the call is still posting; it completes (ompi_request_complete) when the count
 * drops to 0 in osc_iwarpx_progress. Freeing an active request waits for its operations.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include "opal/runtime/opal_progress.h"
#include "osc_iwarpx.h"

OBJ_CLASS_INSTANCE(osc_iwarpx_request_t, ompi_request_t, NULL, NULL);

static int request_free(struct ompi_request_t** rptr) {
  osc_iwarpx_request_t* r = (osc_iwarpx_request_t*)*rptr;
  /* MPI_Request_free of an active request: its operations still reference it. */
  while (r->pending > 0) opal_progress();
  OMPI_REQUEST_FINI(&r->super);
  OBJ_RELEASE(r);
  *rptr = MPI_REQUEST_NULL;
  return OMPI_SUCCESS;
}

static int request_cancel(struct ompi_request_t* request, int complete) {
  (void)request;
  (void)complete;
  return OMPI_SUCCESS; /* RMA requests cannot be cancelled; MPI_Wait still completes them */
}

osc_iwarpx_request_t* osc_iwarpx_request_new(void) {
  osc_iwarpx_request_t* r = OBJ_NEW(osc_iwarpx_request_t);
  if (r == NULL) return NULL;
  OMPI_REQUEST_INIT(&r->super, false);
  r->super.req_type = OMPI_REQUEST_WIN;
  r->super.req_state = OMPI_REQUEST_ACTIVE;
  r->super.req_free = request_free;
  r->super.req_cancel = request_cancel;
  r->super.req_status.MPI_SOURCE = MPI_ANY_SOURCE;
  r->super.req_status.MPI_TAG = MPI_ANY_TAG;
  r->super.req_status.MPI_ERROR = MPI_SUCCESS;
  r->super.req_status._cancelled = 0;
  r->super.req_status._ucount = 0;
  r->pending = 1; /* guard held while posting */
  return r;
}

static void request_release_guard(osc_iwarpx_request_t* r) {
  if (OPAL_THREAD_ADD_FETCH32(&r->pending, -1) == 0) ompi_request_complete(&r->super, true);
}

int osc_iwarpx_request_finish(osc_iwarpx_request_t* req, int rc, struct ompi_request_t** out) {
  if (req == NULL) return rc;
  request_release_guard(req);
  if (rc != OMPI_SUCCESS) {
    /* Operations already posted still reference req: request_free waits for them. */
    struct ompi_request_t* tmp = &req->super;
    (void)request_free(&tmp);
    return rc;
  }
  *out = &req->super;
  return rc;
}
