/*
 * btl/iwarpx module: the template (function table and default limits the MCA parameters bind
 * to), add_procs/del_procs (modex lookup + fi_av_insert, every proc incl. the local one),
 * finalize, register_error and peer-loss reporting.
 */
// clang-format off
#include "opal_config.h" /* first, see btl_iwarpx.h */
// clang-format on

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include "btl_iwarpx.h"
#include "btl_iwarpx_sctp.h"
#include "opal/class/opal_bitmap.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

static int iwarpx_add_procs(mca_btl_base_module_t* btl, size_t nprocs, opal_proc_t** procs,
                            mca_btl_base_endpoint_t** peers, opal_bitmap_t* reachable);
static int iwarpx_del_procs(mca_btl_base_module_t* btl, size_t nprocs, opal_proc_t** procs,
                            mca_btl_base_endpoint_t** peers);
static int iwarpx_finalize(mca_btl_base_module_t* btl);
bool mca_btl_iwarpx_endpoint_next(mca_btl_iwarpx_module_t* m, void** node,
                                  mca_btl_iwarpx_endpoint_t** ep) {
  void* key = NULL;
  size_t key_size = 0;
  void* value = NULL;
  const int rc =
      *node == NULL
          ? opal_hash_table_get_first_key_ptr(&m->endpoints, &key, &key_size, &value, node)
          : opal_hash_table_get_next_key_ptr(&m->endpoints, &key, &key_size, &value, *node, node);
  if (rc != OPAL_SUCCESS) return false;
  *ep = value;
  return true;
}

static int iwarpx_register_error(mca_btl_base_module_t* btl,
                                 mca_btl_base_module_error_cb_fn_t cbfunc);
static void iwarpx_dump(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep, int verbose);

#define IWX_KIB ((size_t)1024)

/* How long del_procs/finalize wait for posted operations to complete: longer than the
 * provider's default RD timeout (FI_IWARPX_RD_TIMEOUT, 10 s), after which a silent peer's
 * operations fail with error completions (their callbacks run with an error status). */
#define IWX_DRAIN_SECONDS 15.0

mca_btl_iwarpx_module_t mca_btl_iwarpx_module_template = {
    .super =
        {
            .btl_component = &mca_btl_iwarpx_component.super,
            /* Eager: what the provider sends eagerly (FI_IWARPX_RDM_EAGER, 64 KiB, minus
             * its 32-byte RDM header); larger sends still work, by rendezvous inside the
             * provider. 16 KiB made ob1 use RDMA get from 16 KiB on (16.2 against 8.6 us
             * at 16 KiB, docs/PERFORMANCE.md). */
            .btl_eager_limit = 64 * IWX_KIB - 32,
            .btl_rndv_eager_limit = 64 * IWX_KIB - 32,
            .btl_max_send_size = 64 * IWX_KIB,
            .btl_rdma_pipeline_send_length = 64 * IWX_KIB,
            .btl_rdma_pipeline_frag_size = 4 * IWX_KIB * IWX_KIB,
            .btl_min_rdma_pipeline_size = 256 * IWX_KIB,
            .btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT, /* above tcp (LOW + 100) */
            .btl_latency = 10,
            .btl_bandwidth = 10000,
            .btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET |
                         MCA_BTL_FLAGS_ATOMIC_OPS | MCA_BTL_FLAGS_ATOMIC_FOPS |
                         MCA_BTL_FLAGS_RDMA_FLUSH,
            /* Narrowed in btl_init to what fi_query_atomic reports. */
            .btl_atomic_flags = MCA_BTL_ATOMIC_SUPPORTS_ADD | MCA_BTL_ATOMIC_SUPPORTS_AND |
                                MCA_BTL_ATOMIC_SUPPORTS_OR | MCA_BTL_ATOMIC_SUPPORTS_XOR |
                                MCA_BTL_ATOMIC_SUPPORTS_SWAP | MCA_BTL_ATOMIC_SUPPORTS_CSWAP |
                                MCA_BTL_ATOMIC_SUPPORTS_32BIT,
            .btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t),
            .btl_get_limit = 8 * IWX_KIB * IWX_KIB,
            .btl_put_limit = 8 * IWX_KIB * IWX_KIB,
            .btl_get_alignment = 0,
            .btl_put_alignment = 0,
            /* The provider needs no local registration (no FI_MR_LOCAL): callers may always
             * pass a NULL local handle. */
            .btl_get_local_registration_threshold = SIZE_MAX,
            .btl_put_local_registration_threshold = SIZE_MAX,

            .btl_add_procs = iwarpx_add_procs,
            .btl_del_procs = iwarpx_del_procs,
            .btl_register = NULL,
            .btl_finalize = iwarpx_finalize,
            .btl_alloc = mca_btl_iwarpx_alloc,
            .btl_free = mca_btl_iwarpx_free,
            .btl_prepare_src = mca_btl_iwarpx_prepare_src,
            .btl_send = mca_btl_iwarpx_send,
            .btl_sendi = mca_btl_iwarpx_sendi, /* NULL when the provider has no inject */
            .btl_put = mca_btl_iwarpx_put,
            .btl_get = mca_btl_iwarpx_get,
            .btl_dump = iwarpx_dump,
            .btl_atomic_op = mca_btl_iwarpx_atomic_op,
            .btl_atomic_fop = mca_btl_iwarpx_atomic_fop,
            .btl_atomic_cswap = mca_btl_iwarpx_atomic_cswap,
            .btl_register_mem = mca_btl_iwarpx_register_mem,
            .btl_deregister_mem = mca_btl_iwarpx_deregister_mem,
            .btl_mpool = NULL,
            .btl_register_error = iwarpx_register_error,
            .btl_ft_event = NULL,
            .btl_flush = mca_btl_iwarpx_flush,
        },
};

