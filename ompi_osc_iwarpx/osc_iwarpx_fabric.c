/*
 * osc/iwarpx: the process-wide libfabric objects (one RDM endpoint shared by every window),
 * the peer address cache (one AV entry per peer process, whatever the number of windows) and
 * the completion-queue progress that finishes operations.
 *
 * Why one endpoint per process and not per window: windows are cheap to create that way (no
 * sockets per window), the AV does not grow with the number of windows, and one progress
 * function serves all. FI_THREAD_SAFE makes concurrent posting from MPI_THREAD_MULTIPLE
 * callers legal; the CQ is read by one thread at a time (trylock).
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "iwx_ofi.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

#define OSC_IWX_CQ_BATCH 32

static int fail(const char* call, int ret) {
  opal_output_verbose(1, mca_osc_iwarpx_component.output, "osc:iwarpx: %s failed: %s (%d)", call,
                      fi_strerror(ret < 0 ? -ret : ret), ret);
  return OMPI_ERROR;
}

static void log_fail(void* arg, const char* call, int ret) {
  (void)arg;
  (void)fail(call, ret);
}

/* The fabric keeps the libfabric objects in its own fields (used everywhere); iwx_ofi opens
 * and closes them. */
static struct iwx_ofi held(const osc_iwarpx_fabric_t* f) {
  struct iwx_ofi o = {f->info, f->fabric, f->domain, f->av, f->cq, f->ep};
  return o;
}

static void take(osc_iwarpx_fabric_t* f, const struct iwx_ofi* o) {
  f->info = o->info;
  f->fabric = o->fabric;
  f->domain = o->domain;
  f->av = o->av;
  f->cq = o->cq;
  f->ep = o->ep;
}

static void fabric_destroy(osc_iwarpx_fabric_t* f) {
  struct iwx_ofi o = held(f);
  iwx_ofi_close(&o, log_fail, NULL);
  take(f, &o);
  OBJ_DESTRUCT(&f->av_cache);
  OBJ_DESTRUCT(&f->cq_lock);
  OBJ_DESTRUCT(&f->lock);
  free(f);
}

/* Which sign-agnostic integer ops the provider does as one remote atomic, plain and fetching,
 * on 32- and 64-bit words (the accumulate family's native path uses only these; the others go
 * through the CAS loop, which is atomic against them, so a provider without one stays correct). */
static void query_native_ops(osc_iwarpx_fabric_t* f) {
  const enum fi_op ops[] = {FI_SUM, FI_BOR, FI_BAND, FI_BXOR};
  const enum fi_datatype types[] = {FI_UINT32, FI_UINT64};
  f->native_ops = 0;
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); ++i) {
    bool ok = true;
    for (size_t j = 0; ok && j < sizeof(types) / sizeof(types[0]); ++j) {
      struct fi_atomic_attr attr;
      ok = fi_query_atomic(f->domain, types[j], ops[i], &attr, 0) == 0 &&
           fi_query_atomic(f->domain, types[j], ops[i], &attr, FI_FETCH_ATOMIC) == 0;
    }
    if (ok) f->native_ops |= 1u << ops[i];
  }
  opal_output_verbose(1, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: native integer atomics: SUM %d BOR %d BAND %d BXOR %d",
                      (f->native_ops >> FI_SUM) & 1, (f->native_ops >> FI_BOR) & 1,
                      (f->native_ops >> FI_BAND) & 1, (f->native_ops >> FI_BXOR) & 1);
}

static int fabric_open(osc_iwarpx_fabric_t* f) {
  f->info =
      iwx_ofi_getinfo(iwx_ofi_hints(FI_RMA | FI_ATOMIC),
                      "fi_getinfo(prov_name iwarpx, FI_EP_RDM, FI_RMA|FI_ATOMIC)", log_fail, NULL);
  if (f->info == NULL) return OMPI_ERROR;
  const struct fi_info* info = f->info;
  const uint64_t mr_mode = (uint64_t)info->domain_attr->mr_mode;
  if ((mr_mode & FI_MR_LOCAL) != 0) {
    opal_output_verbose(1, mca_osc_iwarpx_component.output,
                        "osc:iwarpx: the provider wants FI_MR_LOCAL (mr_mode 0x%lx): not "
                        "supported",
                        (unsigned long)mr_mode);
    return OMPI_ERROR;
  }
  f->virt_addr = (mr_mode & FI_MR_VIRT_ADDR) != 0;
  f->max_msg = info->ep_attr->max_msg_size;
  if (f->max_msg == 0) f->max_msg = (size_t)1 << 30;
  f->inject_size = info->tx_attr != NULL ? info->tx_attr->inject_size : 0;

  struct iwx_ofi o = held(f);
  int ret = iwx_ofi_open_domain(&o, log_fail, NULL);
  if (ret == 0) ret = iwx_ofi_open_ep(&o, FI_CQ_FORMAT_CONTEXT, log_fail, NULL);
  take(f, &o);
  if (ret != 0) return OMPI_ERROR;
  f->addrlen = sizeof(f->addr);
  ret = fi_getname(&f->ep->fid, f->addr, &f->addrlen);
  if (ret != 0) return fail("fi_getname", ret);
  if (opal_hash_table_init(&f->av_cache, 256) != OPAL_SUCCESS) return OMPI_ERROR;
  query_native_ops(f);
  return OMPI_SUCCESS;
}

