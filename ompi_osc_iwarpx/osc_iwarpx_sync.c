/*
 * osc/iwarpx synchronisation: fence, passive target lock/unlock, lock_all/unlock_all,
 * flush*, sync. Completion is always remote: flush and flush_local both call
 * osc_iwarpx_wait_target (one remote-completion read behind pending MPI_Put writes, then wait
 * for the target's `outstanding` to reach 0; osc_iwarpx_ops.c).
 *
 * Lock protocol: a 64-bit word in the target's registered state region, touched only with
 * fi_atomic on the target (the target's own lock calls go through the provider's loopback
 * too, so every access is atomic with respect to the others):
 *   exclusive: FI_CSWAP(0 -> OSC_IWARPX_LOCK_EXCL) until it returns 0;
 *   shared:    fetching FI_SUM(+1); if the old value had OSC_IWARPX_LOCK_EXCL, FI_SUM(-1) and
 *              retry;
 *   unlock:    wait for our operations to that target, then FI_SUM(-1) or FI_SUM(-EXCL).
 * Misuse (unlock without lock, lock twice, flush outside a passive epoch, fence inside one or
 * inside a PSCW epoch)
 * returns OMPI_ERR_RMA_SYNC with a log line.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <rdma/fi_atomic.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

static osc_iwarpx_module_t* module_of(struct ompi_win_t* win) {
  return (osc_iwarpx_module_t*)win->w_osc_module;
}

static int sync_error(osc_iwarpx_module_t* m, const char* call, const char* why, int target) {
  opal_output_verbose(1, mca_osc_iwarpx_component.output, "osc:iwarpx: rank %d: %s(%d): %s",
                      m->rank, call, target, why);
  return OMPI_ERR_RMA_SYNC;
}

bool osc_iwarpx_epoch_covers(osc_iwarpx_module_t* m, int target) {
  return m->fence_epoch || m->lock_all || m->targets[target].lock_type != 0 ||
         m->targets[target].pscw;
}

static int acquire(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, int lock_type) {
  for (;;) {
    uint64_t old = 0;
    int rc;
    if (lock_type == MPI_LOCK_EXCLUSIVE) {
      rc = osc_iwarpx_atomic_sync(m, t, FI_CSWAP, OSC_IWARPX_LOCK_EXCL, 0, &old);
      if (rc != OMPI_SUCCESS || old == 0) return rc;
    } else {
      rc = osc_iwarpx_atomic_sync(m, t, FI_SUM, 1, 0, &old);
      if (rc != OMPI_SUCCESS || (old & OSC_IWARPX_LOCK_EXCL) == 0) return rc;
      rc = osc_iwarpx_atomic_sync(m, t, FI_SUM, UINT64_MAX /* -1 */, 0, NULL);
      if (rc != OMPI_SUCCESS) return rc;
    }
    opal_progress(); /* back off once before trying again */
  }
}

static int release(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, int lock_type) {
  const uint64_t delta =
      lock_type == MPI_LOCK_EXCLUSIVE ? (uint64_t)0 - OSC_IWARPX_LOCK_EXCL : UINT64_MAX; /* -1 */
  return osc_iwarpx_atomic_sync(m, t, FI_SUM, delta, 0, NULL);
}

int osc_iwarpx_fence(int mode, struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = module_of(win);
  if (m->lock_all || m->passive_count > 0 || m->access_group != NULL || m->exposure_group != NULL) {
    return sync_error(m, "MPI_Win_fence", "inside a passive target or PSCW epoch", -1);
  }
  osc_iwarpx_wait_all(m);
  int rc = m->comm->c_coll->coll_barrier(m->comm, m->comm->c_coll->coll_barrier_module);
  m->fence_epoch = (mode & MPI_MODE_NOSUCCEED) == 0;
  m->epoch_id++;
  return rc;
}

