/*
 * osc/iwarpx dynamic windows (MPI_Win_create_dynamic, MPI_Win_attach, MPI_Win_detach).
 *
 * Contract:
 *  - Each rank publishes its attached regions {base, len, key} in an osc_iwarpx_regions_t that
 *    lives right after its state region (same registration, offset OSC_IWARPX_STATE_BYTES(n)),
 *    so every origin already knows where and with which key to read it (window setup's
 *    allgather). At most OSC_IWARPX_MAX_REGIONS regions; more is MPI_ERR_RMA_ATTACH.
 *  - MPI_Win_attach registers the region (fi_mr_reg, FI_REMOTE_READ|FI_REMOTE_WRITE) and adds
 *    it; overlapping an attached region, size 0 or a full table is MPI_ERR_RMA_ATTACH.
 *    MPI_Win_detach removes it and deregisters (later accesses through a cached key fail in
 *    the provider: the key no longer exists). Changes bump `gen` to odd before and to even
 *    after (a sequence lock).
 *  - An origin keeps one cached copy of each target's table. It is trusted until the next
 *    access epoch opens (fence, lock, lock_all, start bump m->epoch_id); the first access in a
 *    new epoch re-reads `gen` with one remote atomic read and keeps the copy if it is unchanged.
 *    A miss (address not in the copy) always re-reads the table before answering
 *    OMPI_ERR_RMA_RANGE, so an origin that learned an address right after the target attached
 *    it (e.g. by MPI_Send) finds it within the same epoch. A copy is accepted only if atomic
 *    reads of `gen` before and after the RDMA read of the table agree and are even; its
 *    count is checked (bytes from the network are untrusted).
 *  - Addresses are absolute (MPI_Get_address); an access must lie inside one attached region.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

#define OSC_IWX_REFRESH_TRIES 1000

typedef struct dyn_cache_t {
  osc_iwarpx_regions_t table; /* last accepted copy of the target's table */
  uint64_t epoch;             /* m->epoch_id when the copy was last confirmed */
  bool valid;
} dyn_cache_t;

struct osc_iwarpx_dyn_t {
  opal_mutex_t lock;                         /* the local table, mr[] and every cache */
  struct fid_mr* mr[OSC_IWARPX_MAX_REGIONS]; /* parallel to the local table's entries */
  dyn_cache_t* cache;                        /* [size] */
};

static osc_iwarpx_regions_t* local_table(osc_iwarpx_module_t* m) {
  return (osc_iwarpx_regions_t*)((char*)m->state + OSC_IWARPX_STATE_BYTES(m->size));
}

static int attach_error(osc_iwarpx_module_t* m, const char* call, const char* why, const void* b) {
  opal_output_verbose(1, mca_osc_iwarpx_component.output, "osc:iwarpx: rank %d: %s(%p): %s",
                      m->rank, call, b, why);
  return MPI_ERR_RMA_ATTACH;
}

