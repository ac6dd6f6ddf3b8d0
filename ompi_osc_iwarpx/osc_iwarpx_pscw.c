/*
 * osc/iwarpx general active target synchronisation (MPI_Win_post/start/complete/wait/test)
 * with counters in every rank's registered state region, changed only by remote atomics:
 *   post(G)    at T: FI_SUM +1 on post_count[T] in the state of every origin in G;
 *   start(G)   at O: for every T in G wait until post_count[T] exceeds the posts of T it has
 *                    consumed already (post_seen[T]), then consume one;
 *   complete() at O: wait for remote completion of everything sent to each T in G, then
 *                    FI_SUM +1 on complete_count in T's state (and wait for those atomics);
 *   wait()     at T: wait until complete_count reaches complete_seen + |G|, consume |G|;
 *   test()     at T: the same without blocking.
 * The counters only grow, so no reset races. MPI_MODE_NOCHECK on post skips the notification
 * and on start the wait for it (the standard requires both or neither). Misuse (start twice,
 * complete without start, a rank outside the window's group, ...) returns an MPI error.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stddef.h>
#include <stdlib.h>

#include "ompi/group/group.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

static int pscw_error(osc_iwarpx_module_t* m, const char* call, const char* why, int rc) {
  opal_output_verbose(1, mca_osc_iwarpx_component.output, "osc:iwarpx: rank %d: %s: %s", m->rank,
                      call, why);
  return rc;
}

/* The ranks of group in the window's communicator; NULL (logged) if one is not in it. */
static int* window_ranks(osc_iwarpx_module_t* m, struct ompi_group_t* group, int* n,
                         const char* call) {
  const int gn = ompi_group_size(group);
  int* in = calloc((size_t)gn + 1, sizeof(int));
  int* out = malloc(((size_t)gn + 1) * sizeof(int));
  if (in == NULL || out == NULL) {
    free(in);
    free(out);
    return NULL;
  }
  for (int i = 0; i < gn; ++i) in[i] = i;
  int rc = ompi_group_translate_ranks(group, gn, in, m->comm->c_local_group, out);
  free(in);
  for (int i = 0; rc == OMPI_SUCCESS && i < gn; ++i) {
    if (out[i] < 0 || out[i] >= m->size) rc = OMPI_ERROR;
  }
  if (rc != OMPI_SUCCESS) {
    (void)pscw_error(m, call, "group has a process outside the window's group", 0);
    free(out);
    return NULL;
  }
  *n = gn;
  return out;
}

int osc_iwarpx_post(struct ompi_group_t* group, int mode, struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  if (m->exposure_group != NULL) {
    return pscw_error(m, "MPI_Win_post", "exposure epoch already open", OMPI_ERR_RMA_SYNC);
  }
  int n = 0;
  int* ranks = window_ranks(m, group, &n, "MPI_Win_post");
  if (ranks == NULL) return MPI_ERR_GROUP;
  int rc = OMPI_SUCCESS;
  const size_t slot = offsetof(osc_iwarpx_state_t, post_count) + (size_t)m->rank * sizeof(uint64_t);
  for (int i = 0; rc == OMPI_SUCCESS && (mode & MPI_MODE_NOCHECK) == 0 && i < n; ++i) {
    rc = osc_iwarpx_state_add(m, &m->targets[ranks[i]], slot, 1);
  }
  if (rc != OMPI_SUCCESS) {
    free(ranks);
    return rc;
  }
  m->exposure_group = ranks;
  m->exposure_n = n;
  return OMPI_SUCCESS;
}

int osc_iwarpx_start(struct ompi_group_t* group, int mode, struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  if (m->access_group != NULL) {
    return pscw_error(m, "MPI_Win_start", "access epoch already open", OMPI_ERR_RMA_SYNC);
  }
  int n = 0;
  int* ranks = window_ranks(m, group, &n, "MPI_Win_start");
  if (ranks == NULL) return MPI_ERR_GROUP;
  for (int i = 0; (mode & MPI_MODE_NOCHECK) == 0 && i < n; ++i) {
    const int t = ranks[i];
    while (m->state->post_count[t] <= m->post_seen[t]) opal_progress();
    m->post_seen[t]++;
  }
  for (int i = 0; i < n; ++i) m->targets[ranks[i]].pscw = true;
  m->access_group = ranks;
  m->epoch_id++;
  m->access_n = n;
  return OMPI_SUCCESS;
}

int osc_iwarpx_complete(struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  if (m->access_group == NULL) {
    return pscw_error(m, "MPI_Win_complete", "no access epoch (MPI_Win_start)", OMPI_ERR_RMA_SYNC);
  }
  int rc = OMPI_SUCCESS;
  for (int i = 0; i < m->access_n; ++i) {
    osc_iwarpx_target_t* t = &m->targets[m->access_group[i]];
    osc_iwarpx_wait_target(m, t); /* the data is at the target before it hears of it */
    const int r = osc_iwarpx_state_add(m, t, offsetof(osc_iwarpx_state_t, complete_count), 1);
    if (r != OMPI_SUCCESS) rc = r;
    t->pscw = false;
  }
  osc_iwarpx_wait_all(m);
  free(m->access_group);
  m->access_group = NULL;
  m->access_n = 0;
  return rc;
}

static bool exposure_done(osc_iwarpx_module_t* m) {
  if (m->state->complete_count < m->complete_seen + (uint64_t)m->exposure_n) return false;
  m->complete_seen += (uint64_t)m->exposure_n;
  free(m->exposure_group);
  m->exposure_group = NULL;
  m->exposure_n = 0;
  return true;
}

int osc_iwarpx_wait(struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  if (m->exposure_group == NULL) {
    return pscw_error(m, "MPI_Win_wait", "no exposure epoch (MPI_Win_post)", OMPI_ERR_RMA_SYNC);
  }
  while (!exposure_done(m)) opal_progress();
  return OMPI_SUCCESS;
}

int osc_iwarpx_test(struct ompi_win_t* win, int* flag) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  if (m->exposure_group == NULL) {
    return pscw_error(m, "MPI_Win_test", "no exposure epoch (MPI_Win_post)", OMPI_ERR_RMA_SYNC);
  }
  opal_progress();
  *flag = exposure_done(m) ? 1 : 0;
  return OMPI_SUCCESS;
}
