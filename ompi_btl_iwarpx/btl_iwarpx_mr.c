/*
 * btl/iwarpx memory registration through Open MPI's registration cache (rcache "grdma").
 *
 * Contract:
 *  - register_mem(base, size, flags) returns a handle {key, base, len} over the page-aligned
 *    range around [base, base + size) with at least the access `flags` asks for, or NULL
 *    (logged at verbosity 1). deregister_mem(handle) gives it back. Handles are reference
 *    counted: the same range registered twice (while in use, or again later) is one MR.
 *  - fi_mr_reg runs only on a cache miss. grdma keeps unused registrations in an LRU when
 *    Open MPI's leave-pinned mode is on (mpi_leave_pinned, default on when the memory hooks
 *    work); otherwise a registration is closed when its last user gives it back.
 *  - Freed memory: grdma is invalidated by Open MPI's memory hooks (opal_mem_hooks, the
 *    "patcher" memory component intercepts munmap/brk/madvise...), which move unused cached
 *    registrations of the freed range to a garbage list closed at the next register_mem, so a
 *    buffer freed and reallocated at the same address gets a new MR. rcache_base_create only
 *    enables leave-pinned when those hooks are available; without them nothing unused is
 *    kept, so no stale registration can be returned.
 *  - btl_iwarpx_mr_cache=0 bypasses the cache (one fi_mr_reg per register_mem, closed at
 *    deregister_mem). btl_iwarpx_mr_cache_max caps the open MRs: at the cap a miss first
 *    evicts unused registrations (LRU order); if all are in use it registers anyway.
 */
// clang-format off
#include "opal_config.h" /* first, see btl_iwarpx.h */
// clang-format on

#include <stddef.h>
#include <stdio.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include "btl_iwarpx.h"
#include "opal/mca/rcache/base/base.h"
#include "opal/runtime/opal_params.h"
#include "opal/util/output.h"

/* Set by register_mem on its second attempt: the cap may be exceeded (nothing to evict). */
#define IWX_REG_OVER_CAP MCA_RCACHE_FLAGS_RESV0

#define IWX_REG_OF(h) ((mca_btl_iwarpx_reg_t*)((char*)(h)-offsetof(mca_btl_iwarpx_reg_t, handle)))

static uint64_t fi_access(int32_t access_flags) {
  uint64_t access = FI_READ | FI_WRITE;
  if ((access_flags & (MCA_RCACHE_ACCESS_REMOTE_READ | MCA_RCACHE_ACCESS_REMOTE_ATOMIC)) != 0) {
    access |= FI_REMOTE_READ;
  }
  if ((access_flags & (MCA_RCACHE_ACCESS_REMOTE_WRITE | MCA_RCACHE_ACCESS_REMOTE_ATOMIC)) != 0) {
    access |= FI_REMOTE_WRITE;
  }
  return access;
}

/* grdma's register_mem resource: a cache miss. OPAL_ERR_OUT_OF_RESOURCE makes grdma evict
 * one unused registration and call again. */
static int reg_mem(void* reg_data, void* base, size_t size, mca_rcache_base_registration_t* reg) {
  mca_btl_iwarpx_module_t* m = reg_data;
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  mca_btl_iwarpx_reg_t* r = (mca_btl_iwarpx_reg_t*)reg;
  if (c->mr_cache_max > 0 && m->stats.mr_live >= c->mr_cache_max &&
      (reg->flags & IWX_REG_OVER_CAP) == 0) {
    return OPAL_ERR_OUT_OF_RESOURCE;
  }
  r->mr = NULL;
  int ret = fi_mr_reg(m->domain, base, size, fi_access(reg->access_flags), 0, 0, 0, &r->mr, NULL);
  if (ret != 0) {
    opal_output_verbose(1, c->output, "btl:iwarpx: fi_mr_reg(%p, %zu bytes): %s", base, size,
                        fi_strerror(-ret));
    return ret == -FI_ENOMEM || ret == -FI_ENOSPC ? OPAL_ERR_OUT_OF_RESOURCE : OPAL_ERROR;
  }
  r->handle.key = fi_mr_key(r->mr);
  r->handle.base = (uint64_t)(uintptr_t)base;
  r->handle.len = size;
  OPAL_THREAD_ADD_FETCH64(&m->stats.mr_regs, 1);
  OPAL_THREAD_ADD_FETCH64(&m->stats.mr_live, 1);
  return OPAL_SUCCESS;
}

