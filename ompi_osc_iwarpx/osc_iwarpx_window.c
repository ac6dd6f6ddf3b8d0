/*
 * osc/iwarpx window life cycle: osc_select's collective setup (allocate for the allocate
 * flavor, register window + state region once (dynamic flavor: no window memory, the state
 * region also holds the attached-region table, osc_iwarpx_dynamic.c), one allgather of everything a
 * peer needs, fi_av_insert of new peers) and the collective MPI_Win_free (wait for all our
 * operations, barrier, then deregister and free).
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include "ompi/proc/proc.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

#define OSC_IWX_MR_ACCESS (FI_REMOTE_READ | FI_REMOTE_WRITE)

static int reg(osc_iwarpx_fabric_t* f, void* base, size_t len, struct fid_mr** mr, uint64_t* key,
               const char* what) {
  int ret = fi_mr_reg(f->domain, base, len, OSC_IWX_MR_ACCESS, 0, 0, 0, mr, NULL);
  if (ret != 0) {
    opal_output_verbose(1, mca_osc_iwarpx_component.output,
                        "osc:iwarpx: fi_mr_reg(%s, %zu bytes) failed: %s", what, len,
                        fi_strerror(-ret));
    *mr = NULL;
    return OMPI_ERROR;
  }
  *key = fi_mr_key(*mr);
  return OMPI_SUCCESS;
}

static void module_release(osc_iwarpx_module_t* m) {
  osc_iwarpx_dyn_fini(m);
  if (m->win_mr != NULL) (void)fi_close(&m->win_mr->fid);
  if (m->state_mr != NULL) (void)fi_close(&m->state_mr->fid);
  free(m->state);
  free(m->targets);
  free(m->post_seen);
  free(m->access_group);
  free(m->exposure_group);
  if (m->free_base) free(m->base);
  if (m->comm != NULL) (void)ompi_comm_free(&m->comm);
  OBJ_DESTRUCT(&m->lock);
  free(m);
}

/* Fills `me`, exchanges, and builds the target table. Collective: every rank reaches the
 * allgather even when its own registration failed (it then publishes size UINT64_MAX as an
 * error mark, and all ranks fail together instead of hanging). */
static int exchange(osc_iwarpx_module_t* m, osc_iwarpx_fabric_t* f, int disp_unit, bool ok) {
  osc_iwarpx_peer_t me;
  memset(&me, 0, sizeof(me));
  me.base = (uint64_t)(uintptr_t)m->base;
  me.size = ok ? (uint64_t)m->win_size : UINT64_MAX;
  me.key = m->win_mr != NULL ? fi_mr_key(m->win_mr) : 0;
  me.state_base = (uint64_t)(uintptr_t)m->state;
  me.state_key = m->state_mr != NULL ? fi_mr_key(m->state_mr) : 0;
  me.disp_unit = disp_unit;
  me.addrlen = (uint32_t)f->addrlen;
  memcpy(me.addr, f->addr, f->addrlen);

  osc_iwarpx_peer_t* all = calloc((size_t)m->size, sizeof(*all));
  if (all == NULL) return OMPI_ERR_OUT_OF_RESOURCE; /* rare; the others then block */
  int rc =
      m->comm->c_coll->coll_allgather(&me, (int)sizeof(me), MPI_BYTE, all, (int)sizeof(me),
                                      MPI_BYTE, m->comm, m->comm->c_coll->coll_allgather_module);
  for (int i = 0; rc == OMPI_SUCCESS && i < m->size; ++i) {
    const osc_iwarpx_peer_t* p = &all[i];
    if (p->size == UINT64_MAX || p->addrlen == 0 || p->addrlen > OSC_IWARPX_MAX_ADDR) {
      opal_output_verbose(1, mca_osc_iwarpx_component.output,
                          "osc:iwarpx: rank %d could not set its window up (size mark %s, "
                          "address length %u)",
                          i, p->size == UINT64_MAX ? "error" : "ok", p->addrlen);
      rc = OMPI_ERR_WIN;
      break;
    }
    osc_iwarpx_target_t* t = &m->targets[i];
    t->base = p->base;
    t->size = p->size;
    t->key = p->key;
    t->state_base = p->state_base;
    t->state_key = p->state_key;
    t->disp_unit = p->disp_unit;
    rc = osc_iwarpx_fabric_lookup(f, ompi_comm_peer_lookup(m->comm, i), p->addr, p->addrlen,
                                  &t->addr);
  }
  free(all);
  return rc;
}