int osc_iwarpx_lock(int lock_type, int target, int mode, struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = module_of(win);
  if (target < 0 || target >= m->size) return OMPI_ERR_RMA_RANGE;
  if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE) return OMPI_ERR_BAD_PARAM;
  osc_iwarpx_target_t* t = &m->targets[target];
  if (m->no_locks) return sync_error(m, "MPI_Win_lock", "window created with no_locks", target);
  if (m->lock_all || t->lock_type != 0) {
    return sync_error(m, "MPI_Win_lock", "target already locked by this rank", target);
  }
  const bool nocheck = (mode & MPI_MODE_NOCHECK) != 0;
  if (!nocheck) {
    int rc = acquire(m, t, lock_type);
    if (rc != OMPI_SUCCESS) return rc;
  }
  opal_mutex_lock(&m->lock);
  t->lock_type = lock_type;
  t->nocheck = nocheck;
  m->passive_count++;
  m->epoch_id++;
  opal_mutex_unlock(&m->lock);
  return OMPI_SUCCESS;
}

int osc_iwarpx_unlock(int target, struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = module_of(win);
  if (target < 0 || target >= m->size) return OMPI_ERR_RMA_RANGE;
  osc_iwarpx_target_t* t = &m->targets[target];
  if (t->lock_type == 0) return sync_error(m, "MPI_Win_unlock", "target not locked", target);
  osc_iwarpx_wait_target(m, t);
  int rc = t->nocheck ? OMPI_SUCCESS : release(m, t, t->lock_type);
  opal_mutex_lock(&m->lock);
  t->lock_type = 0;
  t->nocheck = false;
  m->passive_count--;
  opal_mutex_unlock(&m->lock);
  return rc;
}

int osc_iwarpx_lock_all(int mode, struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = module_of(win);
  if (m->no_locks) return sync_error(m, "MPI_Win_lock_all", "window created with no_locks", -1);
  if (m->lock_all || m->passive_count > 0) {
    return sync_error(m, "MPI_Win_lock_all", "already in a passive target epoch", -1);
  }
  const bool nocheck = (mode & MPI_MODE_NOCHECK) != 0;
  for (int i = 0; !nocheck && i < m->size; ++i) {
    int rc = acquire(m, &m->targets[i], MPI_LOCK_SHARED);
    if (rc != OMPI_SUCCESS) {
      while (--i >= 0) (void)release(m, &m->targets[i], MPI_LOCK_SHARED);
      return rc;
    }
  }
  m->lock_all_nocheck = nocheck;
  m->lock_all = true;
  m->epoch_id++;
  return OMPI_SUCCESS;
}

int osc_iwarpx_unlock_all(struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = module_of(win);
  if (!m->lock_all) return sync_error(m, "MPI_Win_unlock_all", "no lock_all epoch", -1);
  osc_iwarpx_wait_all(m);
  int rc = OMPI_SUCCESS;
  for (int i = 0; !m->lock_all_nocheck && i < m->size; ++i) {
    const int r = release(m, &m->targets[i], MPI_LOCK_SHARED);
    if (r != OMPI_SUCCESS) rc = r;
  }
  m->lock_all = false;
  m->lock_all_nocheck = false;
  return rc;
}

int osc_iwarpx_sync(struct ompi_win_t* win) {
  (void)win;
  opal_atomic_mb(); /* unified model: the public and private copies are the same memory */
  return OMPI_SUCCESS;
}

int osc_iwarpx_flush(int target, struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = module_of(win);
  if (target < 0 || target >= m->size) return OMPI_ERR_RMA_RANGE;
  if (!m->lock_all && m->targets[target].lock_type == 0) {
    return sync_error(m, "MPI_Win_flush", "no passive target epoch covers the target", target);
  }
  osc_iwarpx_wait_target(m, &m->targets[target]);
  return OMPI_SUCCESS;
}

int osc_iwarpx_flush_all(struct ompi_win_t* win) {
  osc_iwarpx_module_t* m = module_of(win);
  if (!m->lock_all && m->passive_count == 0) {
    return sync_error(m, "MPI_Win_flush_all", "no passive target epoch", -1);
  }
  osc_iwarpx_wait_all(m);
  return OMPI_SUCCESS;
}