/* The endpoint of proc, created (modex lookup, fi_av_insert) on first use; NULL if the proc
 * published no iwarpx address. Caller holds m->lock. */
static mca_btl_iwarpx_endpoint_t* endpoint_for(mca_btl_iwarpx_module_t* m, opal_proc_t* proc) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  void* found = NULL;
  if (opal_hash_table_get_value_ptr(&m->endpoints, &proc, sizeof(proc), &found) == OPAL_SUCCESS) {
    return found;
  }
  mca_btl_iwarpx_modex_t* blob = NULL;
  size_t size = 0;
  int rc = OPAL_SUCCESS;
/* The macro stores an int32_t size through a size_t pointer. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
  OPAL_MODEX_RECV(rc, &c->super.btl_version, &proc->proc_name, (void**)&blob, &size);
#pragma GCC diagnostic pop
  if (rc != OPAL_SUCCESS || blob == NULL) {
    opal_output_verbose(1, c->output, "btl:iwarpx: no modex entry for %s (%d): unreachable",
                        OPAL_NAME_PRINT(proc->proc_name), rc);
    return NULL;
  }
  if (size != sizeof(*blob) || blob->magic != MCA_BTL_IWARPX_MODEX_MAGIC ||
      blob->version != MCA_BTL_IWARPX_MODEX_VERSION || blob->addrlen > MCA_BTL_IWARPX_MAX_ADDR ||
      blob->msg_addrlen > MCA_BTL_IWARPX_MAX_ADDR) {
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: modex entry of %s is not a version %u iwarpx address "
                        "(%zu bytes): unreachable",
                        OPAL_NAME_PRINT(proc->proc_name), MCA_BTL_IWARPX_MODEX_VERSION, size);
    free(blob);
    return NULL;
  }
  if (!OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags) &&
      mca_btl_iwarpx_addr_is_wildcard(blob->addr, blob->addrlen)) {
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: %s is on another node but published the wildcard address "
                        "(reachable from its own host only): unreachable; set "
                        "btl_iwarpx_if_include for runs across hosts",
                        OPAL_NAME_PRINT(proc->proc_name));
    free(blob);
    return NULL;
  }
  fi_addr_t addr = FI_ADDR_NOTAVAIL;
  int n = fi_av_insert(m->av, blob->addr, 1, &addr, 0, NULL);
  if (n != 1) {
    free(blob);
    opal_output_verbose(1, c->output, "btl:iwarpx: fi_av_insert for %s failed (%d)",
                        OPAL_NAME_PRINT(proc->proc_name), n);
    return NULL;
  }
  mca_btl_iwarpx_endpoint_t* ep = calloc(1, sizeof(*ep));
  if (ep == NULL) {
    free(blob);
    return NULL;
  }
  ep->proc = proc;
  ep->addr = addr;
  mca_btl_iwarpx_sctp_endpoint_init(m, ep, blob->msg_addr, blob->msg_addrlen);
  free(blob);
  (void)opal_hash_table_set_value_ptr(&m->endpoints, &proc, sizeof(proc), ep);
  opal_output_verbose(20, c->output, "btl:iwarpx: endpoint for %s is fi_addr %lu",
                      OPAL_NAME_PRINT(proc->proc_name), (unsigned long)addr);
  return ep;
}

static int iwarpx_add_procs(mca_btl_base_module_t* btl, size_t nprocs, opal_proc_t** procs,
                            mca_btl_base_endpoint_t** peers, opal_bitmap_t* reachable) {
  mca_btl_iwarpx_module_t* m = (mca_btl_iwarpx_module_t*)btl;
  OPAL_THREAD_LOCK(&m->lock);
  for (size_t i = 0; i < nprocs; ++i) {
    /* Every proc, the local one too: loopback through the provider (osc/rdma needs it). */
    peers[i] = endpoint_for(m, procs[i]);
    if (peers[i] != NULL && reachable != NULL) {
      (void)opal_bitmap_set_bit(reachable, (int)i);
    }
  }
  OPAL_THREAD_UNLOCK(&m->lock);
  return OPAL_SUCCESS;
}

