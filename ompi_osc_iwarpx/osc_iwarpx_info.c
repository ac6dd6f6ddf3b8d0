/*
 * osc/iwarpx window info keys (MPI_Win_create/allocate/create_dynamic info, MPI_Win_set_info,
 * MPI_Win_get_info). Values are read from the info given at creation and followed through
 * Open MPI's info subscriber, whose callbacks return the value the window really uses (that is
 * what MPI_Win_get_info reports):
 *   no_locks             honoured: "true" makes MPI_Win_lock/lock_all MPI_ERR_RMA_SYNC (the
 *                        program promised not to call them); reported as used.
 *   accumulate_ordering  "none" lets the blocking accumulate paths skip waiting for our earlier
 *                        operations to the target; anything else gets the full default
 *                        ordering, reported as "rar,raw,war,waw".
 *   accumulate_ops       ignored: the accumulate path depends only on the element type and
 *                        address, correct for "same_op" and "same_op_no_op" alike; reported as
 *                        given (default "same_op_no_op").
 *   same_size,           ignored, not subscribed (every rank's size and disp_unit are exchanged
 *   same_disp_unit       anyway): MPI_Win_get_info shows them as the user gave them.
 * Open MPI 4.1's MPI_Win_get_info shows the user's own value of a key whose value a callback
 * changed (opal_info_dup_mpistandard without show_modifications), so e.g. "rar" given for
 * accumulate_ordering reads back as "rar" although the full ordering is kept; keys the user did
 * not give read back as the values in use.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <string.h>

#include "opal/util/info.h"
#include "opal/util/info_subscriber.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

static osc_iwarpx_module_t* module_of(opal_infosubscriber_t* obj) {
  return (osc_iwarpx_module_t*)((struct ompi_win_t*)obj)->w_osc_module;
}

static char* on_no_locks(opal_infosubscriber_t* obj, char* key, char* value) {
  (void)key;
  osc_iwarpx_module_t* m = module_of(obj);
  const bool on = value != NULL && strcmp(value, "true") == 0;
  if (m != NULL) m->no_locks = on;
  return on ? "true" : "false";
}

static char* on_ordering(opal_infosubscriber_t* obj, char* key, char* value) {
  (void)key;
  osc_iwarpx_module_t* m = module_of(obj);
  const bool none = value != NULL && strcmp(value, "none") == 0;
  if (m != NULL) m->acc_unordered = none;
  return none ? "none" : "rar,raw,war,waw";
}

static char* on_acc_ops(opal_infosubscriber_t* obj, char* key, char* value) {
  (void)obj;
  (void)key;
  return value != NULL && strcmp(value, "same_op") == 0 ? "same_op" : "same_op_no_op";
}

int osc_iwarpx_info_init(struct ompi_win_t* win, struct opal_info_t* info) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  int flag = 0;
  /* The callbacks set the module's flags: once now with the creation value, and again at every
   * MPI_Win_set_info that names the key. */
  static const struct {
    const char* key;
    opal_key_interest_callback_t* cb;
  } keys[] = {{"no_locks", on_no_locks},
              {"accumulate_ordering", on_ordering},
              {"accumulate_ops", on_acc_ops}};
  opal_infosubscriber_t* s = &win->super;
  int rc = OPAL_SUCCESS;
  for (size_t i = 0; rc == OPAL_SUCCESS && i < sizeof(keys) / sizeof(keys[0]); ++i) {
    char given[64] = "";
    flag = 0;
    if (info != NULL) (void)opal_info_get(info, keys[i].key, (int)sizeof(given) - 1, given, &flag);
    char* used = keys[i].cb(s, (char*)keys[i].key, flag ? given : NULL);
    rc = opal_infosubscribe_subscribe(s, (char*)keys[i].key, used, keys[i].cb);
  }
  opal_output_verbose(20, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: rank %d: window info no_locks=%d accumulate_ordering=%s",
                      m->rank, (int)m->no_locks, m->acc_unordered ? "none" : "default");
  return rc == OPAL_SUCCESS ? OMPI_SUCCESS : OMPI_ERROR;
}
