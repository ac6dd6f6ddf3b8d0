/*
 * btl/iwarpx: the libfabric objects of the module (fabric, domain, AV, CQ, RDM endpoint),
 * its send-fragment / RDMA-op free lists and its posted receive buffers.
 */
// clang-format off
#include "opal_config.h" /* first, see btl_iwarpx.h */
// clang-format on

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "btl_iwarpx.h"
#include "btl_iwarpx_sctp.h"
#include "iwx_ofi.h"
#include "opal/util/output.h"

static void frag_construct(mca_btl_iwarpx_frag_t* frag) {
  frag->base.des_segments = &frag->segment;
  frag->base.des_segment_count = 1;
  frag->segment.seg_addr.pval = frag->base.super.ptr;
  frag->segment.seg_len = 0;
  frag->ctx.kind = IWX_CTX_SEND;
  frag->endpoint = NULL;
  frag->list = NULL;
  frag->capacity = 0;
}
OBJ_CLASS_INSTANCE(mca_btl_iwarpx_frag_t, mca_btl_base_descriptor_t, frag_construct, NULL);

static void rdma_op_construct(mca_btl_iwarpx_rdma_op_t* op) {
  op->ctx.kind = IWX_CTX_RDMA;
}
OBJ_CLASS_INSTANCE(mca_btl_iwarpx_rdma_op_t, opal_free_list_item_t, rdma_op_construct, NULL);

/* Free-list item init: remember list and capacity (the payload is item->ptr). */
static int frag_init(opal_free_list_item_t* item, void* ctx) {
  mca_btl_iwarpx_frag_t* frag = (mca_btl_iwarpx_frag_t*)item;
  opal_free_list_t* list = ctx;
  frag->list = list;
  frag->capacity = list->fl_payload_buffer_size;
  frag->segment.seg_addr.pval = item->ptr;
  return OPAL_SUCCESS;
}

static int fail(const char* call, int ret) {
  opal_output_verbose(1, mca_btl_iwarpx_component.output, "btl:iwarpx: %s failed: %s (%d)", call,
                      fi_strerror(ret < 0 ? -ret : ret), ret);
  return OPAL_ERROR;
}

static void log_fail(void* arg, const char* call, int ret) {
  (void)arg;
  (void)fail(call, ret);
}

/* The module keeps the libfabric objects in its own fields (used everywhere); iwx_ofi opens
 * and closes them. */
static struct iwx_ofi held(const mca_btl_iwarpx_module_t* m) {
  struct iwx_ofi o = {m->info, m->fabric, m->domain, m->av, m->cq, m->ep};
  return o;
}

static void take(mca_btl_iwarpx_module_t* m, const struct iwx_ofi* o) {
  m->info = o->info;
  m->fabric = o->fabric;
  m->domain = o->domain;
  m->av = o->av;
  m->cq = o->cq;
  m->ep = o->ep;
}

static struct fi_info* getinfo(bool mpi_threads) {
  struct fi_info* hints = iwx_ofi_hints(FI_MSG | FI_RMA | FI_ATOMIC);
  if (hints == NULL) return NULL;
  hints->domain_attr->cq_data_size = sizeof(mca_btl_base_tag_t);
  (void)mpi_threads; /* FI_THREAD_SAFE either way: progress and senders may run in parallel */
  const char* if_include = mca_btl_iwarpx_component.if_include;
  if (if_include != NULL && if_include[0] != '\0') {
    struct sockaddr_in* src = calloc(1, sizeof(*src)); /* fi_freeinfo frees it */
    if (src == NULL || mca_btl_iwarpx_pick_source(if_include, src) != OPAL_SUCCESS) {
      free(src);
      fi_freeinfo(hints);
      return NULL;
    }
    hints->addr_format = FI_SOCKADDR_IN;
    hints->src_addr = src;
    hints->src_addrlen = sizeof(*src);
  }
  return iwx_ofi_getinfo(hints, "fi_getinfo(prov_name iwarpx, FI_EP_RDM, FI_MSG|FI_RMA|FI_ATOMIC)",
                         log_fail, NULL);
}

int mca_btl_iwarpx_post_recv(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_recv_t* r) {
  /* The receive queue holds num_recvs (<= rx size) buffers: -FI_EAGAIN is transient. */
  /* On an SCTP association the buffer also holds the in-band header. */
  struct fid_ep* ep = r->endpoint != NULL ? r->endpoint->msg_ep : m->ep;
  struct fid_cq* cq = r->endpoint != NULL ? m->sctp->cq : m->cq;
  const size_t len =
      m->super.btl_max_send_size + (r->endpoint != NULL ? sizeof(mca_btl_iwarpx_sctp_hdr_t) : 0);
  for (int attempt = 0;; ++attempt) {
    ssize_t ret = fi_recv(ep, r->buf, len, NULL, FI_ADDR_UNSPEC, &r->ctx);
    if (ret == 0) return OPAL_SUCCESS;
    if (ret != -FI_EAGAIN || attempt == 1000000) return fail("fi_recv", (int)ret);
    (void)fi_cq_read(cq, NULL, 0); /* drives the provider, consumes nothing */
  }
}