int osc_iwarpx_dyn_init(osc_iwarpx_module_t* m) {
  struct osc_iwarpx_dyn_t* d = calloc(1, sizeof(*d));
  if (d == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  d->cache = calloc((size_t)m->size, sizeof(*d->cache));
  if (d->cache == NULL) {
    free(d);
    return OMPI_ERR_OUT_OF_RESOURCE;
  }
  OBJ_CONSTRUCT(&d->lock, opal_mutex_t);
  memset(local_table(m), 0, sizeof(osc_iwarpx_regions_t));
  m->dyn = d;
  return OMPI_SUCCESS;
}

void osc_iwarpx_dyn_fini(osc_iwarpx_module_t* m) {
  struct osc_iwarpx_dyn_t* d = m->dyn;
  if (d == NULL) return;
  for (int i = 0; i < OSC_IWARPX_MAX_REGIONS; ++i) {
    if (d->mr[i] != NULL) (void)fi_close(&d->mr[i]->fid);
  }
  OBJ_DESTRUCT(&d->lock);
  free(d->cache);
  free(d);
  m->dyn = NULL;
}

int osc_iwarpx_dyn_attach(struct ompi_win_t* win, void* base, size_t size) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  if (m->dyn == NULL) return attach_error(m, "MPI_Win_attach", "not a dynamic window", base);
  if (size == 0 || base == NULL) {
    return attach_error(m, "MPI_Win_attach", "empty region or NULL base", base);
  }
  const uint64_t b = (uint64_t)(uintptr_t)base;
  if (b + size < b) return attach_error(m, "MPI_Win_attach", "region wraps around", base);
  struct osc_iwarpx_dyn_t* d = m->dyn;
  osc_iwarpx_regions_t* t = local_table(m);
  opal_mutex_lock(&d->lock);
  const char* why = NULL;
  if (t->count >= OSC_IWARPX_MAX_REGIONS) why = "region table full";
  for (uint64_t i = 0; why == NULL && i < t->count; ++i) {
    if (b < t->r[i].base + t->r[i].len && t->r[i].base < b + size) {
      why = "overlaps an attached region";
    }
  }
  struct fid_mr* mr = NULL;
  if (why == NULL) {
    const int ret = fi_mr_reg(mca_osc_iwarpx_component.fabric->domain, base, size,
                              FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL);
    if (ret != 0) why = fi_strerror(-ret);
  }
  if (why != NULL) {
    opal_mutex_unlock(&d->lock);
    return attach_error(m, "MPI_Win_attach", why, base);
  }
  const uint64_t n = t->count;
  t->gen++; /* odd: changing */
  opal_atomic_wmb();
  t->r[n].base = b;
  t->r[n].len = size;
  t->r[n].key = fi_mr_key(mr);
  t->count = n + 1;
  d->mr[n] = mr;
  opal_atomic_wmb();
  t->gen++;
  opal_mutex_unlock(&d->lock);
  opal_output_verbose(20, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: rank %d attached %zu bytes at %p (%llu regions)", m->rank, size,
                      base, (unsigned long long)(n + 1));
  return OMPI_SUCCESS;
}

int osc_iwarpx_dyn_detach(struct ompi_win_t* win, const void* base) {
  osc_iwarpx_module_t* m = (osc_iwarpx_module_t*)win->w_osc_module;
  if (m->dyn == NULL) return attach_error(m, "MPI_Win_detach", "not a dynamic window", base);
  struct osc_iwarpx_dyn_t* d = m->dyn;
  osc_iwarpx_regions_t* t = local_table(m);
  const uint64_t b = (uint64_t)(uintptr_t)base;
  opal_mutex_lock(&d->lock);
  uint64_t i = 0;
  while (i < t->count && t->r[i].base != b) ++i;
  if (i == t->count) {
    opal_mutex_unlock(&d->lock);
    return attach_error(m, "MPI_Win_detach", "no region attached at this address", base);
  }
  struct fid_mr* mr = d->mr[i];
  const uint64_t last = t->count - 1;
  t->gen++;
  opal_atomic_wmb();
  t->r[i] = t->r[last];
  d->mr[i] = d->mr[last];
  memset(&t->r[last], 0, sizeof(t->r[last]));
  d->mr[last] = NULL;
  t->count = last;
  opal_atomic_wmb();
  t->gen++;
  opal_mutex_unlock(&d->lock);
  (void)fi_close(&mr->fid);
  return OMPI_SUCCESS;
}

/* Blocking remote atomic read of the target's table generation. */
static int read_gen(osc_iwarpx_module_t* m, int target, uint64_t* gen) {
  osc_iwarpx_target_t* t = &m->targets[target];
  const uint64_t zero = 0;
  const osc_iwarpx_amo_t a = {.op = FI_ATOMIC_READ,
                              .datatype = FI_UINT64,
                              .remote = t->state_base + OSC_IWARPX_STATE_BYTES(m->size),
                              .region_base = t->state_base,
                              .key = t->state_key,
                              .operand = &zero,
                              .compare = NULL,
                              .result = gen};
  return osc_iwarpx_amo_sync(m, t, &a);
}