int osc_iwarpx_window_create(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                             struct ompi_communicator_t* comm, int flavor) {
  mca_osc_iwarpx_component_t* c = &mca_osc_iwarpx_component;
  osc_iwarpx_fabric_t* f = NULL;
  if (osc_iwarpx_fabric_get(&f) != OMPI_SUCCESS) return OMPI_ERR_NOT_AVAILABLE;
  osc_iwarpx_module_t* m = calloc(1, sizeof(*m));
  if (m == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  memcpy(&m->super, &osc_iwarpx_module_template, sizeof(m->super));
  OBJ_CONSTRUCT(&m->lock, opal_mutex_t);
  m->flavor = flavor;
  m->win_size = size;
  int rc = ompi_comm_dup(comm, &m->comm);
  if (rc != OMPI_SUCCESS) {
    m->comm = NULL;
    module_release(m);
    return rc;
  }
  m->rank = ompi_comm_rank(m->comm);
  m->size = ompi_comm_size(m->comm);

  bool ok = true;
  if (flavor == MPI_WIN_FLAVOR_ALLOCATE) {
    void* p = NULL;
    ok = posix_memalign(&p, 64, size > 0 ? size : 64) == 0;
    m->base = p;
    m->free_base = ok;
  } else if (flavor == MPI_WIN_FLAVOR_CREATE) {
    m->base = *base;
  } else {
    m->base = NULL; /* dynamic: memory comes with MPI_Win_attach */
    m->win_size = size = 0;
  }
  m->targets = calloc((size_t)m->size, sizeof(*m->targets));
  void* st = NULL;
  const bool dynamic = flavor == MPI_WIN_FLAVOR_DYNAMIC;
  /* A dynamic window publishes its region table right after the state (same MR). */
  const size_t state_bytes = OSC_IWARPX_STATE_BYTES(m->size) + (dynamic ? OSC_IWARPX_DYN_BYTES : 0);
  m->post_seen = calloc((size_t)m->size, sizeof(*m->post_seen));
  ok =
      ok && m->targets != NULL && m->post_seen != NULL && posix_memalign(&st, 64, state_bytes) == 0;
  m->state = st;
  if (ok) memset(m->state, 0, state_bytes);
  if (ok && dynamic) ok = osc_iwarpx_dyn_init(m) == OMPI_SUCCESS;
  if (ok && size > 0) ok = reg(f, m->base, size, &m->win_mr, &(uint64_t){0}, "window") == 0;
  if (ok) ok = reg(f, m->state, state_bytes, &m->state_mr, &(uint64_t){0}, "state") == 0;

  osc_iwarpx_progress_enable(true); /* before any peer can target us */
  rc = exchange(m, f, disp_unit, ok);
  if (rc == OMPI_SUCCESS && !ok) rc = OMPI_ERR_WIN;
  if (rc != OMPI_SUCCESS) {
    module_release(m);
    if (c->windows == 0) osc_iwarpx_progress_enable(false);
    return rc;
  }
  if (flavor == MPI_WIN_FLAVOR_ALLOCATE) *base = m->base;
  win->w_osc_module = &m->super;
  OPAL_THREAD_ADD_FETCH32(&c->windows, 1);
  opal_output_verbose(1, c->output,
                      "osc:iwarpx: window ready (flavor %s, %zu bytes, disp_unit %d, rank %d of "
                      "%d)",
                      flavor == MPI_WIN_FLAVOR_ALLOCATE  ? "allocate"
                      : flavor == MPI_WIN_FLAVOR_DYNAMIC ? "dynamic"
                                                         : "create",
                      size, disp_unit, m->rank, m->size);
  return OMPI_SUCCESS;
}

int osc_iwarpx_free(struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  mca_osc_iwarpx_component_t* c = &mca_osc_iwarpx_component;
  if (m == NULL) return OMPI_SUCCESS;
  if (m->lock_all || m->passive_count > 0 || m->access_group != NULL || m->exposure_group != NULL) {
    opal_output_verbose(1, c->output,
                        "osc:iwarpx: rank %d: MPI_Win_free inside a passive target or PSCW epoch "
                        "(unlock/complete/wait first)",
                        m->rank);
    return OMPI_ERR_RMA_SYNC;
  }
  osc_iwarpx_wait_all(m);
  /* Nobody may still target our memory once everyone is past this barrier. */
  int rc = m->comm->c_coll->coll_barrier(m->comm, m->comm->c_coll->coll_barrier_module);
  opal_output_verbose(1, c->output,
                      "osc:iwarpx: window freed: rank %d: %llu puts (%llu bytes), %llu gets "
                      "(%llu bytes), %llu atomics, %llu remote-completion reads, %llu wait turns",
                      m->rank, (unsigned long long)m->puts, (unsigned long long)m->put_bytes,
                      (unsigned long long)m->gets, (unsigned long long)m->get_bytes,
                      (unsigned long long)m->atomics, (unsigned long long)m->completion_reads,
                      (unsigned long long)m->wait_turns);
  win->w_osc_module = NULL;
  module_release(m);
  if (OPAL_THREAD_ADD_FETCH32(&c->windows, -1) == 0) osc_iwarpx_progress_enable(false);
  return rc;
}