/* An endpoint leaves only once every operation naming it has completed (its callback has
 * returned): completions and callbacks carry the endpoint pointer. The wait runs without
 * m->lock (callbacks may add procs). An endpoint still busy after IWX_DRAIN_SECONDS is taken
 * out of the table but left allocated (logged) rather than freed under a pending operation. */
static int iwarpx_del_procs(mca_btl_base_module_t* btl, size_t nprocs, opal_proc_t** procs,
                            mca_btl_base_endpoint_t** peers) {
  mca_btl_iwarpx_module_t* m = (mca_btl_iwarpx_module_t*)btl;
  for (size_t i = 0; i < nprocs; ++i) {
    void* found = NULL;
    opal_proc_t* proc = procs[i];
    OPAL_THREAD_LOCK(&m->lock);
    if (opal_hash_table_get_value_ptr(&m->endpoints, &proc, sizeof(proc), &found) == OPAL_SUCCESS) {
      (void)opal_hash_table_remove_value_ptr(&m->endpoints, &proc, sizeof(proc));
    } else {
      found = NULL;
    }
    OPAL_THREAD_UNLOCK(&m->lock);
    if (found == NULL) continue;
    if (peers != NULL) peers[i] = NULL;
    mca_btl_iwarpx_endpoint_t* ep = found;
    if (!mca_btl_iwarpx_drain(m, &ep->pending, 0, IWX_DRAIN_SECONDS)) {
      opal_output_verbose(1, mca_btl_iwarpx_component.output,
                          "btl:iwarpx: del_procs: %ld operations to %s still pending after %.0f "
                          "s; endpoint left allocated",
                          (long)ep->pending, OPAL_NAME_PRINT(proc->proc_name), IWX_DRAIN_SECONDS);
      continue;
    }
    mca_btl_iwarpx_sctp_endpoint_fini(m, ep);
    (void)fi_av_remove(m->av, &ep->addr, 1, 0);
    free(ep);
  }
  return OPAL_SUCCESS;
}

