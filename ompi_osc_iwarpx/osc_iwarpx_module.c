/*
 * osc/iwarpx module template (copied into every window's module) and the calls this
 * increment does not implement (shared query): each returns
 * MPI_ERR_UNSUPPORTED_OPERATION (an MPI code is passed through unchanged by the MPI layer;
 * OMPI_ERR_NOT_SUPPORTED would map to MPI_ERR_INTERN) with a log line at verbosity 1. See
 * README.md's status table.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include "opal/util/output.h"
#include "osc_iwarpx.h"

static int unsupported(struct ompi_win_t* win, const char* call) {
  const osc_iwarpx_module_t* m = (const osc_iwarpx_module_t*)win->w_osc_module;
  opal_output_verbose(1, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: rank %d: %s is not supported by this version of osc iwarpx",
                      m != NULL ? m->rank : -1, call);
  return MPI_ERR_UNSUPPORTED_OPERATION;
}

static int shared_query(struct ompi_win_t* win, int rank, size_t* size, int* disp_unit,
                        void* baseptr) {
  (void)rank;
  (void)size;
  (void)disp_unit;
  (void)baseptr;
  return unsupported(win, "MPI_Win_shared_query");
}

const ompi_osc_base_module_t osc_iwarpx_module_template = {
    .osc_win_shared_query = shared_query,
    .osc_win_attach = osc_iwarpx_dyn_attach,
    .osc_win_detach = osc_iwarpx_dyn_detach,
    .osc_free = osc_iwarpx_free,
    .osc_put = osc_iwarpx_put,
    .osc_get = osc_iwarpx_get,
    .osc_accumulate = osc_iwarpx_accumulate,
    .osc_compare_and_swap = osc_iwarpx_compare_and_swap,
    .osc_fetch_and_op = osc_iwarpx_fetch_and_op,
    .osc_get_accumulate = osc_iwarpx_get_accumulate,
    .osc_rput = osc_iwarpx_rput,
    .osc_rget = osc_iwarpx_rget,
    .osc_raccumulate = osc_iwarpx_raccumulate,
    .osc_rget_accumulate = osc_iwarpx_rget_accumulate,
    .osc_fence = osc_iwarpx_fence,
    .osc_start = osc_iwarpx_start,
    .osc_complete = osc_iwarpx_complete,
    .osc_post = osc_iwarpx_post,
    .osc_wait = osc_iwarpx_wait,
    .osc_test = osc_iwarpx_test,
    .osc_lock = osc_iwarpx_lock,
    .osc_unlock = osc_iwarpx_unlock,
    .osc_lock_all = osc_iwarpx_lock_all,
    .osc_unlock_all = osc_iwarpx_unlock_all,
    .osc_sync = osc_iwarpx_sync,
    .osc_flush = osc_iwarpx_flush,
    .osc_flush_all = osc_iwarpx_flush_all,
    .osc_flush_local = osc_iwarpx_flush,
    .osc_flush_local_all = osc_iwarpx_flush_all,
};