int osc_iwarpx_fabric_get(osc_iwarpx_fabric_t** out) {
  mca_osc_iwarpx_component_t* c = &mca_osc_iwarpx_component;
  /* Called from osc_query, which MPI serialises per window creation; windows are created
   * collectively, so two threads creating windows at once is already erroneous MPI. */
  if (c->fabric != NULL) {
    *out = c->fabric;
    return OMPI_SUCCESS;
  }
  if (c->fabric_failed) return OMPI_ERROR;
  osc_iwarpx_fabric_t* f = calloc(1, sizeof(*f));
  if (f == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  OBJ_CONSTRUCT(&f->lock, opal_mutex_t);
  OBJ_CONSTRUCT(&f->cq_lock, opal_mutex_t);
  OBJ_CONSTRUCT(&f->av_cache, opal_hash_table_t);
  if (fabric_open(f) != OMPI_SUCCESS) {
    fabric_destroy(f);
    c->fabric_failed = true;
    return OMPI_ERROR;
  }
  opal_output_verbose(1, c->output,
                      "osc:iwarpx: endpoint ready on provider %s (max_msg_size %zu, "
                      "inject_size %zu, %s remote addresses)",
                      f->info->fabric_attr->prov_name, f->max_msg, f->inject_size,
                      f->virt_addr ? "virtual" : "offset");
  c->fabric = f;
  *out = f;
  return OMPI_SUCCESS;
}

void osc_iwarpx_fabric_close(void) {
  mca_osc_iwarpx_component_t* c = &mca_osc_iwarpx_component;
  if (c->fabric == NULL) return;
  osc_iwarpx_progress_enable(false);
  osc_iwarpx_ops_close(); /* its MR belongs to the domain */
  fabric_destroy(c->fabric);
  c->fabric = NULL;
}

int osc_iwarpx_fabric_lookup(osc_iwarpx_fabric_t* f, ompi_proc_t* proc, const void* addr,
                             size_t addrlen, fi_addr_t* out) {
  const uint64_t key = (uint64_t)(uintptr_t)proc;
  void* value = NULL;
  int rc = OMPI_SUCCESS;
  opal_mutex_lock(&f->lock);
  if (opal_hash_table_get_value_uint64(&f->av_cache, key, &value) == OPAL_SUCCESS) {
    *out = (fi_addr_t)(uintptr_t)value;
  } else {
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    const int n = fi_av_insert(f->av, addr, 1, &fa, 0, NULL);
    if (n != 1 || fa == FI_ADDR_NOTAVAIL) {
      opal_output_verbose(1, mca_osc_iwarpx_component.output,
                          "osc:iwarpx: fi_av_insert of a peer address (%zu bytes) failed (%d)",
                          addrlen, n);
      rc = OMPI_ERROR;
    } else {
      (void)opal_hash_table_set_value_uint64(&f->av_cache, key, (void*)(uintptr_t)fa);
      *out = fa;
    }
  }
  opal_mutex_unlock(&f->lock);
  return rc;
}

/* Finishes one operation: counters, request, waiter flag. */
static void complete_op(osc_iwarpx_op_t* op, int status) {
  if (status != OMPI_SUCCESS) OPAL_THREAD_ADD_FETCH64(&mca_osc_iwarpx_component.errors, 1);
  if (op->request != NULL) {
    osc_iwarpx_request_t* r = op->request;
    if (status != OMPI_SUCCESS) r->super.req_status.MPI_ERROR = MPI_ERR_OTHER;
    if (OPAL_THREAD_ADD_FETCH32(&r->pending, -1) == 0) ompi_request_complete(&r->super, true);
  }
  if (op->done != NULL) *op->done = status == OMPI_SUCCESS ? 1 : -1;
  /* Counters last: a waiter that sees 0 has seen the request and flag updates. */
  OPAL_THREAD_ADD_FETCH64(&op->target->outstanding, -1);
  OPAL_THREAD_ADD_FETCH64(&op->module->outstanding, -1);
  free(op);
}

static int read_error(osc_iwarpx_fabric_t* f) {
  struct fi_cq_err_entry e = {0};
  if (fi_cq_readerr(f->cq, &e, 0) != 1) return 0;
  opal_output_verbose(1, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: operation failed: %s (%d, provider errno %d)",
                      fi_strerror(e.err), e.err, e.prov_errno);
  if (e.op_context != NULL) {
    complete_op(e.op_context, OMPI_ERROR);
  } else { /* an MPI_Put's injected fi_writemsg (no context): counted, its flush read fails too */
    OPAL_THREAD_ADD_FETCH64(&mca_osc_iwarpx_component.errors, 1);
  }
  return 1;
}

int osc_iwarpx_progress(void) {
  osc_iwarpx_fabric_t* f = mca_osc_iwarpx_component.fabric;
  if (f == NULL || opal_mutex_trylock(&f->cq_lock) != 0) return 0;
  int count = 0;
  struct fi_cq_entry entries[OSC_IWX_CQ_BATCH];
  for (;;) {
    ssize_t n = fi_cq_read(f->cq, entries, OSC_IWX_CQ_BATCH);
    if (n == -FI_EAVAIL) {
      const int e = read_error(f);
      if (e == 0) break;
      count += e;
      continue;
    }
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) complete_op(entries[i].op_context, OMPI_SUCCESS);
    count += (int)n;
    if (n < OSC_IWX_CQ_BATCH) break;
  }
  opal_mutex_unlock(&f->cq_lock);
  return count;
}

void osc_iwarpx_progress_enable(bool on) {
  osc_iwarpx_fabric_t* f = mca_osc_iwarpx_component.fabric;
  if (f == NULL || f->progress_registered == on) return;
  if (on) {
    (void)opal_progress_register(osc_iwarpx_progress);
  } else {
    (void)opal_progress_unregister(osc_iwarpx_progress);
  }
  f->progress_registered = on;
}