static int iwarpx_finalize(mca_btl_base_module_t* btl) {
  mca_btl_iwarpx_module_t* m = (mca_btl_iwarpx_module_t*)btl;
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  /* Every posted send and RDMA/atomic completes (callback included) before the module goes,
   * so no callback runs after finalize; after IWX_DRAIN_SECONDS the rest is cancelled by
   * closing the endpoint (logged: those callbacks never run). */
  const bool drained = mca_btl_iwarpx_drain(m, &m->outstanding, 0, IWX_DRAIN_SECONDS) &&
                       mca_btl_iwarpx_drain(m, &m->sends_pending, 0, IWX_DRAIN_SECONDS);
  if (!drained) {
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: finalize: %ld RDMA/atomics and %ld sends still pending after "
                        "%.0f s: cancelled by closing the endpoint, their callbacks will not run",
                        (long)m->outstanding, (long)m->sends_pending, IWX_DRAIN_SECONDS);
  }
  opal_output_verbose(
      1, c->output,
      "btl:iwarpx: finalize: sent %ld messages (%ld bytes), received %ld (%ld "
      "bytes), %ld puts, %ld gets, %ld atomics, %ld registrations (%ld fi_mr_reg), %ld "
      "sendi",
      (long)m->stats.sends, (long)m->stats.send_bytes, (long)m->stats.recvs,
      (long)m->stats.recv_bytes, (long)m->stats.puts, (long)m->stats.gets, (long)m->stats.atomics,
      (long)m->stats.registrations, (long)m->stats.mr_regs, (long)m->stats.sendi);
  opal_output_verbose(1, c->output,
                      "btl:iwarpx: finalize: refused by a busy provider (the PML queued and "
                      "retried them): %ld sends, %ld RDMA/atomics",
                      (long)m->stats.busy_sends, (long)m->stats.busy_rdma);
  if (m->sctp != NULL) {
    opal_output_verbose(
        1, c->output,
        "btl:iwarpx: finalize: sctp point-to-point: %ld associations, %ld of the "
        "%ld messages sent and %ld of the %ld received over SCTP, %ld wake-ups, %ld "
        "liveness probes",
        (long)m->stats.sctp_connections, (long)m->stats.sctp_sends, (long)m->stats.sends,
        (long)m->stats.sctp_recvs, (long)m->stats.recvs, (long)m->stats.sctp_wakes,
        (long)m->stats.sctp_probes);
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: finalize: sctp streams: %ld of the %ld messages over SCTP "
                        "on streams 1..%d",
                        (long)m->stats.sctp_stream_sends, (long)m->stats.sctp_sends,
                        m->sctp->streams - 1);
  }
  OPAL_THREAD_LOCK(&c->progress_lock);
  c->module = NULL;
  OPAL_THREAD_UNLOCK(&c->progress_lock);
  void* node = NULL;
  mca_btl_iwarpx_endpoint_t* ep = NULL;
  while (mca_btl_iwarpx_endpoint_next(m, &node, &ep)) {
    mca_btl_iwarpx_sctp_endpoint_fini(m, ep);
    free(ep);
  }
  mca_btl_iwarpx_fabric_close(m);
  free(m);
  return OPAL_SUCCESS;
}

static int iwarpx_register_error(mca_btl_base_module_t* btl,
                                 mca_btl_base_module_error_cb_fn_t cbfunc) {
  ((mca_btl_iwarpx_module_t*)btl)->error_cb = cbfunc;
  return OPAL_SUCCESS;
}

static void iwarpx_dump(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep, int verbose) {
  mca_btl_iwarpx_module_t* m = (mca_btl_iwarpx_module_t*)btl;
  opal_output_verbose(verbose, mca_btl_iwarpx_component.output,
                      "btl:iwarpx: endpoint fi_addr %lu, %ld RDMA/atomics outstanding",
                      ep != NULL ? (unsigned long)ep->addr : 0UL, (long)m->outstanding);
}

void mca_btl_iwarpx_peer_error(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                               int fi_err) {
  const bool lost = fi_err == FI_ECONNRESET || fi_err == FI_ECONNABORTED ||
                    fi_err == FI_ECONNREFUSED || fi_err == FI_ETIMEDOUT ||
                    fi_err == FI_EHOSTUNREACH || fi_err == FI_ENOTCONN || fi_err == FI_EIO;
  opal_output_verbose(1, mca_btl_iwarpx_component.output,
                      "btl:iwarpx: completion error %s (%d) for %s", fi_strerror(fi_err), fi_err,
                      ep != NULL ? OPAL_NAME_PRINT(ep->proc->proc_name) : "an unknown peer");
  if (lost && m->error_cb != NULL) {
    char info[] = "iwarpx: peer unreachable";
    m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, ep != NULL ? ep->proc : NULL, info);
  }
}