/* Blocking RDMA read of the target's whole table into out. */
static int read_table(osc_iwarpx_module_t* m, int target, osc_iwarpx_regions_t* out) {
  osc_iwarpx_target_t* t = &m->targets[target];
  const osc_iwarpx_rwin_t w = {.base = t->state_base,
                               .size = OSC_IWARPX_STATE_BYTES(m->size) + OSC_IWARPX_DYN_BYTES,
                               .key = t->state_key};
  return osc_iwarpx_rma_sync(m, t, false, out, t->state_base + OSC_IWARPX_STATE_BYTES(m->size),
                             sizeof(*out), &w);
}

/* A consistent copy of target's table into c (lock held). */
static int refresh(osc_iwarpx_module_t* m, int target, dyn_cache_t* c) {
  c->valid = false;
  for (int tries = 0; tries < OSC_IWX_REFRESH_TRIES; ++tries) {
    uint64_t g1 = 0, g2 = 0;
    int rc = read_gen(m, target, &g1);
    if (rc == OMPI_SUCCESS && (g1 & 1) == 0) rc = read_table(m, target, &c->table);
    if (rc == OMPI_SUCCESS && (g1 & 1) == 0) rc = read_gen(m, target, &g2);
    if (rc != OMPI_SUCCESS) {
      opal_output_verbose(1, mca_osc_iwarpx_component.output,
                          "osc:iwarpx: rank %d: reading rank %d's region table failed (%d)",
                          m->rank, target, rc);
      return rc;
    }
    if ((g1 & 1) == 0 && g1 == g2 && c->table.gen == g1) {
      if (c->table.count > OSC_IWARPX_MAX_REGIONS) {
        opal_output_verbose(1, mca_osc_iwarpx_component.output,
                            "osc:iwarpx: rank %d: rank %d's region table claims %llu regions",
                            m->rank, target, (unsigned long long)c->table.count);
        return OMPI_ERROR;
      }
      c->valid = true;
      c->epoch = m->epoch_id;
      return OMPI_SUCCESS;
    }
    opal_progress(); /* the target is changing its table: try again */
  }
  opal_output_verbose(1, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: rank %d: rank %d's region table kept changing (%d reads)",
                      m->rank, target, OSC_IWX_REFRESH_TRIES);
  return OMPI_ERROR;
}

static bool search(const dyn_cache_t* c, uint64_t addr, uint64_t len, osc_iwarpx_rwin_t* out) {
  for (uint64_t i = 0; c->valid && i < c->table.count; ++i) {
    const osc_iwarpx_region_t* r = &c->table.r[i];
    if (addr >= r->base && addr - r->base <= r->len && len <= r->len - (addr - r->base)) {
      out->base = r->base;
      out->size = r->len;
      out->key = r->key;
      return true;
    }
  }
  return false;
}

int osc_iwarpx_dyn_lookup(osc_iwarpx_module_t* m, int target, uint64_t addr, uint64_t len,
                          osc_iwarpx_rwin_t* out) {
  struct osc_iwarpx_dyn_t* d = m->dyn;
  if (d == NULL) return OMPI_ERR_RMA_RANGE;
  dyn_cache_t* c = &d->cache[target];
  opal_mutex_lock(&d->lock);
  int rc = OMPI_SUCCESS;
  bool fresh = false;
  if (c->valid && c->epoch != m->epoch_id) {
    uint64_t g = 0;
    rc = read_gen(m, target, &g);
    if (rc == OMPI_SUCCESS && g == c->table.gen) {
      c->epoch = m->epoch_id; /* unchanged since we copied it */
    } else {
      c->valid = false;
    }
  }
  if (rc == OMPI_SUCCESS && !c->valid) {
    rc = refresh(m, target, c);
    fresh = true;
  }
  bool found = rc == OMPI_SUCCESS && search(c, addr, len, out);
  if (rc == OMPI_SUCCESS && !found && !fresh) {
    rc = refresh(m, target, c);
    found = rc == OMPI_SUCCESS && search(c, addr, len, out);
  }
  opal_mutex_unlock(&d->lock);
  return found ? OMPI_SUCCESS : OMPI_ERR_RMA_RANGE;
}