int mca_btl_iwarpx_fabric_open(mca_btl_iwarpx_module_t* m, bool mpi_threads) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  m->info = NULL;
  m->fabric = NULL;
  m->domain = NULL;
  m->av = NULL;
  m->cq = NULL;
  m->ep = NULL;
  m->rcache = NULL;
  m->recvs = NULL;
  m->num_recvs = 0;
  m->repost = NULL;
  m->outstanding = 0;
  m->sends_pending = 0;
  m->error_cb = NULL;
  m->sctp = NULL;
  memset((void*)&m->stats, 0, sizeof(m->stats));
  OBJ_CONSTRUCT(&m->lock, opal_mutex_t);
  OBJ_CONSTRUCT(&m->endpoints, opal_hash_table_t);
  OBJ_CONSTRUCT(&m->eager_frags, opal_free_list_t);
  OBJ_CONSTRUCT(&m->max_frags, opal_free_list_t);
  OBJ_CONSTRUCT(&m->rdma_ops, opal_free_list_t);
  if (opal_hash_table_init(&m->endpoints, 256) != OPAL_SUCCESS) return OPAL_ERROR;

  m->info = getinfo(mpi_threads);
  if (m->info == NULL) return OPAL_ERROR;
  const struct fi_info* info = m->info;
  const uint64_t mr_mode = (uint64_t)info->domain_attr->mr_mode;
  if ((mr_mode & FI_MR_LOCAL) != 0 || info->domain_attr->cq_data_size < 1) {
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: the provider wants FI_MR_LOCAL or offers no CQ data "
                        "(mr_mode 0x%lx, cq_data_size %zu): not supported",
                        (unsigned long)mr_mode, info->domain_attr->cq_data_size);
    return OPAL_ERROR;
  }
  m->virt_addr = (mr_mode & FI_MR_VIRT_ADDR) != 0;

  struct iwx_ofi o = held(m);
  const int opened = iwx_ofi_open_domain(&o, log_fail, NULL);
  take(m, &o);
  if (opened != 0) return OPAL_ERROR;
  if (mca_btl_iwarpx_mr_open(m) != OPAL_SUCCESS) return OPAL_ERROR;
  const int enabled = iwx_ofi_open_ep(&o, FI_CQ_FORMAT_DATA, log_fail, NULL);
  take(m, &o);
  if (enabled != 0) return OPAL_ERROR;
  if (c->p2p == MCA_BTL_IWARPX_P2P_SCTP) {
    /* The wake-up's CQ data (MCA_BTL_IWARPX_SCTP_WAKE) needs 4 bytes. */
    if (m->info->domain_attr->cq_data_size < 4) {
      opal_output_verbose(1, c->output,
                          "btl:iwarpx: btl_iwarpx_p2p=sctp needs 4 bytes of CQ data on the RDM "
                          "endpoint (%zu offered): no module",
                          m->info->domain_attr->cq_data_size);
      return OPAL_ERROR;
    }
    if (mca_btl_iwarpx_sctp_open(m) != OPAL_SUCCESS) return OPAL_ERROR;
  }

  /* Send fragments: eager_limit and max_send_size payloads, grown on demand. */
  int rc = opal_free_list_init(&m->eager_frags, sizeof(mca_btl_iwarpx_frag_t),
                               (size_t)opal_cache_line_size, OBJ_CLASS(mca_btl_iwarpx_frag_t),
                               m->super.btl_eager_limit, (size_t)opal_cache_line_size, 32, -1, 32,
                               NULL, 0, NULL, frag_init, &m->eager_frags);
  if (rc == OPAL_SUCCESS) {
    rc = opal_free_list_init(&m->max_frags, sizeof(mca_btl_iwarpx_frag_t),
                             (size_t)opal_cache_line_size, OBJ_CLASS(mca_btl_iwarpx_frag_t),
                             m->super.btl_max_send_size, (size_t)opal_cache_line_size, 8, -1, 8,
                             NULL, 0, NULL, frag_init, &m->max_frags);
  }
  if (rc == OPAL_SUCCESS) {
    rc = opal_free_list_init(&m->rdma_ops, sizeof(mca_btl_iwarpx_rdma_op_t),
                             (size_t)opal_cache_line_size, OBJ_CLASS(mca_btl_iwarpx_rdma_op_t), 0,
                             0, 64, -1, 64, NULL, 0, NULL, NULL, NULL);
  }
  if (rc != OPAL_SUCCESS) return fail("opal_free_list_init", FI_ENOMEM);

  const int n = c->num_recvs > 0 ? c->num_recvs : 1;
  m->recvs = calloc((size_t)n, sizeof(*m->recvs));
  if (m->recvs == NULL) return fail("calloc(receives)", FI_ENOMEM);
  for (int i = 0; i < n; ++i) {
    m->recvs[i].ctx.kind = IWX_CTX_RECV;
    m->recvs[i].buf = malloc(m->super.btl_max_send_size);
    if (m->recvs[i].buf == NULL) return fail("malloc(receive buffer)", FI_ENOMEM);
    m->num_recvs = i + 1;
    if (mca_btl_iwarpx_post_recv(m, &m->recvs[i]) != OPAL_SUCCESS) return OPAL_ERROR;
  }
  return OPAL_SUCCESS;
}

void mca_btl_iwarpx_fabric_close(mca_btl_iwarpx_module_t* m) {
  /* Cached registrations first, while their domain is open. */
  mca_btl_iwarpx_mr_close(m);
  /* The SCTP side (its associations are closed with their endpoints, before this). */
  mca_btl_iwarpx_sctp_close(m);
  /* The endpoint first (iwx_ofi_close): it cancels the posted receives before their buffers go. */
  struct iwx_ofi o = held(m);
  iwx_ofi_close(&o, log_fail, NULL);
  take(m, &o);
  for (int i = 0; i < m->num_recvs; ++i) free(m->recvs[i].buf);
  free(m->recvs);
  m->recvs = NULL;
  m->num_recvs = 0;
  m->repost = NULL; /* receives of the closed endpoint, never to be posted again */
  OBJ_DESTRUCT(&m->rdma_ops);
  OBJ_DESTRUCT(&m->max_frags);
  OBJ_DESTRUCT(&m->eager_frags);
  OBJ_DESTRUCT(&m->endpoints);
  OBJ_DESTRUCT(&m->lock);
}