/* grdma's deregister_mem resource: the registration leaves the cache. */
static int dereg_mem(void* reg_data, mca_rcache_base_registration_t* reg) {
  mca_btl_iwarpx_module_t* m = reg_data;
  mca_btl_iwarpx_reg_t* r = (mca_btl_iwarpx_reg_t*)reg;
  if (r->mr == NULL) return OPAL_SUCCESS;
  int ret = fi_close(&r->mr->fid);
  if (ret != 0) {
    opal_output_verbose(1, mca_btl_iwarpx_component.output, "btl:iwarpx: fi_close(mr): %s",
                        fi_strerror(-ret));
    return OPAL_ERROR;
  }
  r->mr = NULL;
  OPAL_THREAD_ADD_FETCH64(&m->stats.mr_live, -1);
  return OPAL_SUCCESS;
}

int mca_btl_iwarpx_mr_open(mca_btl_iwarpx_module_t* m) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  char name[64];
  /* grdma shares a cache between modules of the same name: one per module. */
  (void)snprintf(name, sizeof(name), "iwarpx.%p", (void*)m);
  mca_rcache_base_resources_t resources = {.cache_name = name,
                                           .reg_data = m,
                                           .sizeof_reg = sizeof(mca_btl_iwarpx_reg_t),
                                           .register_mem = reg_mem,
                                           .deregister_mem = dereg_mem};
  m->rcache = mca_rcache_base_module_create("grdma", m, &resources);
  if (m->rcache == NULL) {
    opal_output_verbose(1, c->output, "btl:iwarpx: cannot create the rcache grdma module");
    return OPAL_ERROR;
  }
  return OPAL_SUCCESS;
}

void mca_btl_iwarpx_mr_close(mca_btl_iwarpx_module_t* m) {
  if (m->rcache == NULL) return;
  /* Closes every unused registration (cached or waiting for garbage collection). */
  (void)mca_rcache_base_module_destroy(m->rcache);
  m->rcache = NULL;
  if (m->stats.mr_live != 0) {
    opal_output_verbose(1, mca_btl_iwarpx_component.output,
                        "btl:iwarpx: %ld registrations still in use at finalize (not given back "
                        "by their users); the domain closes them",
                        (long)m->stats.mr_live);
  }
}

bool mca_btl_iwarpx_mr_keeps_unused(void) {
  return mca_btl_iwarpx_component.mr_cache &&
         (opal_leave_pinned == 1 || opal_leave_pinned_pipeline);
}

mca_btl_base_registration_handle_t* mca_btl_iwarpx_register_mem(mca_btl_base_module_t* btl,
                                                                mca_btl_base_endpoint_t* ep,
                                                                void* base, size_t size,
                                                                uint32_t flags) {
  (void)ep;
  mca_btl_iwarpx_module_t* m = (mca_btl_iwarpx_module_t*)btl;
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  if (base == NULL && size != 0) {
    opal_output_verbose(1, c->output, "btl:iwarpx: register_mem(NULL, %zu bytes) refused", size);
    return NULL;
  }
  OPAL_THREAD_ADD_FETCH64(&m->stats.registrations, 1);
  const int32_t access = (int32_t)(flags & MCA_BTL_REG_FLAG_ACCESS_ANY);
  const uint32_t rflags = c->mr_cache ? 0 : MCA_RCACHE_FLAGS_CACHE_BYPASS;
  mca_rcache_base_registration_t* reg = NULL;
  int rc = m->rcache->rcache_register(m->rcache, base, size, rflags, access, &reg);
  if (rc == OPAL_ERR_OUT_OF_RESOURCE) {
    /* At the cap with nothing unused left to evict: over the cap rather than fail. */
    rc = m->rcache->rcache_register(m->rcache, base, size, rflags | IWX_REG_OVER_CAP, access, &reg);
  }
  if (rc != OPAL_SUCCESS || reg == NULL) {
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: register_mem(%p, %zu bytes, flags 0x%x) failed (%d)", base,
                        size, flags, rc);
    return NULL;
  }
  return &((mca_btl_iwarpx_reg_t*)reg)->handle;
}

int mca_btl_iwarpx_deregister_mem(mca_btl_base_module_t* btl,
                                  mca_btl_base_registration_handle_t* handle) {
  mca_btl_iwarpx_module_t* m = (mca_btl_iwarpx_module_t*)btl;
  if (handle == NULL) {
    opal_output_verbose(1, mca_btl_iwarpx_component.output,
                        "btl:iwarpx: deregister_mem(NULL) refused");
    return OPAL_ERR_BAD_PARAM;
  }
  mca_btl_iwarpx_reg_t* r = IWX_REG_OF(handle);
  return m->rcache->rcache_deregister(m->rcache, &r->base);
}
